"""One JSON v1 root: ``<root>/sessions/<id>.json`` plus its locks and checkpoints (synchronous).

Both faces of the store (:class:`~actoviq.compat.legacy_store.store.LegacyJsonV1SessionStore`
and :class:`~actoviq.compat.legacy_store.journal.LegacyJsonV1SessionJournal`) read and write
through this class, from a worker thread, so they share one locking and writing discipline.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from actoviq.compat.errors import SessionDataError
from actoviq.compat.legacy_store._files import (
    LOCK_STALE_S,
    LOCK_TIMEOUT_S,
    FileLock,
    check_segment,
    read_regular_file,
    write_atomic,
)
from actoviq.compat.legacy_store.shapes import StoredSession, dumps_session, parse_session

__all__ = ["SessionDirectory"]

_log = logging.getLogger("actoviq.compat")
R = TypeVar("R")


class SessionDirectory:
    """The files of one JSON v1 root.

    Args:
        root: the root directory (``sessions/`` is created under it on first write).
        lock_timeout: seconds to wait for a session's write lock.
        lock_stale_after: seconds after which a write lock is considered abandoned.
        durable: fsync files and the directory on every write.
    """

    def __init__(
        self,
        root: Path,
        *,
        lock_timeout: float = LOCK_TIMEOUT_S,
        lock_stale_after: float = LOCK_STALE_S,
        durable: bool = True,
    ) -> None:
        self.root = root
        self.sessions = root / "sessions"
        self.lock_timeout = lock_timeout
        self.lock_stale_after = lock_stale_after
        self.durable = durable

    # -- paths --------------------------------------------------------------------------------

    def session_path(self, session_id: str) -> Path:
        """``<root>/sessions/<id>.json`` (the id is checked first)."""
        return self.sessions / f"{check_segment(session_id)}.json"

    def lock_path(self, session_id: str) -> Path:
        """``<root>/sessions/<id>.json.lock``."""
        return self.sessions / f"{check_segment(session_id)}.json.lock"

    def turn_lock_path(self, session_id: str) -> Path:
        """``<root>/sessions/<id>.json.turn.lock`` (the whole-turn lease)."""
        return self.sessions / f"{check_segment(session_id)}.json.turn.lock"

    def checkpoints_dir(self, session_id: str) -> Path:
        """``<root>/sessions/.checkpoints/<id>/``."""
        return self.sessions / ".checkpoints" / check_segment(session_id)

    def ensure(self) -> None:
        """Create ``<root>/sessions/``."""
        self.sessions.mkdir(parents=True, exist_ok=True)

    # -- reading ------------------------------------------------------------------------------

    def read(self, session_id: str) -> StoredSession | None:
        """The validated session, or None when the file does not exist.

        Raises:
            SessionDataError: the file is not a valid JSON v1 session (or not readable).
        """
        path = self.session_path(session_id)
        try:
            raw = read_regular_file(path)
        except FileNotFoundError:
            return None
        except OSError as error:
            raise SessionDataError(
                f"Cannot read JSON v1 session file {path}: {error}", session_id=session_id
            ) from None
        return parse_session(raw, session_id)

    def read_revision(self, session_id: str) -> int | None:
        """The revision on disk (0 when the file has none), or None when there is no file."""
        session = self.read(session_id)
        return None if session is None else session.get("revision", 0)

    def session_ids(self) -> list[str]:
        """The ids of every ``*.json`` regular file under ``sessions/``, sorted."""
        try:
            entries = list(self.sessions.iterdir())
        except FileNotFoundError:
            return []
        ids = [
            entry.name[: -len(".json")]
            for entry in entries
            if entry.name.endswith(".json") and entry.is_file()
        ]
        return sorted(ids)

    def read_all(self) -> Iterator[StoredSession]:
        """Every valid session; invalid files are skipped with a warning on ``actoviq.compat``."""
        for session_id in self.session_ids():
            try:
                session = self.read(session_id)
            except SessionDataError as error:
                _log.warning("skipping JSON v1 session file %s: %s", session_id, error.message)
                continue
            if session is not None:
                yield session

    # -- writing ------------------------------------------------------------------------------

    def locked(self, session_id: str, action: Callable[[], R]) -> R:
        """Run ``action`` while holding the session's write lock."""
        self.ensure()
        lock = FileLock(
            self.lock_path(session_id),
            timeout=self.lock_timeout,
            stale_after=self.lock_stale_after,
        )
        with lock.held():
            return action()

    def write(self, session: StoredSession) -> None:
        """Write ``session`` atomically (the caller holds the lock)."""
        path = self.session_path(session["id"])
        write_atomic(path, dumps_session(session), durable=self.durable)

    def remove(self, session_id: str) -> bool:
        """Delete the session file; False when it did not exist (the caller holds the lock)."""
        try:
            self.session_path(session_id).unlink()
        except FileNotFoundError:
            return False
        return True
