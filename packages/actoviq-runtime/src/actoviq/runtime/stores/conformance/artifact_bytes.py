"""Conformance checks of artifact bytes: a metadata store and a blob store working together.

A backend's tests build an :class:`ArtifactBundle` and parametrise over :data:`ARTIFACT_CHECKS`::

    @pytest.mark.parametrize("check", ARTIFACT_CHECKS, ids=lambda c: c.name)
    async def test_artifact_bytes(bundle: ArtifactBundle, check: ArtifactCheck) -> None:
        await check.run(bundle, uuid.uuid4().hex)

Checks share one database (PostgreSQL) through their namespace, which prefixes tenants and goes
into every byte string (so no two checks store the same content). Garbage collection is global,
so its checks assert on their own blobs only.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import attrs

from actoviq.runtime.stores.artifacts import ArtifactStore
from actoviq.runtime.stores.blobs import ArtifactBlobStore
from actoviq.runtime.stores.conformance._base import expect_error
from actoviq.runtime.stores.errors import (
    ArtifactBlobMissingError,
    ArtifactIntegrityError,
    ArtifactTooLargeError,
    StorageConflictError,
    StorageDataError,
    StorageNotFoundError,
)
from actoviq.runtime.stores.protocols import ArtifactMetadataStore

__all__ = ["ARTIFACT_CHECKS", "ArtifactBundle", "ArtifactCheck"]

_HOUR_MS = 3_600_000


@attrs.frozen(kw_only=True)
class ArtifactBundle:
    """One backend pairing, as handed to every check.

    Attributes:
        metadata: the record store.
        blobs: the byte store.
        corrupt: replaces the bytes stored under a digest (keeping the digest), like a disk or a
            hand edit would; may be a coroutine function.
    """

    metadata: ArtifactMetadataStore
    blobs: ArtifactBlobStore
    corrupt: Callable[[str, bytes], Awaitable[None] | None]


@attrs.frozen
class ArtifactCheck:
    """A named check: ``await check.run(bundle, namespace)`` raises AssertionError on failure."""

    name: str
    run: Callable[[ArtifactBundle, str], Awaitable[None]]


ARTIFACT_CHECKS_LIST: list[ArtifactCheck] = []


def _register(fn: Callable[[ArtifactBundle, str], Awaitable[None]]) -> None:
    ARTIFACT_CHECKS_LIST.append(ArtifactCheck(fn.__name__.removeprefix("check_"), fn))


class _Clock:
    """Wall-clock milliseconds plus an offset the check moves forward."""

    def __init__(self) -> None:
        self.offset = 0

    def __call__(self) -> int:
        return time.time_ns() // 1_000_000 + self.offset


def _store(
    b: ArtifactBundle,
    clock: _Clock | None = None,
    *,
    chunk_size: int = 1 << 20,
    max_artifact_bytes: int = 1 << 30,
) -> ArtifactStore:
    return ArtifactStore(
        b.metadata,
        b.blobs,
        clock=clock or _Clock(),
        chunk_size=chunk_size,
        max_artifact_bytes=max_artifact_bytes,
    )


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


async def _chunks(parts: list[bytes]) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


async def _corrupt(b: ArtifactBundle, sha: str, data: bytes) -> None:
    outcome = b.corrupt(sha, data)
    if outcome is not None:
        await outcome


@_register
async def check_artifact_round_trip(b: ArtifactBundle, ns: str) -> None:
    store = _store(b)
    record = await store.put(
        tenant_id=ns,
        artifact_id="a",
        expected_revision=None,
        media_type="application/octet-stream",
        data=bytes([0, 1, 2]),
        metadata={"k": "v"},
    )
    assert (record.revision, record.size, record.sha256) == (0, 3, _sha(bytes([0, 1, 2])))
    assert record.metadata == {"k": "v"}
    content = await store.read(tenant_id=ns, artifact_id="a")
    assert content.data == bytes([0, 1, 2])
    assert content.record == record
    assert await store.get(tenant_id=ns, artifact_id="a") == record
    listed = await store.list_artifacts(tenant_id=ns)
    assert listed == [record]
    assert not hasattr(listed[0], "data")
    empty = await store.put(
        tenant_id=ns, artifact_id="empty", expected_revision=None, media_type="a/b", data=b""
    )
    assert (empty.size, empty.sha256) == (0, _sha(b""))
    assert (await store.read(tenant_id=ns, artifact_id="empty")).data == b""


@_register
async def check_artifact_streams_in_chunks(b: ArtifactBundle, ns: str) -> None:
    store = _store(b, chunk_size=1000)
    parts = [ns.encode() + bytes(range(256)) * (i + 1) for i in range(40)]
    whole = b"".join(parts)
    record = await store.put(
        tenant_id=ns, artifact_id="s", expected_revision=None, media_type="x/y", data=_chunks(parts)
    )
    assert (record.size, record.sha256) == (len(whole), _sha(whole))
    received: list[bytes] = []
    async with store.open(tenant_id=ns, artifact_id="s", chunk_size=777) as reader:
        assert reader.record == record
        async for chunk in reader:
            assert 0 < len(chunk) <= 777
            received.append(chunk)
    assert b"".join(received) == whole
    sync_parts = iter([whole[:10], b"", whole[10:]])
    again = await store.put(
        tenant_id=ns, artifact_id="t", expected_revision=None, media_type="x/y", data=sync_parts
    )
    assert again.sha256 == record.sha256


@_register
async def check_artifact_cas_before_bytes(b: ArtifactBundle, ns: str) -> None:
    store = _store(b)
    first = ns.encode() + b"-v0"
    await store.put(
        tenant_id=ns, artifact_id="c", expected_revision=None, media_type="a/b", data=first
    )
    stale = ns.encode() + b"-stale"
    error = await expect_error(
        StorageConflictError,
        store.put(tenant_id=ns, artifact_id="c", expected_revision=1, media_type="a/b", data=stale),
    )
    assert (error.code, error.expected_revision, error.actual_revision) == (
        "STORAGE_CONFLICT",
        1,
        0,
    )
    assert await b.blobs.stat(_sha(stale)) is None  # refused before any byte was stored
    await expect_error(
        StorageConflictError,
        store.put(
            tenant_id=ns, artifact_id="c", expected_revision=None, media_type="a/b", data=stale
        ),
    )
    second = ns.encode() + b"-v1"
    updated = await store.put(
        tenant_id=ns, artifact_id="c", expected_revision=0, media_type="text/plain", data=second
    )
    assert (updated.revision, updated.sha256, updated.media_type) == (1, _sha(second), "text/plain")
    assert (await store.read(tenant_id=ns, artifact_id="c")).data == second


@_register
async def check_artifact_delete_cas(b: ArtifactBundle, ns: str) -> None:
    store = _store(b)
    await store.put(
        tenant_id=ns, artifact_id="d", expected_revision=None, media_type="a/b", data=ns.encode()
    )
    error = await expect_error(
        StorageConflictError, store.delete(tenant_id=ns, artifact_id="d", expected_revision=3)
    )
    assert error.actual_revision == 0
    assert await store.delete(tenant_id=ns, artifact_id="d", expected_revision=0) is True
    assert await store.delete(tenant_id=ns, artifact_id="d") is False
    assert await store.get(tenant_id=ns, artifact_id="d") is None
    await expect_error(StorageNotFoundError, store.read(tenant_id=ns, artifact_id="d"))


@_register
async def check_artifact_same_bytes_one_blob(b: ArtifactBundle, ns: str) -> None:
    store = _store(b)
    data = ns.encode() * 100
    one = await store.put(
        tenant_id=ns, artifact_id="x", expected_revision=None, media_type="a/b", data=data
    )
    two = await store.put(
        tenant_id=f"{ns}-other",
        artifact_id="y",
        expected_revision=None,
        media_type="a/b",
        data=data,
    )
    assert one.sha256 == two.sha256
    page = await b.blobs.list_blobs(after=_before(one.sha256), limit=1)
    assert [blob.sha256 for blob in page] == [one.sha256]
    assert page[0].size == len(data)


def _before(sha: str) -> str | None:
    """The greatest digest below ``sha`` (paging starts strictly after it), or None."""
    value = int(sha, 16)
    return None if value == 0 else format(value - 1, "064x")


@_register
async def check_artifact_size_limits(b: ArtifactBundle, ns: str) -> None:
    store = _store(b, max_artifact_bytes=64)
    big = ns.encode() + b"x" * 100
    await b.blobs.purge_incomplete(older_than_ms=_Clock()() + _HOUR_MS)  # earlier leftovers
    error = await expect_error(
        ArtifactTooLargeError,
        store.put(
            tenant_id=ns,
            artifact_id="big",
            expected_revision=None,
            media_type="a/b",
            data=_chunks([big[:50], big[50:]]),
        ),
    )
    assert (error.code, error.limit) == ("STORAGE_ARTIFACT_TOO_LARGE", 64)
    assert await store.get(tenant_id=ns, artifact_id="big") is None
    assert await b.blobs.stat(_sha(big)) is None
    assert await b.blobs.purge_incomplete(older_than_ms=_Clock()() + _HOUR_MS) == 0
    exact = (ns.encode() * 64)[:64]
    record = await store.put(
        tenant_id=ns, artifact_id="fits", expected_revision=None, media_type="a/b", data=exact
    )
    assert record.size == 64
    await expect_error(
        ArtifactTooLargeError,
        store.put(
            tenant_id=ns,
            artifact_id="per-put",
            expected_revision=None,
            media_type="a/b",
            data=exact,
            max_bytes=10,
        ),
    )
    error = await expect_error(
        ArtifactTooLargeError, store.read(tenant_id=ns, artifact_id="fits", max_bytes=63)
    )
    assert error.limit == 63


@_register
async def check_artifact_corruption_is_typed(b: ArtifactBundle, ns: str) -> None:
    store = _store(b)
    data = ns.encode() + bytes(range(200)) * 30
    record = await store.put(
        tenant_id=ns, artifact_id="c", expected_revision=None, media_type="a/b", data=data
    )
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0xFF
    await _corrupt(b, record.sha256, bytes(flipped))
    error = await expect_error(ArtifactIntegrityError, store.read(tenant_id=ns, artifact_id="c"))
    assert error.code == "STORAGE_ARTIFACT_CORRUPT"
    assert error.sha256 == record.sha256
    assert error.actual_sha256 == _sha(bytes(flipped))
    seen = 0

    async def stream() -> None:
        nonlocal seen
        async with store.open(tenant_id=ns, artifact_id="c", chunk_size=1000) as reader:
            async for chunk in reader:
                seen += len(chunk)

    await expect_error(ArtifactIntegrityError, stream())
    assert seen == len(data)  # every byte came through, then the end was refused
    await expect_error(ArtifactIntegrityError, store.verify(tenant_id=ns, artifact_id="c"))
    await _corrupt(b, record.sha256, data[:-1])
    error = await expect_error(ArtifactIntegrityError, store.read(tenant_id=ns, artifact_id="c"))
    assert (error.expected_size, error.actual_size) == (len(data), len(data) - 1)
    # An operator repairs it by dropping the bad blob and putting the content again.
    assert await b.blobs.delete(record.sha256) is True
    await store.put(tenant_id=ns, artifact_id="c", expected_revision=0, media_type="a/b", data=data)
    assert (await store.read(tenant_id=ns, artifact_id="c")).data == data


@_register
async def check_artifact_missing_blob_is_typed(b: ArtifactBundle, ns: str) -> None:
    store = _store(b)
    orphan = _sha(ns.encode() + b"never stored")
    await b.metadata.put(
        tenant_id=ns,
        artifact_id="m",
        expected_revision=None,
        media_type="a/b",
        size=1,
        sha256=orphan,
    )
    error = await expect_error(ArtifactBlobMissingError, store.read(tenant_id=ns, artifact_id="m"))
    assert (error.code, error.sha256) == ("STORAGE_ARTIFACT_BLOB_MISSING", orphan)
    assert isinstance(error, StorageNotFoundError)
    await expect_error(StorageNotFoundError, store.read(tenant_id=ns, artifact_id="absent"))


@_register
async def check_artifact_bad_input_stores_nothing(b: ArtifactBundle, ns: str) -> None:
    store = _store(b)
    await expect_error(
        StorageDataError,
        store.put(
            tenant_id=ns,
            artifact_id="s",
            expected_revision=None,
            media_type="a/b",
            data="text",  # pyright: ignore[reportArgumentType]
        ),
    )
    payload = ns.encode() + b"payload"
    for tenant, artifact, media in ((ns, "", "a/b"), ("", "x", "a/b"), (ns, "x", "")):
        await expect_error(
            StorageDataError,
            store.put(
                tenant_id=tenant,
                artifact_id=artifact,
                expected_revision=None,
                media_type=media,
                data=payload,
            ),
        )
    await expect_error(
        StorageDataError,
        store.put(
            tenant_id=ns,
            artifact_id="x",
            expected_revision=None,
            media_type="a/b",
            data=payload,
            metadata={"bad": float("nan")},
        ),
    )
    assert await b.blobs.stat(_sha(payload)) is None

    class Boom(Exception):
        pass

    async def failing() -> AsyncIterator[bytes]:
        yield payload
        raise Boom

    await expect_error(
        Boom,
        store.put(
            tenant_id=ns, artifact_id="x", expected_revision=None, media_type="a/b", data=failing()
        ),
    )
    assert await store.get(tenant_id=ns, artifact_id="x") is None
    assert await b.blobs.stat(_sha(payload)) is None


@_register
async def check_artifact_tenants_are_isolated(b: ArtifactBundle, ns: str) -> None:
    store = _store(b)
    for tenant in ("A", "B"):
        await store.put(
            tenant_id=f"{ns}-{tenant}",
            artifact_id="same",
            expected_revision=None,
            media_type="a/b",
            data=f"{ns}-{tenant}".encode(),
        )
    for tenant in ("A", "B"):
        content = await store.read(tenant_id=f"{ns}-{tenant}", artifact_id="same")
        assert content.data == f"{ns}-{tenant}".encode()
        listed = await store.list_artifacts(tenant_id=f"{ns}-{tenant}")
        assert [r.artifact_id for r in listed] == ["same"]


@_register
async def check_artifact_references_span_tenants(b: ArtifactBundle, ns: str) -> None:
    store = _store(b)
    kept = await store.put(
        tenant_id=f"{ns}-1",
        artifact_id="k",
        expected_revision=None,
        media_type="a/b",
        data=ns.encode() + b"k",
    )
    unknown = _sha(ns.encode() + b"nobody")
    found = await b.metadata.referenced_sha256(sha256s=[kept.sha256, unknown])
    assert found == frozenset({kept.sha256})
    assert await b.metadata.referenced_sha256(sha256s=[]) == frozenset()
    await expect_error(StorageDataError, b.metadata.referenced_sha256(sha256s=["XYZ"]))


@_register
async def check_artifact_garbage_collection(b: ArtifactBundle, ns: str) -> None:
    clock = _Clock()
    store = _store(b, clock)
    old = ns.encode() + b"-old"
    new = ns.encode() + b"-new"
    gone = ns.encode() + b"-deleted"
    shared = ns.encode() + b"-shared"
    await store.put(
        tenant_id=ns, artifact_id="v", expected_revision=None, media_type="a/b", data=old
    )
    await store.put(tenant_id=ns, artifact_id="v", expected_revision=0, media_type="a/b", data=new)
    await store.put(
        tenant_id=ns, artifact_id="g", expected_revision=None, media_type="a/b", data=gone
    )
    await store.put(
        tenant_id=ns, artifact_id="s1", expected_revision=None, media_type="a/b", data=shared
    )
    await store.put(
        tenant_id=ns, artifact_id="s2", expected_revision=None, media_type="a/b", data=shared
    )
    assert await store.delete(tenant_id=ns, artifact_id="g") is True
    assert await store.delete(tenant_id=ns, artifact_id="s1") is True
    # Within the grace period nothing of ours goes.
    await store.collect_garbage()
    for data in (old, new, gone, shared):
        assert await b.blobs.stat(_sha(data)) is not None
    clock.offset = 2 * _HOUR_MS
    report = await store.collect_garbage()
    assert report.blobs_deleted >= 2
    assert report.bytes_freed >= len(old) + len(gone)
    assert await b.blobs.stat(_sha(old)) is None
    assert await b.blobs.stat(_sha(gone)) is None
    assert await b.blobs.stat(_sha(new)) is not None
    assert await b.blobs.stat(_sha(shared)) is not None
    assert (await store.read(tenant_id=ns, artifact_id="v")).data == new
    assert (await store.read(tenant_id=ns, artifact_id="s2")).data == shared


@_register
async def check_artifact_gc_spares_puts_in_flight(b: ArtifactBundle, ns: str) -> None:
    clock = _Clock()
    store = _store(b, clock)
    pending = ns.encode() + b"-in-flight"
    # Step 1 of a put (the bytes) happened; step 2 (the record) has not yet.
    blob = await b.blobs.write(_chunks([pending]))
    report = await store.collect_garbage(grace_ms=_HOUR_MS)
    assert await b.blobs.stat(blob.sha256) is not None
    assert report.blobs_kept >= 1
    # The put of that content renews the touch, and a delete conditional on an older touch
    # (what a collection that listed the blob as stale issues) is refused.
    before = await b.blobs.stat(blob.sha256)
    assert before is not None
    await store.put(
        tenant_id=ns, artifact_id="p", expected_revision=None, media_type="a/b", data=pending
    )
    touched = await b.blobs.stat(blob.sha256)
    assert touched is not None
    assert touched.touched_at_ms >= before.touched_at_ms
    assert await b.blobs.delete(blob.sha256, touched_before_ms=touched.touched_at_ms) is False
    clock.offset = 2 * _HOUR_MS
    await store.collect_garbage()
    assert (await store.read(tenant_id=ns, artifact_id="p")).data == pending


ARTIFACT_CHECKS: tuple[ArtifactCheck, ...] = tuple(ARTIFACT_CHECKS_LIST)
"""Every artifact-bytes check."""
