"""Artifact bytes: stream a large file in and out, verified, and collect what nothing references.

Records live in SQLite; the bytes live as content-addressed files in ``<db>-artifacts/`` beside
it (pass ``artifact_blobs="database"`` to keep them in the database instead). The put streams a
20 MiB source in 1 MiB chunks, the read streams it back and is checked against the sha256 before
the stream ends, a corrupted blob is refused with a typed error, and garbage collection removes the
bytes of a replaced revision once its grace period has passed. No model and no network.
"""

from __future__ import annotations

import asyncio
import hashlib
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

from actoviq.runtime import ArtifactIntegrityError, ArtifactStore, DirectoryArtifactBlobStore
from actoviq.storage.sqlite import SqliteStorage

MIB = 1 << 20


async def report_chunks(total_mib: int, seed: bytes) -> AsyncIterator[bytes]:
    """A source that produces its bytes one chunk at a time (never the whole file)."""
    block = hashlib.sha256(seed).digest() * (MIB // 32)
    for _ in range(total_mib):
        yield block


async def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        async with await SqliteStorage.open(Path(folder) / "actoviq.db") as storage:
            store = storage.artifact_store
            first = await store.put(
                tenant_id="acme",
                artifact_id="quarterly-report",
                expected_revision=None,
                media_type="application/octet-stream",
                data=report_chunks(20, b"v1"),
                metadata={"quarter": "Q3"},
            )
            size = first.size // MIB
            print(f"stored revision {first.revision}: {size} MiB, sha256 {first.sha256[:12]}…")

            digest = hashlib.sha256()
            async with store.open(tenant_id="acme", artifact_id="quarterly-report") as reader:
                async for chunk in reader:
                    digest.update(chunk)
            print(f"streamed back and verified: {digest.hexdigest() == first.sha256}")

            second = await store.put(
                tenant_id="acme",
                artifact_id="quarterly-report",
                expected_revision=first.revision,
                media_type="application/octet-stream",
                data=report_chunks(2, b"v2"),
            )
            print(f"revision {second.revision} replaces it ({second.size // MIB} MiB)")

            assert isinstance(storage.blobs, DirectoryArtifactBlobStore)
            storage.blobs.corrupt(second.sha256, b"\0" * second.size)  # a disk going bad
            try:
                await store.verify(tenant_id="acme", artifact_id="quarterly-report")
            except ArtifactIntegrityError as error:
                print(f"corruption refused: {error.code}")
            await storage.blobs.delete(second.sha256)  # the operator drops the bad blob...
            await store.put(  # ...and puts the content again
                tenant_id="acme",
                artifact_id="quarterly-report",
                expected_revision=second.revision,
                media_type="application/octet-stream",
                data=report_chunks(2, b"v2"),
            )

            # Revision 0's bytes are referenced by nothing now; they go once the grace period
            # (an hour by default, so puts in flight keep their bytes) has passed.
            later = ArtifactStore(
                storage.artifacts,
                storage.blobs,
                clock=lambda: time.time_ns() // 1_000_000 + 2 * 3_600_000,
            )
            report = await later.collect_garbage()
            print(f"garbage collection freed {report.bytes_freed // MIB} MiB")
            assert await storage.blobs.stat(first.sha256) is None


if __name__ == "__main__":
    asyncio.run(main())
