"""Artifact bytes: the conformance suite over the in-memory and directory blob stores, and the
directory store's own promises (atomic files, cleanup, bounded memory)."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import os
import stat
import tracemalloc
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actoviq.runtime import (
    ArtifactIntegrityError,
    ArtifactStore,
    DirectoryArtifactBlobStore,
    InMemoryArtifactBlobStore,
    InMemoryArtifactMetadataStore,
    StorageDataError,
    StorageUnavailableError,
)
from actoviq.runtime.stores import ArtifactBlobStore, byte_chunks
from actoviq.runtime.stores.conformance import ARTIFACT_CHECKS, ArtifactBundle, ArtifactCheck


def _bundle(kind: str, root: Path) -> ArtifactBundle:
    if kind == "memory":
        memory = InMemoryArtifactBlobStore()
        return ArtifactBundle(
            metadata=InMemoryArtifactMetadataStore(), blobs=memory, corrupt=memory.corrupt
        )
    directory = DirectoryArtifactBlobStore(root / "artifacts")
    return ArtifactBundle(
        metadata=InMemoryArtifactMetadataStore(), blobs=directory, corrupt=directory.corrupt
    )


@pytest.mark.parametrize("kind", ["memory", "directory"])
@pytest.mark.parametrize("check", ARTIFACT_CHECKS, ids=lambda c: c.name)
async def test_artifact_conformance(kind: str, check: ArtifactCheck, tmp_path: Path) -> None:
    await check.run(_bundle(kind, tmp_path), uuid.uuid4().hex)


def test_artifact_suite_is_not_empty() -> None:
    assert len(ARTIFACT_CHECKS) >= 12
    assert len({c.name for c in ARTIFACT_CHECKS}) == len(ARTIFACT_CHECKS)


def test_stores_satisfy_the_protocol(tmp_path: Path) -> None:
    assert isinstance(InMemoryArtifactBlobStore(), ArtifactBlobStore)
    assert isinstance(DirectoryArtifactBlobStore(tmp_path), ArtifactBlobStore)


async def _pattern(total: int, chunk: int) -> AsyncIterator[bytes]:
    """``total`` bytes of a repeating pattern, produced one chunk at a time (never held whole)."""
    block = bytes(range(256)) * (chunk // 256)
    sent = 0
    while sent < total:
        piece = block[: min(chunk, total - sent)]
        sent += len(piece)
        yield piece


def _pattern_sha(total: int, chunk: int) -> str:
    digest = hashlib.sha256()
    block = bytes(range(256)) * (chunk // 256)
    sent = 0
    while sent < total:
        piece = block[: min(chunk, total - sent)]
        sent += len(piece)
        digest.update(piece)
    return digest.hexdigest()


async def test_directory_blob_is_one_private_file_named_by_its_digest(tmp_path: Path) -> None:
    blobs = DirectoryArtifactBlobStore(tmp_path / "a")
    info = await blobs.write(_pattern(3 << 20, 1 << 16))
    assert info.sha256 == _pattern_sha(3 << 20, 1 << 16)
    path = tmp_path / "a" / "blobs" / info.sha256[:2] / info.sha256
    assert path == blobs.path_of(info.sha256)
    assert path.stat().st_size == 3 << 20
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert list((tmp_path / "a" / "staging").iterdir()) == []


async def test_directory_write_that_fails_leaves_no_file(tmp_path: Path) -> None:
    blobs = DirectoryArtifactBlobStore(tmp_path)

    async def broken() -> AsyncIterator[bytes]:
        yield b"x" * (2 << 20)
        raise OSError(5, "source went away")

    with pytest.raises(OSError, match="source went away"):
        await blobs.write(broken())
    assert list((tmp_path / "staging").iterdir()) == []
    assert not (tmp_path / "blobs").exists() or list((tmp_path / "blobs").rglob("*")) == []


async def test_directory_write_cancelled_leaves_no_file(tmp_path: Path) -> None:
    blobs = DirectoryArtifactBlobStore(tmp_path)
    started = asyncio.Event()
    never = asyncio.Event()

    async def stalled() -> AsyncIterator[bytes]:
        yield b"y" * (3 << 20)
        started.set()
        await never.wait()
        yield b"z"

    task = asyncio.create_task(blobs.write(stalled()))
    async with asyncio.timeout(10):
        await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert list((tmp_path / "staging").iterdir()) == []


async def test_purge_removes_a_crashed_write_and_restores_an_interrupted_delete(
    tmp_path: Path,
) -> None:
    blobs = DirectoryArtifactBlobStore(tmp_path)
    kept = await blobs.write(byte_chunks(b"keep me"))
    # What a process killed mid-write leaves behind:
    (tmp_path / "staging" / "dead.part").write_bytes(b"half a blob")
    # What a collection killed between its two renames leaves behind:
    (tmp_path / "trash").mkdir()
    os.replace(blobs.path_of(kept.sha256), tmp_path / "trash" / kept.sha256)
    now_ms = 10**15
    assert await blobs.purge_incomplete(older_than_ms=now_ms) == 1
    assert list((tmp_path / "staging").iterdir()) == []
    assert blobs.path_of(kept.sha256).read_bytes() == b"keep me"
    assert list((tmp_path / "trash").iterdir()) == []


async def test_reader_finds_a_blob_in_the_trash_during_a_collection(tmp_path: Path) -> None:
    blobs = DirectoryArtifactBlobStore(tmp_path)
    info = await blobs.write(byte_chunks(b"in transit"))
    (tmp_path / "trash").mkdir()
    os.replace(blobs.path_of(info.sha256), tmp_path / "trash" / info.sha256)
    async with blobs.open(info.sha256, size=info.size) as chunks:
        assert b"".join([chunk async for chunk in chunks]) == b"in transit"


async def test_directory_delete_is_conditional_on_the_last_touch(tmp_path: Path) -> None:
    blobs = DirectoryArtifactBlobStore(tmp_path)
    info = await blobs.write(byte_chunks(b"fresh"))
    assert await blobs.delete(info.sha256, touched_before_ms=info.touched_at_ms) is False
    assert await blobs.delete(info.sha256, touched_before_ms=info.touched_at_ms + 1) is True
    assert await blobs.stat(info.sha256) is None
    assert await blobs.delete(info.sha256) is False


async def test_directory_unwritable_root_is_unavailable(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_bytes(b"")
    blobs = DirectoryArtifactBlobStore(target / "sub")
    with pytest.raises(StorageUnavailableError):
        await blobs.write(byte_chunks(b"x"))


async def test_directory_corruption_detected_with_the_right_size(tmp_path: Path) -> None:
    store = ArtifactStore(InMemoryArtifactMetadataStore(), DirectoryArtifactBlobStore(tmp_path))
    record = await store.put(
        tenant_id="t", artifact_id="a", expected_revision=None, media_type="a/b", data=b"abc"
    )
    path = tmp_path / "blobs" / record.sha256[:2] / record.sha256
    path.write_bytes(b"abd")
    with pytest.raises(ArtifactIntegrityError) as caught:
        await store.read(tenant_id="t", artifact_id="a")
    assert caught.value.actual_sha256 == hashlib.sha256(b"abd").hexdigest()


async def test_put_reads_a_file_path_in_chunks(tmp_path: Path) -> None:
    source = tmp_path / "report.bin"
    source.write_bytes(os.urandom(300_000))
    store = ArtifactStore(
        InMemoryArtifactMetadataStore(), DirectoryArtifactBlobStore(tmp_path / "s"), chunk_size=4096
    )
    record = await store.put(
        tenant_id="t", artifact_id="f", expected_revision=None, media_type="a/b", data=source
    )
    assert record.sha256 == hashlib.sha256(source.read_bytes()).hexdigest()
    with pytest.raises(StorageDataError, match="Cannot read artifact data"):
        await store.put(
            tenant_id="t",
            artifact_id="g",
            expected_revision=None,
            media_type="a/b",
            data=tmp_path / "missing",
        )


async def test_byte_chunks_refuses_non_bytes() -> None:
    async def text() -> AsyncIterator[str]:
        yield "nope"

    with pytest.raises(StorageDataError, match="chunks must be bytes"):
        async for _ in byte_chunks(text()):  # pyright: ignore[reportArgumentType]
            pass
    with pytest.raises(StorageDataError, match="not int"):
        async for _ in byte_chunks(5):  # pyright: ignore[reportArgumentType]
            pass


@settings(max_examples=40, deadline=None)
@given(
    data=st.binary(max_size=5000),
    cuts=st.lists(st.integers(min_value=0, max_value=5000), max_size=8),
    read_chunk=st.integers(min_value=1, max_value=700),
)
def test_any_chunking_stores_and_reads_the_same_bytes(
    data: bytes, cuts: list[int], read_chunk: int
) -> None:
    points = sorted({0, len(data), *(min(cut, len(data)) for cut in cuts)})
    parts = [data[a:b] for a, b in itertools.pairwise(points)]

    async def scenario() -> None:
        store = ArtifactStore(InMemoryArtifactMetadataStore(), InMemoryArtifactBlobStore())

        async def chunks() -> AsyncIterator[bytes]:
            for part in parts:
                yield part

        record = await store.put(
            tenant_id="t", artifact_id="p", expected_revision=None, media_type="a/b", data=chunks()
        )
        assert record.sha256 == hashlib.sha256(data).hexdigest()
        async with store.open(tenant_id="t", artifact_id="p", chunk_size=read_chunk) as reader:
            received = [chunk async for chunk in reader]
        assert all(0 < len(chunk) <= read_chunk for chunk in received)
        assert b"".join(received) == data

    asyncio.run(scenario())


async def test_streaming_64_mib_through_the_directory_store_holds_a_few_chunks(
    tmp_path: Path,
) -> None:
    """Peak Python allocations stay a few chunks wide, whatever the artifact size (64 MiB here;
    ``benchmarks/bench_artifacts.py`` measures 200 MiB in a fresh process)."""
    total, chunk = 64 << 20, 1 << 20
    store = ArtifactStore(
        InMemoryArtifactMetadataStore(), DirectoryArtifactBlobStore(tmp_path, fsync=False)
    )
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
        digest = hashlib.sha256()
        async with store.open(tenant_id="t", artifact_id="big") as reader:
            async for piece in reader:
                digest.update(piece)
        _, read_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert record.size == total
    assert digest.hexdigest() == _pattern_sha(total, chunk) == record.sha256
    assert put_peak < 8 * chunk, put_peak
    assert read_peak < 8 * chunk, read_peak
