"""The JSON v1 session shapes (spec 04 §3.10) and their validation on load.

A session file is a plain JSON object; these ``TypedDict`` s name its keys (the reference's
camelCase). Unknown keys are kept: a file written by another JSON v1 writer round-trips.
"""

from __future__ import annotations

import json
from typing import Any, Final, Literal, NotRequired, TypedDict, cast

from actoviq.compat.errors import SessionDataError
from actoviq.core import MAX_WIRE_DEPTH, JsonObject, JsonValueError, loads_strict
from actoviq.providers.legacy import MessageParam

__all__ = [
    "FILE_MAX_DEPTH",
    "JOURNAL_KEY",
    "SessionCheckpoint",
    "SessionCheckpointSummary",
    "SessionStatus",
    "SessionSummary",
    "StoredRunSummary",
    "StoredSession",
    "TitleSource",
    "dumps_session",
    "parse_session",
    "validate_session",
]

FILE_MAX_DEPTH: Final = MAX_WIRE_DEPTH + 24
"""How deep a session file may nest: a wire-depth value inside the file's own envelope."""

JOURNAL_KEY: Final = "actoviqJournal"
"""The top-level key where the Python store keeps its lossless journal (see ``journal.py``)."""

SessionStatus = Literal["active", "idle", "closed"]
TitleSource = Literal["auto", "manual"]
_STATUSES: Final = frozenset({"active", "idle", "closed"})
_TITLE_SOURCES: Final = frozenset({"auto", "manual"})


class StoredRunSummary(TypedDict):
    """One entry of ``runs``: what a finished run left in the session."""

    runId: str
    input: Any
    text: str
    stopReason: str | None
    createdAt: str
    completedAt: str
    toolCallCount: int
    usage: NotRequired[dict[str, Any]]


class StoredSession(TypedDict):
    """A JSON v1 session file (``<root>/sessions/<id>.json``)."""

    version: Literal[1]
    revision: int  # absent in old files: read as 0
    id: str
    title: str
    titleSource: TitleSource
    model: str
    systemPrompt: NotRequired[str]
    tags: list[str]
    metadata: dict[str, Any]
    createdAt: str
    updatedAt: str
    lastRunAt: NotRequired[str]
    lastActiveAt: NotRequired[str]
    status: SessionStatus
    messages: list[MessageParam]
    runs: list[StoredRunSummary]
    kind: NotRequired[Literal["main", "worktree", "manager", "agent"]]
    worktreePath: NotRequired[str]
    worktreeBranch: NotRequired[str]
    parentSessionId: NotRequired[str]
    parentMessageId: NotRequired[str]
    branchName: NotRequired[str]
    originalWorkDir: NotRequired[str]


class SessionSummary(TypedDict):
    """What ``list()`` returns per session."""

    id: str
    title: str
    titleSource: TitleSource
    model: str
    createdAt: str
    updatedAt: str
    lastRunAt: NotRequired[str]
    lastActiveAt: NotRequired[str]
    status: SessionStatus
    tags: list[str]
    preview: str
    messageCount: int
    runCount: int
    revision: int


class SessionCheckpoint(TypedDict):
    """``<root>/sessions/.checkpoints/<sessionId>/<checkpointId>.json``."""

    id: str
    label: str
    sessionId: str
    createdAt: str
    snapshot: StoredSession
    fileManifestLocator: NotRequired[str]


class SessionCheckpointSummary(TypedDict):
    """What ``list_checkpoints()`` returns per checkpoint."""

    id: str
    label: str
    createdAt: str


def _fail(session_id: str | None, problem: str) -> SessionDataError:
    label = f'session "{session_id}"' if session_id else "session"
    return SessionDataError(f"Invalid JSON v1 {label}: {problem}.", session_id=session_id)


def validate_session(value: object, expected_id: str | None) -> StoredSession:
    """Check the §3.10 rules; return ``value`` typed (``revision`` defaults to 0).

    Raises:
        SessionDataError: the root is not an object, ``version`` is not 1, ``id`` is empty or
            differs from ``expected_id``, a string field is not a string, ``titleSource`` or
            ``status`` is unknown, ``tags`` is not a list of strings, ``metadata`` is not an
            object, ``messages``/``runs`` are not lists, or ``revision`` is not a safe integer.
    """
    if type(value) is not dict:
        raise _fail(expected_id, "the root must be a JSON object")
    data = cast(dict[str, Any], value)
    if data.get("version") != 1 or type(data.get("version")) is not int:
        raise _fail(expected_id, "version must be 1")
    session_id = data.get("id")
    if not isinstance(session_id, str) or not session_id:
        raise _fail(expected_id, "id must be a non-empty string")
    if expected_id is not None and session_id != expected_id:
        raise _fail(expected_id, f"id {session_id!r} differs from the file name")
    revision = data.setdefault("revision", 0)
    if type(revision) is not int or not 0 <= revision <= 2**53 - 1:
        raise _fail(session_id, "revision must be a non-negative safe integer")
    for key in ("title", "model", "createdAt", "updatedAt"):
        if not isinstance(data.get(key), str):
            raise _fail(session_id, f"{key} must be a string")
    if data.get("titleSource") not in _TITLE_SOURCES:
        raise _fail(session_id, 'titleSource must be "auto" or "manual"')
    if data.get("status") not in _STATUSES:
        raise _fail(session_id, 'status must be "active", "idle" or "closed"')
    tags = data.get("tags")
    if type(tags) is not list or not all(isinstance(t, str) for t in cast(list[Any], tags)):
        raise _fail(session_id, "tags must be a list of strings")
    if type(data.get("metadata")) is not dict:
        raise _fail(session_id, "metadata must be a JSON object")
    if type(data.get("messages")) is not list:
        raise _fail(session_id, "messages must be a list")
    if type(data.get("runs")) is not list:
        raise _fail(session_id, "runs must be a list")
    return cast(StoredSession, data)


def parse_session(raw: bytes, expected_id: str | None) -> StoredSession:
    """Parse and validate one session file's bytes (strict JSON, D2).

    Raises:
        SessionDataError: not UTF-8, not JSON, not strict JSON, or invalid (see
            :func:`validate_session`).
    """
    try:
        value = loads_strict(raw, "session file", max_depth=FILE_MAX_DEPTH)
    except (UnicodeDecodeError, json.JSONDecodeError, JsonValueError) as error:
        raise _fail(expected_id, f"not strict JSON ({error})") from None
    return validate_session(value, expected_id)


def dumps_session(session: StoredSession | JsonObject) -> str:
    r"""The file text: ``JSON.stringify(session, null, 2) + "\\n"`` (UTF-8 kept, no NaN)."""
    try:
        return json.dumps(session, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    except (TypeError, ValueError, RecursionError) as error:
        raise SessionDataError(
            f"Session {session.get('id')!r} is not storable as strict JSON: {error}"
        ) from None
