"""``ArtifactStore``: artifact bytes and their metadata together (spec 04 §3.7, §8.1.10).

The bytes go to an :class:`~actoviq.runtime.stores.blobs.ArtifactBlobStore` under their sha256;
the record (media type, size, digest, JSON metadata, CAS revision) goes to an
:class:`~actoviq.runtime.stores.protocols.ArtifactMetadataStore`. The order makes a crash safe:

1. the bytes are streamed into the blob store and made durable;
2. only then is the record written (compare-and-set on its revision).

A crash between the two leaves an unreferenced blob (removed by :meth:`ArtifactStore.
collect_garbage`) and the previous record with its previous bytes: never a record that points at
missing bytes, never a lost artifact. Collection spares blobs touched within ``grace_ms`` (a put
touches its blob right before it commits the record), so a put in flight keeps its bytes.

Example:
    >>> import asyncio
    >>> from actoviq.runtime.stores import InMemoryArtifactMetadataStore, InMemoryArtifactBlobStore
    >>> async def main() -> bytes:
    ...     store = ArtifactStore(InMemoryArtifactMetadataStore(), InMemoryArtifactBlobStore())
    ...     await store.put(
    ...         tenant_id="t", artifact_id="report", expected_revision=None,
    ...         media_type="text/plain", data=b"findings",
    ...     )
    ...     return (await store.read(tenant_id="t", artifact_id="report")).data
    >>> asyncio.run(main())
    b'findings'
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from types import TracebackType
from typing import Final, Self

import attrs

from actoviq.core import JsonObject
from actoviq.runtime.stores.blobs import (
    DEFAULT_CHUNK_SIZE,
    ArtifactBlobStore,
    ByteSource,
    byte_chunks,
    check_chunk_size,
    check_max_bytes,
)
from actoviq.runtime.stores.errors import (
    ArtifactTooLargeError,
    StorageConflictError,
    StorageNotFoundError,
)
from actoviq.runtime.stores.protocols import ArtifactMetadataStore
from actoviq.runtime.stores.records import ArtifactRecord
from actoviq.runtime.stores.rules import artifact_resource, validate_artifact

__all__ = [
    "DEFAULT_GC_GRACE_MS",
    "DEFAULT_MAX_ARTIFACT_BYTES",
    "DEFAULT_MAX_READ_BYTES",
    "ArtifactContent",
    "ArtifactReader",
    "ArtifactStore",
    "GarbageReport",
]

DEFAULT_MAX_ARTIFACT_BYTES: Final = 1 << 30
"""The default limit on one artifact's size (1 GiB)."""
DEFAULT_MAX_READ_BYTES: Final = 64 << 20
"""The default limit of :meth:`ArtifactStore.read`, which holds the bytes in memory (64 MiB)."""
DEFAULT_GC_GRACE_MS: Final = 3_600_000
"""Blobs touched within this window (1 hour) survive garbage collection (puts in flight)."""
_PAGE: Final = 500
_PLACEHOLDER_SHA: Final = "0" * 64


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@attrs.frozen(kw_only=True)
class ArtifactContent:
    """An artifact's record and its (verified) bytes."""

    record: ArtifactRecord
    data: bytes


@attrs.frozen(kw_only=True)
class GarbageReport:
    """What :meth:`ArtifactStore.collect_garbage` removed.

    Attributes:
        blobs_deleted: unreferenced blobs deleted.
        bytes_freed: their total size.
        incomplete_purged: abandoned partial writes removed.
        blobs_kept: blobs seen and kept (referenced, or touched within the grace period).
    """

    blobs_deleted: int
    bytes_freed: int
    incomplete_purged: int
    blobs_kept: int


class ArtifactReader:
    """An open artifact: its record and its bytes as an async iterator of verified chunks.

    The iterator raises :class:`~actoviq.runtime.stores.ArtifactIntegrityError` before it ends
    if the bytes do not match the record's digest.
    """

    __slots__ = ("_chunks", "record")

    def __init__(self, record: ArtifactRecord, chunks: AsyncIterator[bytes]) -> None:
        self.record = record
        self._chunks = chunks

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._chunks


