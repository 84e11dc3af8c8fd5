"""A worker process that dies in the middle of an artifact put (issue 17 §1).

Usage: ``python artifacts_worker.py TARGET BLOBS MODE NONCE`` where ``TARGET`` is a SQLite file or
a PostgreSQL URL, ``BLOBS`` is ``database`` or a folder path, ``NONCE`` names the tenant and goes
into the bytes (so runs sharing a PostgreSQL database never share content), and ``MODE`` is:

* ``before-record``: store the new bytes, then SIGKILL itself when the record is about to be
  written (between the blob write and the metadata commit);
* ``in-record``: SIGKILL itself inside the metadata transaction, after the UPDATE ran and before
  COMMIT;
* ``mid-bytes``: SIGKILL itself while the bytes stream in (a partial blob).

Each mode updates artifact ``<nonce>/report`` (revision 0 → 1) with :func:`new_bytes`; the test
checks that the process died by SIGKILL and that revision 0 with :func:`old_bytes` is whole.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from typing import Any, cast

from sqlalchemy import event

from actoviq.runtime.stores import ArtifactMetadataStore, ArtifactStore
from actoviq.storage.sqlite import SqliteStorage


def old_bytes(nonce: str) -> bytes:
    """Revision 0's content."""
    return nonce.encode() + b"old report " * 50_000


def new_bytes(nonce: str) -> bytes:
    """The content the dying put stores (3.3 MB: several stored chunks before mid-bytes dies)."""
    return nonce.encode() + b"new report " * 300_000


def _die() -> None:
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


class _DieOnPut:
    """An artifact metadata store that dies instead of writing a record."""

    def __init__(self, inner: ArtifactMetadataStore) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def put(self, **_: Any) -> Any:
        print("bytes-stored", flush=True)
        _die()


async def _chunks(data: bytes) -> AsyncIterator[bytes]:
    for index in range(0, len(data), 65_536):
        if index >= 40 * 65_536:
            print("bytes-partial", flush=True)
            _die()
        yield data[index : index + 65_536]


async def main(target: str, blobs: str, mode: str, nonce: str) -> None:
    storage = await SqliteStorage.open(target, artifact_blobs=blobs)
    store = storage.artifact_store
    if mode == "before-record":
        store = ArtifactStore(
            cast(ArtifactMetadataStore, _DieOnPut(storage.artifacts)), storage.blobs
        )
        await store.put(
            tenant_id=nonce,
            artifact_id="report",
            expected_revision=0,
            media_type="a/b",
            data=new_bytes(nonce),
        )
    elif mode == "in-record":
        engine = storage.database.engine.sync_engine

        @event.listens_for(engine, "after_cursor_execute")
        def _after(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
            if statement.lstrip().upper().startswith("UPDATE STORAGE_V2_ARTIFACTS "):
                print("record-updated", flush=True)
                _die()

        await store.put(
            tenant_id=nonce,
            artifact_id="report",
            expected_revision=0,
            media_type="a/b",
            data=new_bytes(nonce),
        )
    elif mode == "mid-bytes":
        await store.put(
            tenant_id=nonce,
            artifact_id="report",
            expected_revision=0,
            media_type="a/b",
            data=_chunks(new_bytes(nonce)),
        )
    print("survived", flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
