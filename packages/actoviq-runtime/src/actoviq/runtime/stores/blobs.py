"""Artifact bytes: the content-addressed blob store protocol and what every backend shares.

Artifact *metadata* (media type, size, sha256, JSON metadata, CAS revision) lives in an
:class:`~actoviq.runtime.stores.protocols.ArtifactMetadataStore`; the *bytes* live in an
:class:`ArtifactBlobStore`, keyed by the lowercase hex sha256 of their content. Bytes stream in and
out in chunks (never a whole-file copy in memory), a read checks the digest and size before it
reports the end of the stream, and blobs no record references are removed by garbage collection
after a grace period (see :class:`~actoviq.runtime.stores.artifacts.ArtifactStore`).

Backends: :class:`~actoviq.runtime.stores.blob_memory.InMemoryArtifactBlobStore` (tests),
:class:`~actoviq.runtime.stores.blob_directory.DirectoryArtifactBlobStore` (a local directory, the
default) and ``actoviq.storage.sqlite``'s chunked blob table (SQLite, PostgreSQL). An object store
(S3, GCS) implements the same protocol: ``write`` uploads under a temporary key and copies to the
digest key, ``delete`` is conditional on the last touch.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Iterable
from contextlib import AbstractAsyncContextManager
from typing import Final, Protocol, TypeAlias, cast, runtime_checkable

import attrs

from actoviq.runtime.stores.errors import (
    ArtifactIntegrityError,
    ArtifactTooLargeError,
    StorageDataError,
)

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "ArtifactBlobStore",
    "BlobInfo",
    "ByteSource",
    "DigestWriter",
    "StreamVerifier",
    "byte_chunks",
    "check_chunk_size",
    "check_max_bytes",
]

DEFAULT_CHUNK_SIZE: Final = 1 << 20
"""Bytes per chunk read from a blob store, and per buffered write (1 MiB)."""

ByteSource: TypeAlias = (
    "bytes | bytearray | memoryview | Iterable[bytes] | AsyncIterable[bytes] | os.PathLike[str]"
)
"""What an artifact's bytes may come from: a bytes-like value, chunks (sync or async), a file."""


@attrs.frozen(kw_only=True)
class BlobInfo:
    """One stored blob.

    Attributes:
        sha256: lowercase hex digest of the content (the blob's key).
        size: length in bytes.
        touched_at_ms: when the blob was last written or deduplicated (epoch ms); garbage
            collection spares blobs touched within its grace period.
    """

    sha256: str
    size: int
    touched_at_ms: int


@runtime_checkable
class ArtifactBlobStore(Protocol):
    """Content-addressed artifact bytes, streamed in chunks.

    A blob is immutable: writing the same content again stores it once and only renews its
    ``touched_at_ms``. ``write`` is durable when it returns (a crash afterwards leaves an
    unreferenced blob for garbage collection, never a half-written one under a digest).
    """

    async def write(
        self, chunks: AsyncIterable[bytes], *, max_bytes: int | None = None
    ) -> BlobInfo:
        """Store the bytes of ``chunks`` under their sha256 and return the blob.

        Raises:
            ArtifactTooLargeError: more than ``max_bytes`` arrived (nothing is kept).
            StorageUnavailableError: the backend failed (nothing is kept under the digest).
        """
        ...

    def open(
        self, sha256: str, *, size: int | None = None, chunk_size: int = DEFAULT_CHUNK_SIZE
    ) -> AbstractAsyncContextManager[AsyncIterator[bytes]]:
        """Stream the blob in chunks of at most ``chunk_size`` bytes, verifying it.

        ``size`` is the size the caller recorded; a blob of another size fails before any byte.
        Usage: ``async with blobs.open(digest) as chunks: async for chunk in chunks: ...``.

        Raises:
            ArtifactBlobMissingError: no blob has that digest (on entering the block).
            ArtifactIntegrityError: the bytes do not match the digest or size (raised by the
                iterator before it ends).
        """
        ...

    async def stat(self, sha256: str) -> BlobInfo | None:
        """The blob with that digest, or None."""
        ...

    async def list_blobs(self, *, after: str | None = None, limit: int = 1000) -> list[BlobInfo]:
        """Complete blobs ordered by digest, starting after ``after`` (paging)."""
        ...

    async def delete(self, sha256: str, *, touched_before_ms: int | None = None) -> bool:
        """Delete the blob; with ``touched_before_ms`` only if it was last touched before then.

        The condition is checked atomically with the delete (a concurrent write of the same
        content wins). Returns whether a blob was deleted.
        """
        ...

    async def purge_incomplete(self, *, older_than_ms: int) -> int:
        """Remove partial writes (a crashed or abandoned ``write``) untouched since then.

        Returns how many were removed.
        """
        ...

    async def aclose(self) -> None:
        """Release resources; idempotent."""
        ...


