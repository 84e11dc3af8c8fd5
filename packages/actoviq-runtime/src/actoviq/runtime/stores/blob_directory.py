"""``DirectoryArtifactBlobStore``: artifact bytes as files in a local directory (the default).

Layout under the root::

    blobs/ab/ab12…ef   one file per blob, named by its sha256 (fanned out by its first two digits)
    staging/<id>.part  writes in progress (a crashed write leaves one; purge_incomplete removes it)
    trash/<sha256>     a blob being garbage-collected (for the instant between two renames)

A write streams into a staging file (``O_EXCL``, mode 0600), hashing as it goes, then flushes it
(``fsync``), renames it over ``blobs/ab/<sha256>`` (atomic; identical content may replace identical
content) and flushes the directory, so the blob is durable before the caller records it. A reader
never sees a partial blob under a digest. All file I/O runs on worker threads; an operation that
is cancelled waits for its thread before it closes the file descriptor the thread uses.

Garbage collection renames a blob into ``trash/`` before unlinking it and puts it back when a
concurrent write touched it meanwhile; a reader that misses the blob at its place looks in
``trash/`` too (the content is verified against the digest either way).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import re
import stat
import uuid
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Callable
from pathlib import Path
from typing import Any, BinaryIO, Final, TypeVar

from actoviq.runtime.stores.blobs import (
    DEFAULT_CHUNK_SIZE,
    BlobInfo,
    DigestWriter,
    StreamVerifier,
    check_chunk_size,
    check_max_bytes,
)
from actoviq.runtime.stores.errors import (
    ArtifactBlobMissingError,
    ArtifactIntegrityError,
    StorageUnavailableError,
)
from actoviq.runtime.stores.validation import require_limit, require_sha256

__all__ = ["DirectoryArtifactBlobStore"]

T = TypeVar("T")
_SHA: Final = re.compile(r"[0-9a-f]{64}")
_FANOUT: Final = re.compile(r"[0-9a-f]{2}")


def _mtime_ms(info: os.stat_result) -> int:
    return info.st_mtime_ns // 1_000_000


def _unavailable(action: str, error: OSError) -> StorageUnavailableError:
    reason = os.strerror(error.errno) if error.errno else type(error).__name__
    return StorageUnavailableError(
        f"Artifact directory store cannot {action}: {reason}.",
        cause=error,
        retryable=error.errno in (errno.ENOSPC, errno.EAGAIN, errno.EINTR, errno.EIO),
    )


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class DirectoryArtifactBlobStore:
    """An :class:`~actoviq.runtime.stores.blobs.ArtifactBlobStore` in a local directory.

    Args:
        root: the directory (created on first write, mode 0700).
        chunk_size: bytes buffered per file write.
        fsync: flush files and directories to stable storage before a write returns (turn off
            only for throwaway data: a power loss could then lose a blob a record points to).

    Example:
        >>> import asyncio, tempfile
        >>> async def main(root: str) -> int:
        ...     blobs = DirectoryArtifactBlobStore(root)
        ...     async def chunks():
        ...         yield b"hello "
        ...         yield b"world"
        ...     info = await blobs.write(chunks())
        ...     async with blobs.open(info.sha256) as stream:
        ...         return len(b"".join([chunk async for chunk in stream]))
        >>> with tempfile.TemporaryDirectory() as root:
        ...     asyncio.run(main(root))
        11
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        fsync: bool = True,
    ) -> None:
        self.root = Path(root)
        self._chunk_size = check_chunk_size(chunk_size)
        self._fsync = fsync
        self._blobs = self.root / "blobs"
        self._staging = self.root / "staging"
        self._trash = self.root / "trash"

    def path_of(self, sha256: str) -> Path:
        """Where the blob with that digest lives (whether or not it exists)."""
        require_sha256(sha256)
        return self._blobs / sha256[:2] / sha256

    # -- write ------------------------------------------------------------------------------------

    async def write(
        self, chunks: AsyncIterable[bytes], *, max_bytes: int | None = None
    ) -> BlobInfo:
        """See :meth:`ArtifactBlobStore.write`."""
        limit = None if max_bytes is None else check_max_bytes(max_bytes)
        digest = DigestWriter(limit)
        fd, staging = await _guarded(self._create_staging)
        closed = False
        try:
            buffer = bytearray()
            async for chunk in chunks:  # the source's own errors propagate unchanged
                if buffer and len(buffer) + len(chunk) > self._chunk_size:
                    await _io("write a blob", _write_all, fd, digest, bytes(buffer))
                    buffer.clear()
                if len(chunk) >= self._chunk_size:
                    await _io("write a blob", _write_all, fd, digest, chunk)
                else:
                    buffer += chunk
            if buffer:
                await _io("write a blob", _write_all, fd, digest, bytes(buffer))
            closed = True
            return await _io("write a blob", self._finish, fd, staging, digest)
        finally:
            if not closed:
                await _guarded(_discard, fd, staging)

    def _create_staging(self) -> tuple[int, Path]:
        try:
            self._staging.mkdir(parents=True, exist_ok=True, mode=0o700)
            path = self._staging / f"{uuid.uuid4().hex}.part"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
            return os.open(path, flags, 0o600), path
        except OSError as error:
            raise _unavailable("create a staging file", error) from error

    def _finish(self, fd: int, staging: Path, digest: DigestWriter) -> BlobInfo:
        try:
            if self._fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        try:
            sha = digest.hexdigest()
            folder = self._blobs / sha[:2]
            if not folder.is_dir():
                folder.mkdir(parents=True, exist_ok=True, mode=0o700)
                if self._fsync:
                    _fsync_dir(self._blobs)
            final = folder / sha
            os.replace(staging, final)  # atomic; identical content may replace identical content
            os.utime(final)  # the touch garbage collection's grace period counts from
            if self._fsync:
                _fsync_dir(folder)
            info = os.stat(final)
        except OSError:
            with contextlib.suppress(OSError):
                staging.unlink()
            raise
        return BlobInfo(sha256=sha, size=digest.size, touched_at_ms=_mtime_ms(info))

    # -- read -------------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def open(
        self, sha256: str, *, size: int | None = None, chunk_size: int = DEFAULT_CHUNK_SIZE
    ) -> AsyncGenerator[AsyncIterator[bytes], None]:
        """See :meth:`ArtifactBlobStore.open`."""
        path = self.path_of(sha256)
        step = check_chunk_size(chunk_size)
        handle = await _guarded(self._open_blob, sha256, path)
        try:
            actual = os.fstat(handle.fileno()).st_size
            if size is not None and actual != size:
                raise ArtifactIntegrityError(sha256, expected_size=size, actual_size=actual)
            stream = _stream(handle, StreamVerifier(sha256, actual), step)
            try:
                yield stream
            finally:
                await stream.aclose()
        finally:
            await _guarded(handle.close)

    def _open_blob(self, sha256: str, path: Path) -> BinaryIO:
        for candidate in (path, self._trash / sha256):
            try:
                handle = open(candidate, "rb", buffering=0)  # noqa: SIM115 - closed by open()
            except FileNotFoundError:
                continue
            except OSError as error:
                raise _unavailable("read a blob", error) from error
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                handle.close()
                raise ArtifactIntegrityError(sha256, reason="it is not a regular file")
            return handle
        raise ArtifactBlobMissingError(sha256)

    async def stat(self, sha256: str) -> BlobInfo | None:
        """See :meth:`ArtifactBlobStore.stat`."""
        path = self.path_of(sha256)
        try:
            info = await _guarded(os.stat, path)
        except FileNotFoundError:
            return None
        except OSError as error:
            raise _unavailable("stat a blob", error) from error
        return BlobInfo(sha256=sha256, size=info.st_size, touched_at_ms=_mtime_ms(info))

    async def list_blobs(self, *, after: str | None = None, limit: int = 1000) -> list[BlobInfo]:
        """See :meth:`ArtifactBlobStore.list_blobs`."""
        cap = require_limit(limit) or 1000
        if after is not None:
            require_sha256(after, "after")
        return await _io("list blobs", self._list, after, cap)

    def _list(self, after: str | None, cap: int) -> list[BlobInfo]:
        found: list[BlobInfo] = []
        try:
            folders = sorted(
                entry.name for entry in os.scandir(self._blobs) if _FANOUT.fullmatch(entry.name)
            )
        except FileNotFoundError:
            return found
        for folder in folders:
            if after is not None and folder < after[:2]:
                continue
            try:
                names = sorted(
                    entry.name
                    for entry in os.scandir(self._blobs / folder)
                    if _SHA.fullmatch(entry.name) and (after is None or entry.name > after)
                )
            except FileNotFoundError:
                continue
            for name in names:
                try:
                    info = os.stat(self._blobs / folder / name)
                except FileNotFoundError:
                    continue
                found.append(
                    BlobInfo(sha256=name, size=info.st_size, touched_at_ms=_mtime_ms(info))
                )
                if len(found) >= cap:
                    return found
        return found

    # -- garbage ----------------------------------------------------------------------------------

    async def delete(self, sha256: str, *, touched_before_ms: int | None = None) -> bool:
        """See :meth:`ArtifactBlobStore.delete`."""
        path = self.path_of(sha256)
        return await _io("delete a blob", self._delete, sha256, path, touched_before_ms)

    def _delete(self, sha256: str, path: Path, touched_before_ms: int | None) -> bool:
        try:
            if touched_before_ms is not None and _mtime_ms(os.stat(path)) >= touched_before_ms:
                return False
            self._trash.mkdir(parents=True, exist_ok=True, mode=0o700)
            trash = self._trash / sha256
            os.replace(path, trash)  # from here on no reader or writer sees it at its place
        except FileNotFoundError:
            return False
        if touched_before_ms is not None and _mtime_ms(os.stat(trash)) >= touched_before_ms:
            # A write of the same content replaced the file between the check and the rename:
            # what we moved is fresh, so it goes back.
            os.replace(trash, path)
            return False
        trash.unlink(missing_ok=True)
        return True

    async def purge_incomplete(self, *, older_than_ms: int) -> int:
        """See :meth:`ArtifactBlobStore.purge_incomplete` (also settles an interrupted delete)."""
        return await _io("purge partial writes", self._purge, older_than_ms)

    def _purge(self, older_than_ms: int) -> int:
        removed = 0
        with contextlib.suppress(FileNotFoundError):
            for entry in os.scandir(self._staging):
                with contextlib.suppress(FileNotFoundError):
                    if _mtime_ms(entry.stat()) < older_than_ms:
                        os.unlink(entry.path)
                        removed += 1
        with contextlib.suppress(FileNotFoundError):
            for entry in os.scandir(self._trash):
                if not _SHA.fullmatch(entry.name):
                    continue
                final = self._blobs / entry.name[:2] / entry.name
                with contextlib.suppress(FileNotFoundError):
                    if final.exists():
                        os.unlink(entry.path)
                    else:
                        # A delete was interrupted between its renames: put the blob back and
                        # let the next collection decide again (never lose referenced bytes).
                        final.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                        os.replace(entry.path, final)
        return removed

    def corrupt(self, sha256: str, data: bytes) -> None:
        """Overwrite a blob's bytes in place (for integrity tests)."""
        self.path_of(sha256).write_bytes(data)

    async def aclose(self) -> None:
        """Nothing to release (every file is closed when its operation ends)."""


