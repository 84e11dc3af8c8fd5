"""``InMemoryArtifactBlobStore``: artifact bytes in a dict (tests, scripts, examples).

It keeps every blob whole in memory, so it is for small artifacts only; the directory and SQL
backends stream. Each operation completes without awaiting in between, so it is atomic on the
event loop.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Callable

from actoviq.runtime.stores.blobs import (
    DEFAULT_CHUNK_SIZE,
    BlobInfo,
    DigestWriter,
    StreamVerifier,
    check_chunk_size,
    check_max_bytes,
)
from actoviq.runtime.stores.errors import ArtifactBlobMissingError, ArtifactIntegrityError
from actoviq.runtime.stores.validation import require_limit, require_sha256

__all__ = ["InMemoryArtifactBlobStore"]


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class InMemoryArtifactBlobStore:
    """An :class:`~actoviq.runtime.stores.blobs.ArtifactBlobStore` held in a dict.

    Args:
        clock: epoch milliseconds (inject one in tests of garbage collection).
    """

    def __init__(self, *, clock: Callable[[], int] = _now_ms) -> None:
        self._clock = clock
        self._blobs: dict[str, bytes] = {}
        self._touched: dict[str, int] = {}
        self._partial: dict[int, int] = {}  # write number -> last touch (a write in progress)
        self._writes = 0

    async def write(
        self, chunks: AsyncIterable[bytes], *, max_bytes: int | None = None
    ) -> BlobInfo:
        """See :meth:`ArtifactBlobStore.write`."""
        limit = None if max_bytes is None else check_max_bytes(max_bytes)
        digest = DigestWriter(limit)
        parts: list[bytes] = []
        self._writes += 1
        ticket = self._writes
        self._partial[ticket] = self._clock()
        try:
            async for chunk in chunks:
                digest.update(chunk)
                parts.append(bytes(chunk))
                self._partial[ticket] = self._clock()
        finally:
            self._partial.pop(ticket, None)
        sha = digest.hexdigest()
        if sha not in self._blobs:
            self._blobs[sha] = b"".join(parts)
        now = self._clock()
        self._touched[sha] = now
        return BlobInfo(sha256=sha, size=digest.size, touched_at_ms=now)

    @contextlib.asynccontextmanager
    async def open(
        self, sha256: str, *, size: int | None = None, chunk_size: int = DEFAULT_CHUNK_SIZE
    ) -> AsyncGenerator[AsyncIterator[bytes], None]:
        """See :meth:`ArtifactBlobStore.open`."""
        require_sha256(sha256)
        step = check_chunk_size(chunk_size)
        data = self._blobs.get(sha256)
        if data is None:
            raise ArtifactBlobMissingError(sha256)
        if size is not None and len(data) != size:
            raise ArtifactIntegrityError(sha256, expected_size=size, actual_size=len(data))
        stream = _stream(data, sha256, step)
        try:
            yield stream
        finally:
            await stream.aclose()

    async def stat(self, sha256: str) -> BlobInfo | None:
        """See :meth:`ArtifactBlobStore.stat`."""
        require_sha256(sha256)
        data = self._blobs.get(sha256)
        if data is None:
            return None
        return BlobInfo(sha256=sha256, size=len(data), touched_at_ms=self._touched[sha256])

    async def list_blobs(self, *, after: str | None = None, limit: int = 1000) -> list[BlobInfo]:
        """See :meth:`ArtifactBlobStore.list_blobs`."""
        cap = require_limit(limit) or 1000
        keys = sorted(key for key in self._blobs if after is None or key > after)[:cap]
        return [
            BlobInfo(sha256=key, size=len(self._blobs[key]), touched_at_ms=self._touched[key])
            for key in keys
        ]

    async def delete(self, sha256: str, *, touched_before_ms: int | None = None) -> bool:
        """See :meth:`ArtifactBlobStore.delete`."""
        require_sha256(sha256)
        if sha256 not in self._blobs:
            return False
        if touched_before_ms is not None and self._touched[sha256] >= touched_before_ms:
            return False
        del self._blobs[sha256]
        del self._touched[sha256]
        return True

    async def purge_incomplete(self, *, older_than_ms: int) -> int:
        """See :meth:`ArtifactBlobStore.purge_incomplete` (partial writes live in the writer)."""
        return 0

    def corrupt(self, sha256: str, data: bytes) -> None:
        """Replace a blob's bytes without changing its key (for integrity tests)."""
        if sha256 not in self._blobs:
            raise ArtifactBlobMissingError(sha256)
        self._blobs[sha256] = data

    async def aclose(self) -> None:
        """Nothing to release."""


async def _stream(data: bytes, sha256: str, step: int) -> AsyncGenerator[bytes, None]:
    verifier = StreamVerifier(sha256, len(data))
    view = memoryview(data)
    for start in range(0, len(view), step):
        chunk = bytes(view[start : start + step])
        verifier.update(chunk)
        yield chunk
    verifier.finish()