def check_max_bytes(value: object, field: str = "max_bytes") -> int:
    """``value`` if it is a non-negative int, else :class:`StorageDataError`."""
    if type(value) is not int or value < 0:
        raise StorageDataError(f"{field} must be a non-negative integer")
    return value


def check_chunk_size(value: object) -> int:
    """``value`` if it is a positive int, else :class:`StorageDataError`."""
    if type(value) is not int or value < 1:
        raise StorageDataError("chunk_size must be a positive integer")
    return value


class DigestWriter:
    """Hashes and counts bytes being written, enforcing the size limit.

    Backends call :meth:`update` for every chunk (in a worker thread if they like: ``hashlib``
    releases the GIL on large buffers) and :meth:`hexdigest` at the end.
    """

    __slots__ = ("_hash", "limit", "size")

    def __init__(self, limit: int | None) -> None:
        self._hash = hashlib.sha256()
        self.limit = limit
        self.size = 0

    def update(self, chunk: bytes | memoryview) -> None:
        """Account for ``chunk``.

        Raises:
            ArtifactTooLargeError: the total passed the limit.
        """
        self.size += len(chunk)
        if self.limit is not None and self.size > self.limit:
            raise ArtifactTooLargeError(self.limit)
        self._hash.update(chunk)

    def hexdigest(self) -> str:
        """The digest of everything so far."""
        return self._hash.hexdigest()


class StreamVerifier:
    """Checks bytes being read against the digest (and size) they were stored under."""

    __slots__ = ("_hash", "expected_size", "sha256", "size")

    def __init__(self, sha256: str, expected_size: int | None) -> None:
        self._hash = hashlib.sha256()
        self.sha256 = sha256
        self.expected_size = expected_size
        self.size = 0

    def update(self, chunk: bytes) -> None:
        """Account for ``chunk``.

        Raises:
            ArtifactIntegrityError: more bytes than the expected size.
        """
        self.size += len(chunk)
        if self.expected_size is not None and self.size > self.expected_size:
            raise ArtifactIntegrityError(
                self.sha256, expected_size=self.expected_size, actual_size=self.size
            )
        self._hash.update(chunk)

    def finish(self) -> None:
        """Call at the end of the stream.

        Raises:
            ArtifactIntegrityError: the size or the digest is wrong.
        """
        if self.expected_size is not None and self.size != self.expected_size:
            raise ArtifactIntegrityError(
                self.sha256, expected_size=self.expected_size, actual_size=self.size
            )
        actual = self._hash.hexdigest()
        if actual != self.sha256:
            raise ArtifactIntegrityError(
                self.sha256,
                actual_sha256=actual,
                expected_size=self.expected_size,
                actual_size=self.size,
            )


async def byte_chunks(
    source: ByteSource, chunk_size: int = DEFAULT_CHUNK_SIZE
) -> AsyncGenerator[bytes, None]:
    """``source`` as an async iterator of non-empty chunks (at most ``chunk_size`` for bytes).

    A bytes-like value is sliced (views, no copy of the whole); iterables pass their own chunks
    through; a path is read in chunks on a worker thread.

    Raises:
        StorageDataError: ``source`` (or one of its chunks) is not bytes-like.
    """
    if isinstance(source, bytes | bytearray | memoryview):
        view = memoryview(source).cast("B")
        for start in range(0, len(view), chunk_size):
            yield bytes(view[start : start + chunk_size])
        return
    if isinstance(source, os.PathLike):
        async for chunk in _file_chunks(os.fspath(source), chunk_size):
            yield chunk
        return
    if isinstance(source, str):
        raise StorageDataError("Artifact data must be bytes, not str: encode it first.")
    if isinstance(source, AsyncIterable):
        async for chunk in cast(AsyncIterable[object], source):
            if chunk:
                yield _as_bytes(chunk)
        return
    if isinstance(source, Iterable):  # pyright: ignore[reportUnnecessaryIsInstance]
        for chunk in cast(Iterable[object], source):
            if chunk:
                yield _as_bytes(chunk)
        return
    raise StorageDataError(
        f"Artifact data must be bytes, chunks of bytes or a path, not {type(source).__name__}."
    )


def _as_bytes(chunk: object) -> bytes:
    if isinstance(chunk, bytes):
        return chunk
    if isinstance(chunk, bytearray | memoryview):
        return bytes(cast(bytes, chunk))
    raise StorageDataError(f"Artifact data chunks must be bytes, not {type(chunk).__name__}.")


async def _file_chunks(path: str, chunk_size: int) -> AsyncGenerator[bytes, None]:
    try:
        handle = await asyncio.to_thread(open, path, "rb", buffering=0)
    except OSError as error:
        message = f"Cannot read artifact data from {path}: {error.strerror}."
        raise StorageDataError(message) from None
    try:
        while True:
            chunk = await asyncio.to_thread(handle.read, chunk_size)
            if not chunk:
                return
            yield chunk
    finally:
        await asyncio.to_thread(handle.close)
