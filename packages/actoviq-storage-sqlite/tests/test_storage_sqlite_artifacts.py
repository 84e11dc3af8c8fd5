"""Artifact bytes on SQL: the conformance suite (SQLite and PostgreSQL blob tables, a directory
beside SQLite), killed processes between the bytes and the record, bounded memory."""

from __future__ import annotations

import asyncio
import hashlib
import os
import signal
import sys
import time
import tracemalloc
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from artifacts_worker import new_bytes, old_bytes
from sqlalchemy import delete, insert, select, update

from actoviq.runtime.stores import ArtifactStore, DirectoryArtifactBlobStore
from actoviq.runtime.stores.conformance import ARTIFACT_CHECKS, ArtifactBundle, ArtifactCheck
from actoviq.storage.sqlite import SqliteStorage, default_blob_directory
from actoviq.storage.sqlite._tables import artifact_blobs, artifact_chunks

WORKER = Path(__file__).resolve().parent / "artifacts_worker.py"
POSTGRES_URL = os.environ.get("ACTOVIQ_TEST_POSTGRES_URL")


def asyncpg_url(url: str) -> str:
    """Accept a plain ``postgresql://`` DSN and point SQLAlchemy at asyncpg."""
    if "+" in url.split(":")[0]:
        return url
    return url.replace("postgresql://", "postgresql+asyncpg://", 1)


HOUR_MS = 3_600_000

BACKENDS = [
    "sqlite-table",
    "sqlite-directory",
    pytest.param(
        "postgres-table",
        marks=[
            pytest.mark.postgres,
            pytest.mark.skipif(not POSTGRES_URL, reason="ACTOVIQ_TEST_POSTGRES_URL is not set"),
        ],
    ),
]


def _target(backend: str, tmp_path: Path) -> str:
    if backend.startswith("postgres"):
        return asyncpg_url(POSTGRES_URL or "")
    return str(tmp_path / "db" / "actoviq.db")


async def _corrupt_table(storage: SqliteStorage, sha: str, data: bytes) -> None:
    """Replace a blob's chunks with ``data`` (its row, size and digest stay)."""

    def work(conn: object) -> None:
        from sqlalchemy.engine import Connection

        assert isinstance(conn, Connection)
        seq = conn.execute(
            select(artifact_blobs.c.blob_seq).where(artifact_blobs.c.sha256 == sha)
        ).scalar_one()
        conn.execute(delete(artifact_chunks).where(artifact_chunks.c.blob_seq == seq))
        conn.execute(insert(artifact_chunks).values(blob_seq=seq, chunk_index=0, data=data))
        conn.execute(
            update(artifact_blobs).where(artifact_blobs.c.blob_seq == seq).values(chunk_count=1)
        )

    await storage.database.run_write(work)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("check", ARTIFACT_CHECKS, ids=lambda c: c.name)
async def test_artifact_conformance(backend: str, check: ArtifactCheck, tmp_path: Path) -> None:
    blobs = str(tmp_path / "blobs") if backend == "sqlite-directory" else "database"
    async with await SqliteStorage.open(
        _target(backend, tmp_path), artifact_blobs=blobs
    ) as storage:
        directory = storage.blobs if isinstance(storage.blobs, DirectoryArtifactBlobStore) else None

        async def corrupt(sha: str, data: bytes) -> None:
            if directory is not None:
                directory.corrupt(sha, data)
            else:
                await _corrupt_table(storage, sha, data)

        bundle = ArtifactBundle(metadata=storage.artifacts, blobs=storage.blobs, corrupt=corrupt)
        await check.run(bundle, uuid.uuid4().hex)


async def test_default_blob_places(tmp_path: Path) -> None:
    db = tmp_path / "state" / "actoviq.db"
    async with await SqliteStorage.open(db) as storage:
        assert isinstance(storage.blobs, DirectoryArtifactBlobStore)
        assert (
            storage.blobs.root
            == default_blob_directory(db)
            == tmp_path / "state" / "actoviq.db-artifacts"
        )
        record = await storage.artifact_store.put(
            tenant_id="t", artifact_id="a", expected_revision=None, media_type="a/b", data=b"x"
        )
        assert storage.blobs.path_of(record.sha256).read_bytes() == b"x"
    async with await SqliteStorage.open(":memory:") as storage:
        assert not isinstance(storage.blobs, DirectoryArtifactBlobStore)
        await storage.artifact_store.put(
            tenant_id="t", artifact_id="a", expected_revision=None, media_type="a/b", data=b"y"
        )
        assert (await storage.artifact_store.read(tenant_id="t", artifact_id="a")).data == b"y"
    with pytest.raises(Exception, match="needs a database file"):
        await SqliteStorage.open(":memory:", artifact_blobs="directory")


