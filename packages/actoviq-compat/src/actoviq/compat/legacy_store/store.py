"""``LegacyJsonV1SessionStore``: read and write 0.x JSON v1 session files (spec 04 §3.10).

The 0.x face of a JSON v1 root: ``create``, ``load``, ``save`` (compare-and-set on ``revision``),
``list``, ``delete``, session checkpoints and the whole-turn lease, with the same lock files and
atomic writes as every other JSON v1 writer. :attr:`LegacyJsonV1SessionStore.sessions` is the
runtime face of the same files (:class:`LegacyJsonV1SessionJournal`), so a host can run the new
runtime with JSON v1 as its only writer until cutover, and route writes back after a rollback.

Example:
    >>> async def main() -> None:  # doctest: +SKIP
    ...     async with LegacyJsonV1SessionStore("state") as store:
    ...         session = await store.create(title="Support chat")
    ...         session["tags"].append("vip")
    ...         await store.save(session)  # revision 1 -> 2; a stale copy would conflict
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import copy
import json
import logging
import os
import time
import uuid
from collections.abc import AsyncGenerator, Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Self, cast

from actoviq.compat.diagnostics import compat_symbol
from actoviq.compat.errors import (
    SessionBusyError,
    SessionConflictError,
    SessionDataError,
    SessionNotFoundError,
)
from actoviq.compat.legacy_store._directory import SessionDirectory
from actoviq.compat.legacy_store._files import (
    LOCK_STALE_S,
    LOCK_TIMEOUT_S,
    break_if_stale,
    check_segment,
    owner_token,
    read_regular_file,
    try_create_exclusive,
    write_atomic,
)
from actoviq.compat.legacy_store.journal import LegacyJsonV1SessionJournal
from actoviq.compat.legacy_store.shapes import (
    FILE_MAX_DEPTH,
    SessionCheckpoint,
    SessionCheckpointSummary,
    SessionSummary,
    StoredSession,
    validate_session,
)
from actoviq.core import JsonValueError, clone_json_value, iso_now
from actoviq.providers.legacy import MessageParam

__all__ = ["LegacyJsonV1SessionStore"]

_log = logging.getLogger("actoviq.compat")
_PREVIEW_CHARS: Final = 160
_TURN_POLL_S: Final = 0.05


def _preview(messages: Iterable[Any]) -> str:
    """The first user text, whitespace collapsed, cut to 160 characters."""
    for entry in messages:
        if type(entry) is not dict:
            continue
        message = cast(dict[str, Any], entry)
        if message.get("role") != "user":
            continue
        content: object = message.get("content")
        text: str | None = content if isinstance(content, str) else None
        if type(content) is list:
            blocks = [cast(dict[str, Any], b) for b in cast(list[Any], content) if type(b) is dict]
            text = next(
                (
                    cast(str, block["text"])
                    for block in blocks
                    if block.get("type") == "text" and isinstance(block.get("text"), str)
                ),
                None,
            )
        if text:
            flat = " ".join(text.split())
            return flat if len(flat) <= _PREVIEW_CHARS else flat[: _PREVIEW_CHARS - 3] + "..."
    return ""


def _summary(session: StoredSession) -> SessionSummary:
    summary: SessionSummary = {
        "id": session["id"],
        "title": session["title"],
        "titleSource": session["titleSource"],
        "model": session["model"],
        "createdAt": session["createdAt"],
        "updatedAt": session["updatedAt"],
        "status": session["status"],
        "tags": list(session["tags"]),
        "preview": _preview(session["messages"]),
        "messageCount": len(session["messages"]),
        "runCount": len(session["runs"]),
        "revision": session.get("revision", 0),
    }
    if "lastRunAt" in session:
        summary["lastRunAt"] = session["lastRunAt"]
    if "lastActiveAt" in session:
        summary["lastActiveAt"] = session["lastActiveAt"]
    return summary


def _strict_copy(session: Mapping[str, Any]) -> StoredSession:
    """A validated deep copy of a session given to ``save`` (strict JSON, §3.10 shape)."""
    try:
        plain = clone_json_value(dict(session), "session", max_depth=FILE_MAX_DEPTH)
    except JsonValueError as error:
        raise SessionDataError(
            f"Session {session.get('id')!r} is not strict JSON: {error}",
            session_id=session.get("id") if isinstance(session.get("id"), str) else None,
        ) from None
    return validate_session(plain, None)


@compat_symbol(
    "LegacyJsonV1SessionStore",
    "actoviq.storage.sqlite.SqliteStorage after a JsonV1Migrator cutover",
)
class LegacyJsonV1SessionStore:
    """The 0.x JSON v1 session store (``<root>/sessions/<id>.json``).

    Args:
        root: the JSON v1 root directory (created on first write).
        lock_timeout: seconds to wait for a session's write lock (reference: 5).
        lock_stale_after: seconds after which a write lock is abandoned (reference: 30).
        turn_heartbeat: seconds between heartbeats of a held turn lease (reference: 5).
        turn_stale_after: seconds after which a turn lease without heartbeat is abandoned.
        turn_timeout: seconds to wait for another process's turn lease before
            :class:`SessionBusyError`.
        durable: fsync every write (file and directory).
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        lock_timeout: float = LOCK_TIMEOUT_S,
        lock_stale_after: float = LOCK_STALE_S,
        turn_heartbeat: float = 5.0,
        turn_stale_after: float = LOCK_STALE_S,
        turn_timeout: float = 30.0,
        durable: bool = True,
    ) -> None:
        self.root = Path(root)
        self._directory = SessionDirectory(
            self.root,
            lock_timeout=lock_timeout,
            lock_stale_after=lock_stale_after,
            durable=durable,
        )
        self._journal_options: dict[str, Any] = {
            "lock_timeout": lock_timeout,
            "lock_stale_after": lock_stale_after,
            "durable": durable,
        }
        self._journal: LegacyJsonV1SessionJournal | None = None
        self._turn_heartbeat = turn_heartbeat
        self._turn_stale_after = turn_stale_after
        self._turn_timeout = turn_timeout
        self._turn_locks: dict[str, asyncio.Lock] = {}

    def __repr__(self) -> str:
        return f"LegacyJsonV1SessionStore({str(self.root)!r})"

    @property
    def sessions(self) -> LegacyJsonV1SessionJournal:
        """The same files as a runtime :class:`~actoviq.runtime.SessionStore` (created once)."""
        if self._journal is None:
            self._journal = LegacyJsonV1SessionJournal(self.root, **self._journal_options)
        return self._journal

    # -- sessions -------------------------------------------------------------------------------

    async def create(
        self,
        *,
        id: str | None = None,
        title: str | None = None,
        model: str | None = None,
        system_prompt: str | None = None,
        tags: Iterable[str] = (),
        metadata: Mapping[str, Any] | None = None,
        initial_messages: Iterable[MessageParam] = (),
    ) -> StoredSession:
        """Create and save a session (it is at revision 1 on disk, like the reference).

        Raises:
            SessionConflictError: a session with that id exists (expected 0, actual its revision).
            UnsafeSessionIdError: ``id`` is not one plain path segment.
        """
        session_id = check_segment(id) if id is not None else str(uuid.uuid4())
        now = iso_now()
        clean_title = (title or "").strip()
        session: dict[str, Any] = {
            "version": 1,
            "revision": 0,
            "id": session_id,
            "title": clean_title or "Untitled Session",
            "titleSource": "manual" if clean_title else "auto",
            "model": model if model is not None else "unknown",
            "tags": list(tags),
            "metadata": dict(metadata or {}),
            "createdAt": now,
            "updatedAt": now,
            "lastActiveAt": now,
            "status": "active",
            "messages": copy.deepcopy(list(initial_messages)),
            "runs": [],
        }
        if system_prompt is not None:
            session["systemPrompt"] = system_prompt
        stored = cast(StoredSession, session)
        await self.save(stored)
        return stored

    async def get(self, session_id: str) -> StoredSession | None:
        """The session, or None when there is no file.

        Raises:
            SessionDataError: the file is not a valid JSON v1 session.
            UnsafeSessionIdError: ``session_id`` is not one plain path segment.
        """
        check_segment(session_id)
        return await asyncio.to_thread(self._directory.read, session_id)

    async def load(self, session_id: str) -> StoredSession:
        """The session (``revision`` 0 when the file has none).

        Raises:
            SessionNotFoundError: no such session.
            SessionDataError: the file is not a valid JSON v1 session.
            UnsafeSessionIdError: ``session_id`` is not one plain path segment.
        """
        session = await self.get(session_id)
        if session is None:
            raise SessionNotFoundError(session_id)
        return session

    async def save(self, session: StoredSession) -> None:
        """Write ``session`` if its ``revision`` is the one on disk (0 for a new file).

        On success the file holds ``revision + 1`` and ``session["revision"]`` is updated.

        Raises:
            SessionConflictError: another writer saved first (``SESSION_CONFLICT``); nothing
                was written.
            SessionDataError: ``session`` is not a valid, strict-JSON StoredSession.
            SessionBusyError: the write lock stayed held for ``lock_timeout``.
        """
        candidate = _strict_copy(cast(Mapping[str, Any], session))
        session_id = check_segment(candidate["id"])
        expected = candidate.get("revision", 0)
        directory = self._directory

        def save() -> int:
            current = directory.read_revision(session_id)
            if (expected != 0) if current is None else (current != expected):
                raise SessionConflictError(
                    session_id, expected_revision=expected, actual_revision=current
                )
            candidate["revision"] = expected + 1
            directory.write(candidate)
            return expected + 1

        session["revision"] = await asyncio.to_thread(directory.locked, session_id, save)

    async def delete(self, session_id: str, *, expected_revision: int | None = None) -> bool:
        """Delete the session file (its checkpoints stay); False when there was none.

        Raises:
            UnsafeSessionIdError: ``session_id`` is not one plain path segment (nothing is
                touched).
            SessionConflictError: ``expected_revision`` is given and differs from the file's.
        """
        check_segment(session_id)
        directory = self._directory

        def delete() -> bool:
            if expected_revision is not None:
                current = directory.read_revision(session_id)
                if current != expected_revision:
                    raise SessionConflictError(
                        session_id, expected_revision=expected_revision, actual_revision=current
                    )
            return directory.remove(session_id)

        return await asyncio.to_thread(directory.locked, session_id, delete)

    async def list(self) -> builtins.list[SessionSummary]:
        """Summaries of every valid session, newest ``lastRunAt`` (else ``updatedAt``) first.

        Files that are not valid sessions are skipped with a warning on the ``actoviq.compat``
        logger.
        """

        def listing() -> builtins.list[SessionSummary]:
            summaries = [_summary(session) for session in self._directory.read_all()]
            summaries.sort(key=lambda s: s.get("lastRunAt") or s["updatedAt"], reverse=True)
            return summaries

        return await asyncio.to_thread(listing)

    # -- checkpoints ----------------------------------------------------------------------------

    async def save_checkpoint(self, session_id: str, label: str) -> SessionCheckpoint:
        """Snapshot the session into ``sessions/.checkpoints/<id>/<checkpointId>.json``."""
        session = await self.load(session_id)
        checkpoint: SessionCheckpoint = {
            "id": str(uuid.uuid4()),
            "label": label,
            "sessionId": session_id,
            "createdAt": iso_now(),
            "snapshot": session,
        }
        folder = self._directory.checkpoints_dir(session_id)
        path = folder / f"{checkpoint['id']}.json"
        text = json.dumps(checkpoint, indent=2, ensure_ascii=False, allow_nan=False) + "\n"

        def write() -> None:
            folder.mkdir(parents=True, exist_ok=True)
            write_atomic(path, text, durable=self._directory.durable)

        await asyncio.to_thread(write)
        return checkpoint

    async def load_checkpoint(self, session_id: str, checkpoint_id: str) -> SessionCheckpoint:
        """A saved checkpoint (its snapshot validated as a session).

        Raises:
            SessionNotFoundError: no such checkpoint.
            SessionDataError: the checkpoint file is invalid.
        """
        path = self._directory.checkpoints_dir(session_id) / (
            f"{check_segment(checkpoint_id, 'checkpointId')}.json"
        )
        try:
            raw = await asyncio.to_thread(read_regular_file, path)
        except FileNotFoundError:
            raise SessionNotFoundError(f"{session_id} checkpoint {checkpoint_id}") from None
        try:
            value = json.loads(raw)
        except ValueError as error:
            raise SessionDataError(
                f"Invalid checkpoint {checkpoint_id}: {error}", session_id=session_id
            ) from None
        if type(value) is not dict or "snapshot" not in value:
            raise SessionDataError(
                f"Invalid checkpoint {checkpoint_id}: no snapshot", session_id=session_id
            )
        checkpoint = cast(SessionCheckpoint, value)
        validate_session(checkpoint["snapshot"], session_id)
        return checkpoint

    async def list_checkpoints(self, session_id: str) -> builtins.list[SessionCheckpointSummary]:
        """The session's checkpoints, newest first (unreadable files skipped)."""
        folder = self._directory.checkpoints_dir(session_id)

        def listing() -> builtins.list[SessionCheckpointSummary]:
            found: builtins.list[SessionCheckpointSummary] = []
            try:
                files = sorted(folder.glob("*.json"))
            except FileNotFoundError:
                return found
            for file in files:
                try:
                    data = json.loads(file.read_bytes())
                    found.append(
                        {"id": data["id"], "label": data["label"], "createdAt": data["createdAt"]}
                    )
                except (OSError, ValueError, KeyError, TypeError) as error:
                    _log.warning("skipping checkpoint file %s: %s", file, error)
            found.sort(key=lambda c: c["createdAt"], reverse=True)
            return found

        return await asyncio.to_thread(listing)

    async def delete_checkpoint(self, session_id: str, checkpoint_id: str) -> bool:
        """Delete one checkpoint file; False when there was none."""
        path = self._directory.checkpoints_dir(session_id) / (
            f"{check_segment(checkpoint_id, 'checkpointId')}.json"
        )

        def delete() -> bool:
            try:
                path.unlink()
            except FileNotFoundError:
                return False
            return True

        return await asyncio.to_thread(delete)

    async def restore_checkpoint(self, session_id: str, checkpoint_id: str) -> StoredSession:
        """Put a checkpoint's snapshot back as the session (compare-and-set on the current one).

        Raises:
            SessionConflictError: the session changed while restoring.
        """
        checkpoint = await self.load_checkpoint(session_id, checkpoint_id)
        current = await self.get(session_id)
        restored = copy.deepcopy(checkpoint["snapshot"])
        restored["revision"] = current.get("revision", 0) if current is not None else 0
        await self.save(restored)
        return restored

    # -- the whole-turn lease -------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def turn_lease(self, session_id: str) -> AsyncGenerator[str, None]:
        """Hold ``<id>.json.turn.lock`` for a whole run (one turn writer per session).

        Within this process callers queue on an ``asyncio.Lock``; across processes the lease
        file is retried until ``turn_timeout``. While held, its mtime is refreshed every
        ``turn_heartbeat`` seconds; a lease not refreshed for ``turn_stale_after`` seconds
        belongs to a crashed process and is broken. Yields the owner token.

        Raises:
            SessionBusyError: another process held the lease for ``turn_timeout``.
        """
        path = self._directory.turn_lock_path(session_id)
        key = str(path)
        lock = self._turn_locks.setdefault(key, asyncio.Lock())
        async with lock:
            token = owner_token()
            await self._acquire_turn(path, token)
            beat = asyncio.get_running_loop().create_task(self._heartbeat(path, token))
            try:
                yield token
            finally:
                beat.cancel()
                await asyncio.wait({beat})
                await asyncio.to_thread(_release_turn, path, token)

    async def _acquire_turn(self, path: Path, token: str) -> None:
        body = json.dumps({"owner": token, "pid": os.getpid(), "acquiredAt": iso_now()})
        deadline = time.monotonic() + self._turn_timeout
        await asyncio.to_thread(self._directory.ensure)
        while True:
            if await asyncio.to_thread(try_create_exclusive, path, body):
                return
            if await asyncio.to_thread(break_if_stale, path, self._turn_stale_after):
                continue
            if time.monotonic() >= deadline:
                raise SessionBusyError(
                    f"Session turn lease {path.name} is held by another process (waited "
                    f"{self._turn_timeout:g}s); retry when its run has finished."
                )
            await asyncio.sleep(_TURN_POLL_S)

    async def _heartbeat(self, path: Path, token: str) -> None:
        while True:
            await asyncio.sleep(self._turn_heartbeat)
            if not await asyncio.to_thread(_touch_if_owned, path, token):
                _log.warning("turn lease %s was taken over; CAS still guards the session", path)
                return

    # -- lifecycle ------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Nothing to release (files are opened per operation); idempotent."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def _touch_if_owned(path: Path, token: str) -> bool:
    try:
        if token not in path.read_text("utf-8"):
            return False
        os.utime(path)
    except FileNotFoundError:
        return False
    return True


def _release_turn(path: Path, token: str) -> None:
    try:
        if token in path.read_text("utf-8"):
            path.unlink(missing_ok=True)
    except FileNotFoundError:
        return