class ArtifactStore:
    """Artifact records plus their content-addressed bytes (see the module docstring).

    Args:
        metadata: where the records live.
        blobs: where the bytes live (one blob store belongs to one metadata store: garbage
            collection asks only this one which digests are referenced).
        max_artifact_bytes: the default size limit of one artifact.
        chunk_size: bytes per chunk when slicing bytes-like data and when reading.
        clock: epoch milliseconds (garbage collection's "now"; inject one in tests).
        owns_stores: :meth:`aclose` also closes ``metadata`` and ``blobs``.
    """

    def __init__(
        self,
        metadata: ArtifactMetadataStore,
        blobs: ArtifactBlobStore,
        *,
        max_artifact_bytes: int = DEFAULT_MAX_ARTIFACT_BYTES,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        clock: Callable[[], int] = _now_ms,
        owns_stores: bool = False,
    ) -> None:
        self.metadata = metadata
        self.blobs = blobs
        self.max_artifact_bytes = check_max_bytes(max_artifact_bytes, "max_artifact_bytes")
        self._chunk_size = check_chunk_size(chunk_size)
        self._clock = clock
        self._owns = owns_stores
        self._closed = False

    async def put(
        self,
        *,
        tenant_id: str,
        artifact_id: str,
        expected_revision: int | None,
        media_type: str,
        data: ByteSource,
        metadata: JsonObject | None = None,
        updated_at: str | None = None,
        max_bytes: int | None = None,
    ) -> ArtifactRecord:
        """Store the bytes of ``data``, then create or replace the record (CAS on its revision).

        ``data`` is bytes, chunks (``Iterable`` or ``AsyncIterable`` of bytes) or a file path;
        chunks are streamed, never joined. The revision is checked once before any byte is
        stored (a stale put fails fast) and again, atomically, when the record is written.

        Raises:
            StorageConflictError: ``expected_revision`` is not the stored revision.
            ArtifactTooLargeError: the bytes exceed ``max_bytes`` (default: the store's limit).
            StorageDataError: an empty key or media type, metadata that is not strict JSON, or
                data that is not bytes.
        """
        validate_artifact(
            tenant_id=tenant_id,
            artifact_id=artifact_id,
            expected_revision=expected_revision,
            media_type=media_type,
            size=0,
            sha256=_PLACEHOLDER_SHA,
            uri=None,
            metadata=metadata,
            updated_at=updated_at,
        )
        limit = self.max_artifact_bytes if max_bytes is None else check_max_bytes(max_bytes)
        current = await self.metadata.get(tenant_id=tenant_id, artifact_id=artifact_id)
        actual = None if current is None else current.revision
        if actual != expected_revision:
            raise StorageConflictError(
                artifact_resource(tenant_id, artifact_id),
                expected_revision=expected_revision,
                actual_revision=actual,
            )
        async with contextlib.aclosing(byte_chunks(data, self._chunk_size)) as chunks:
            blob = await self.blobs.write(chunks, max_bytes=limit)
        if blob.size > limit:  # a blob store that ignored max_bytes
            raise ArtifactTooLargeError(limit)
        return await self.metadata.put(
            tenant_id=tenant_id,
            artifact_id=artifact_id,
            expected_revision=expected_revision,
            media_type=media_type,
            size=blob.size,
            sha256=blob.sha256,
            metadata=metadata,
            updated_at=updated_at,
        )

    async def get(self, *, tenant_id: str, artifact_id: str) -> ArtifactRecord | None:
        """The record (metadata only), or None."""
        return await self.metadata.get(tenant_id=tenant_id, artifact_id=artifact_id)

    async def _require(self, tenant_id: str, artifact_id: str) -> ArtifactRecord:
        record = await self.metadata.get(tenant_id=tenant_id, artifact_id=artifact_id)
        if record is None:
            raise StorageNotFoundError(artifact_resource(tenant_id, artifact_id))
        return record

    @contextlib.asynccontextmanager
    async def open(
        self, *, tenant_id: str, artifact_id: str, chunk_size: int | None = None
    ) -> AsyncGenerator[ArtifactReader, None]:
        """Stream an artifact: ``async with store.open(...) as reader: async for chunk in reader``.

        Raises:
            StorageNotFoundError: no such artifact (on entering the block).
            ArtifactBlobMissingError: the record's bytes are not in this blob store.
            ArtifactIntegrityError: the bytes are corrupt (from the iterator, before it ends).
        """
        record = await self._require(tenant_id, artifact_id)
        step = self._chunk_size if chunk_size is None else check_chunk_size(chunk_size)
        async with self.blobs.open(record.sha256, size=record.size, chunk_size=step) as chunks:
            yield ArtifactReader(record, chunks)

    async def read(
        self, *, tenant_id: str, artifact_id: str, max_bytes: int = DEFAULT_MAX_READ_BYTES
    ) -> ArtifactContent:
        """The record and its whole, verified bytes (for artifacts that fit in memory).

        Raises:
            StorageNotFoundError: no such artifact.
            ArtifactTooLargeError: the artifact is larger than ``max_bytes`` (use :meth:`open`).
            ArtifactBlobMissingError / ArtifactIntegrityError: see :meth:`open`.
        """
        limit = check_max_bytes(max_bytes)
        record = await self._require(tenant_id, artifact_id)
        if record.size > limit:
            raise ArtifactTooLargeError(limit)
        parts: list[bytes] = []
        async with self.blobs.open(
            record.sha256, size=record.size, chunk_size=self._chunk_size
        ) as chunks:
            async for chunk in chunks:
                parts.append(chunk)
        return ArtifactContent(record=record, data=b"".join(parts))

    async def verify(self, *, tenant_id: str, artifact_id: str) -> ArtifactRecord:
        """Read the artifact through and check it against its record; returns the record.

        Raises:
            StorageNotFoundError / ArtifactBlobMissingError / ArtifactIntegrityError.
        """
        async with self.open(tenant_id=tenant_id, artifact_id=artifact_id) as reader:
            async for _ in reader:
                pass
            return reader.record

    async def list_artifacts(
        self, *, tenant_id: str, limit: int | None = None
    ) -> list[ArtifactRecord]:
        """Records (no bytes), newest ``updated_at`` first, then by id."""
        return await self.metadata.list_artifacts(tenant_id=tenant_id, limit=limit)

    async def delete(
        self, *, tenant_id: str, artifact_id: str, expected_revision: int | None = None
    ) -> bool:
        """Delete the record; False when absent.

        The bytes go at the next garbage collection unless another record references them.

        Raises:
            StorageConflictError: ``expected_revision`` is given and differs from the stored one.
        """
        return await self.metadata.delete(
            tenant_id=tenant_id, artifact_id=artifact_id, expected_revision=expected_revision
        )

    async def collect_garbage(self, *, grace_ms: int = DEFAULT_GC_GRACE_MS) -> GarbageReport:
        """Delete blobs no record references and abandoned partial writes.

        Only blobs last touched more than ``grace_ms`` ago are candidates, and each delete is
        conditional on that (a concurrent put of the same content keeps it). Safe to run while
        puts and reads go on, in any process, as long as no put takes longer than ``grace_ms``
        between storing its bytes and committing its record.
        """
        if type(grace_ms) is not int or grace_ms < 0:
            raise ValueError("grace_ms must be a non-negative integer")
        cutoff = self._clock() - grace_ms
        purged = await self.blobs.purge_incomplete(older_than_ms=cutoff)
        deleted = freed = kept = 0
        after: str | None = None
        while True:
            page = await self.blobs.list_blobs(after=after, limit=_PAGE)
            if not page:
                break
            after = page[-1].sha256
            stale = [blob for blob in page if blob.touched_at_ms < cutoff]
            kept += len(page) - len(stale)
            if not stale:
                continue
            referenced = await self.metadata.referenced_sha256(
                sha256s=[blob.sha256 for blob in stale]
            )
            for blob in stale:
                if blob.sha256 in referenced:
                    kept += 1
                elif await self.blobs.delete(blob.sha256, touched_before_ms=cutoff):
                    deleted += 1
                    freed += blob.size
                else:
                    kept += 1
        return GarbageReport(
            blobs_deleted=deleted, bytes_freed=freed, incomplete_purged=purged, blobs_kept=kept
        )

    async def aclose(self) -> None:
        """Close the stores if this façade owns them; idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._owns:
            try:
                await self.blobs.aclose()
            finally:
                await self.metadata.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