async def _seed(target: str, blobs: str, nonce: str) -> str:
    async with await SqliteStorage.open(target, artifact_blobs=blobs) as storage:
        record = await storage.artifact_store.put(
            tenant_id=nonce,
            artifact_id="report",
            expected_revision=None,
            media_type="a/b",
            data=old_bytes(nonce),
        )
        return record.sha256


async def _kill_worker(target: str, blobs: str, mode: str, nonce: str) -> str:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(WORKER),
        target,
        blobs,
        mode,
        nonce,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(120):
        out, err = await process.communicate()
    assert process.returncode == -signal.SIGKILL, (out, err)
    return out.decode()


class _Later:
    def __call__(self) -> int:
        return time.time_ns() // 1_000_000 + 2 * HOUR_MS


CRASH_BACKENDS = [
    "sqlite-table",
    "sqlite-directory",
    pytest.param(
        "postgres-table",
        marks=[
            pytest.mark.postgres,
            pytest.mark.skipif(not POSTGRES_URL, reason="ACTOVIQ_TEST_POSTGRES_URL is not set"),
        ],
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize("backend", CRASH_BACKENDS)
@pytest.mark.parametrize("mode", ["before-record", "in-record", "mid-bytes"])
async def test_killed_put_leaves_the_old_artifact_whole(
    backend: str, mode: str, tmp_path: Path
) -> None:
    target = _target(backend, tmp_path)
    blobs = str(tmp_path / "blobs") if backend == "sqlite-directory" else "database"
    nonce = uuid.uuid4().hex
    old_sha = await _seed(target, blobs, nonce)
    out = await _kill_worker(target, blobs, mode, nonce)
    assert "survived" not in out
    old, new = old_bytes(nonce), new_bytes(nonce)
    new_sha = hashlib.sha256(new).hexdigest()
    async with await SqliteStorage.open(target, artifact_blobs=blobs) as storage:
        store = storage.artifact_store
        # No lost artifact: the record is the committed one and its bytes are whole.
        record = await store.get(tenant_id=nonce, artifact_id="report")
        assert record is not None
        assert (record.revision, record.sha256) == (0, old_sha)
        assert (await store.read(tenant_id=nonce, artifact_id="report")).data == old
        # No dangling reference: nothing references the new bytes, complete or not.
        assert await storage.artifacts.referenced_sha256(sha256s=[new_sha]) == frozenset()
        stored_new = await storage.blobs.stat(new_sha)
        if mode == "mid-bytes":
            assert "bytes-partial" in out
            assert stored_new is None  # a partial blob is never visible under a digest
        else:
            assert stored_new is not None  # the durable, unreferenced bytes of the dead put
        # Collection within the grace period keeps everything; later it removes the leftovers.
        await store.collect_garbage()
        assert await storage.blobs.stat(old_sha) is not None
        later = ArtifactStore(storage.artifacts, storage.blobs, clock=_Later())
        report = await later.collect_garbage()
        assert await storage.blobs.stat(new_sha) is None
        assert await storage.blobs.stat(old_sha) is not None
        if mode == "mid-bytes":
            assert report.incomplete_purged >= 1
        await store.verify(tenant_id=nonce, artifact_id="report")
        # The artifact can be updated as if nothing happened.
        updated = await store.put(
            tenant_id=nonce, artifact_id="report", expected_revision=0, media_type="a/b", data=new
        )
        assert (updated.revision, updated.sha256) == (1, new_sha)
        assert (await store.read(tenant_id=nonce, artifact_id="report")).data == new
    if backend == "sqlite-directory":
        staging = tmp_path / "blobs" / "staging"
        assert not staging.exists() or list(staging.iterdir()) == []


async def _pattern(total: int, chunk: int) -> AsyncIterator[bytes]:
    block = bytes(range(256)) * (chunk // 256)
    sent = 0
    while sent < total:
        piece = block[: min(chunk, total - sent)]
        sent += len(piece)
        yield piece


async def test_streaming_48_mib_through_the_sqlite_blob_table_holds_a_few_chunks(
    tmp_path: Path,
) -> None:
    """Peak Python allocations stay a few chunks wide (``benchmarks/bench_artifacts.py``
    measures 200 MiB, with the resident set size, in fresh processes)."""
    total, chunk = 48 << 20, 1 << 20
    async with await SqliteStorage.open(tmp_path / "big.db", artifact_blobs="database") as storage:
        store = storage.artifact_store
        tracemalloc.start()
        try:
            record = await store.put(
                tenant_id="t",
                artifact_id="big",
                expected_revision=None,
                media_type="a/b",
                data=_pattern(total, chunk),
            )
            _, put_peak = tracemalloc.get_traced_memory()
            tracemalloc.reset_peak()
            size = 0
            async with store.open(tenant_id="t", artifact_id="big") as reader:
                async for piece in reader:
                    size += len(piece)
            _, read_peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert record.size == size == total
    assert put_peak < 8 * chunk, put_peak
    assert read_peak < 8 * chunk, read_peak
