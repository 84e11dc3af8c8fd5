"""The JSON v1 file layer: safe names, lock files, atomic writes (spec 04 §3.10).

Everything here is synchronous and runs in a worker thread (``asyncio.to_thread``), except the
turn lease, which is held across a whole run and therefore polls on the event loop.

Lock protocol (shared with every other JSON v1 writer, so a host may keep the reference SDK as a
writer beside us): ``<id>.json.lock`` is created exclusively (``O_CREAT | O_EXCL``) and holds an
owner token; it is retried every 10 ms for up to 5 s; a lock file whose mtime is older than 30 s
belongs to a crashed writer and is broken. Breaking renames the stale file away and checks it was
the very file judged stale (same inode), so a fresh lock taken meanwhile is put back, never lost.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import socket
import time
from collections.abc import Generator
from pathlib import Path
from typing import Final

from actoviq.compat.errors import SessionBusyError, UnsafeSessionIdError
from actoviq.core import iso_now

__all__ = [
    "LOCK_RETRY_S",
    "LOCK_STALE_S",
    "LOCK_TIMEOUT_S",
    "MAX_SEGMENT_BYTES",
    "FileLock",
    "check_segment",
    "fsync_directory",
    "owner_token",
    "read_regular_file",
    "try_create_exclusive",
    "write_atomic",
]

LOCK_TIMEOUT_S: Final = 5.0
LOCK_STALE_S: Final = 30.0
LOCK_RETRY_S: Final = 0.01
_WINDOWS_RETRIES: Final = 8


MAX_SEGMENT_BYTES: Final = 200
"""The longest id (UTF-8 bytes): its lock and temporary file names must still fit in 255."""


def check_segment(value: object, field: str = "sessionId") -> str:
    r"""``value`` if it is a plain, non-empty file-name segment, else :class:`UnsafeSessionIdError`.

    Refused: non-strings, empty or blank, ``.``/``..``, path separators (``/`` and ``\\``), NUL
    and other control characters, an absolute or (on Windows) drive-relative path, and more than
    :data:`MAX_SEGMENT_BYTES` UTF-8 bytes (the file system would refuse the lock file later).
    """
    if not isinstance(value, str) or not value.strip():
        raise UnsafeSessionIdError(f"Unsafe {field}: must be a non-empty string.")
    unsafe = (
        value in (".", "..")
        or "/" in value
        or "\\" in value
        or any(ord(char) < 0x20 or ord(char) == 0x7F for char in value)
        or os.path.isabs(value)
        or (os.name == "nt" and ":" in value)
    )
    if unsafe:
        raise UnsafeSessionIdError(
            f"Unsafe {field} {value!r}: it must be one plain path segment (no separators, "
            "no NUL or control characters, not . or ..)."
        )
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:  # a lone surrogate: no file name on a UTF-8 file system
        raise UnsafeSessionIdError(f"Unsafe {field} {value!r}: not valid Unicode.") from None
    if size > MAX_SEGMENT_BYTES:
        raise UnsafeSessionIdError(
            f"Unsafe {field} {value[:32]!r}...: {size} bytes, at most {MAX_SEGMENT_BYTES}."
        )
    return value


def read_regular_file(path: Path) -> bytes:
    """The bytes of ``path``, refusing a symbolic link (it could point outside the root).

    Raises:
        FileNotFoundError: no such file.
        OSError: a symbolic link (``ELOOP``) or another read failure.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as file:
        return file.read()


def owner_token() -> str:
    """A fresh owner token: ``<host>:<pid>:<random>``."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(8)}"


def try_create_exclusive(path: Path, content: str) -> bool:
    """Create ``path`` with ``content`` if it does not exist; False if it does."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    try:
        os.write(fd, content.encode("utf-8"))
    finally:
        os.close(fd)
    return True


def break_if_stale(path: Path, stale_after: float) -> bool:
    """Remove ``path`` when its mtime is older than ``stale_after`` seconds; True if removed."""
    try:
        seen = path.stat()
    except FileNotFoundError:
        return True
    if time.time() - seen.st_mtime < stale_after:
        return False
    aside = path.with_name(f"{path.name}.stale.{secrets.token_hex(6)}")
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return True  # someone else broke it first
    moved = aside.stat()
    if moved.st_ino == seen.st_ino and moved.st_mtime == seen.st_mtime:
        aside.unlink(missing_ok=True)
        return True
    # We moved a lock taken after our check: put it back unless yet another writer holds the path.
    with contextlib.suppress(FileExistsError):
        os.link(aside, path)
    aside.unlink(missing_ok=True)
    return False


class FileLock:
    """The JSON v1 write lock ``<file>.lock`` (blocking; use from a worker thread).

    Args:
        path: the lock file path.
        timeout: seconds to keep retrying before :class:`SessionBusyError`.
        stale_after: seconds after which a lock file is considered abandoned.
    """

    def __init__(
        self, path: Path, *, timeout: float = LOCK_TIMEOUT_S, stale_after: float = LOCK_STALE_S
    ) -> None:
        self.path = path
        self.timeout = timeout
        self.stale_after = stale_after
        self.token = owner_token()

    def acquire(self) -> None:
        """Take the lock, breaking a stale one; raise :class:`SessionBusyError` on timeout."""
        body = json.dumps({"owner": self.token, "pid": os.getpid(), "acquiredAt": iso_now()})
        deadline = time.monotonic() + self.timeout
        while True:
            if try_create_exclusive(self.path, body):
                return
            if break_if_stale(self.path, self.stale_after):
                continue
            if time.monotonic() >= deadline:
                raise SessionBusyError(
                    f"Could not lock {self.path.name} within {self.timeout:g}s: another writer "
                    "holds it. Retry later; a lock older than "
                    f"{self.stale_after:g}s is broken automatically."
                )
            time.sleep(LOCK_RETRY_S)

    def release(self) -> None:
        """Remove the lock file if it is still ours."""
        try:
            text = self.path.read_text("utf-8")
        except FileNotFoundError:
            return
        if self.token in text:
            self.path.unlink(missing_ok=True)

    @contextlib.contextmanager
    def held(self) -> Generator[None, None, None]:
        """``with lock.held(): ...``: acquire, then release however the block ends."""
        self.acquire()
        try:
            yield
        finally:
            self.release()


def fsync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as error:  # some filesystems refuse fsync on directories
        if error.errno not in (errno.EINVAL, errno.EBADF, errno.ENOTSUP):
            raise
    finally:
        os.close(fd)


def write_atomic(path: Path, text: str, *, durable: bool = True) -> None:
    """Write ``text`` to ``<path>.<random>.tmp``, fsync it, and rename it over ``path``.

    Readers see the old file or the new one, never a torn one. On Windows a rename refused with
    EPERM/EBUSY/EACCES (a reader holds the file) is retried up to 8 times with linear backoff.
    """
    temp = path.with_name(f"{path.name}.{secrets.token_hex(8)}.tmp")
    try:
        with open(temp, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        for attempt in range(_WINDOWS_RETRIES + 1):
            try:
                os.replace(temp, path)
                break
            except PermissionError:
                if os.name != "nt" or attempt == _WINDOWS_RETRIES:
                    raise
                time.sleep(0.01 * (attempt + 1))
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    if durable:
        fsync_directory(path.parent)