async def _io(action: str, call: Callable[..., T], *args: Any) -> T:
    """:func:`_guarded`, with the file system's errors as :class:`StorageUnavailableError`."""
    try:
        return await _guarded(call, *args)
    except OSError as error:
        raise _unavailable(action, error) from error


async def _guarded(call: Callable[..., T], *args: Any) -> T:
    """Run ``call`` on a worker thread; on cancellation, wait for it before re-raising.

    The thread may be using a file descriptor the caller closes on the way out: it must be
    done with it first.
    """
    task = asyncio.ensure_future(asyncio.to_thread(call, *args))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        await asyncio.wait([task])
        if not task.cancelled():
            task.exception()  # retrieved: the caller's cancellation is what propagates
        raise


def _write_all(fd: int, digest: DigestWriter, data: bytes) -> None:
    digest.update(data)
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _discard(fd: int, staging: Path) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)
    with contextlib.suppress(OSError):
        staging.unlink()


def _read_chunk(handle: BinaryIO, step: int, verifier: StreamVerifier) -> bytes:
    chunk = handle.read(step)
    if chunk:
        verifier.update(chunk)
    else:
        verifier.finish()
    return chunk


async def _stream(
    handle: BinaryIO, verifier: StreamVerifier, step: int
) -> AsyncGenerator[bytes, None]:
    while True:
        chunk = await _io("read a blob", _read_chunk, handle, step, verifier)
        if not chunk:
            return
        yield chunk
