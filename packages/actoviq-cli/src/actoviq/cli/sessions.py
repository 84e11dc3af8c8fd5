"""Session helpers shared by ``actoviq sessions``, ``chat`` and the web page.

A session's transcript is read through the runtime's session adapter (snapshot plus tail, the
same view a run gets). ``reset`` stores an empty snapshot over everything so far: the model sees
a fresh conversation while the journal keeps the history for audit. ``delete`` removes the
session. Usage is summed over the checkpoints of the session's runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from actoviq.cli.environment import CliEnvironment
from actoviq.cli.errors import CliNotFoundError
from actoviq.core import (
    CanonicalItem,
    JsonObject,
    JsonValue,
    TextItem,
    ToolCallItem,
    ToolResultItem,
    Usage,
    normalize_usage_delta,
)
from actoviq.runtime import SessionRecord

__all__ = [
    "delete_session",
    "describe_item",
    "items_json",
    "list_sessions",
    "record_json",
    "reset_session",
    "session_record",
    "session_usage",
    "transcript",
    "usage_json",
    "write_text",
]


def record_json(record: SessionRecord) -> JsonObject:
    """A session record's wire form."""
    return {
        "sessionId": record.session_id,
        "tenantId": record.tenant_id,
        "revision": record.revision,
        "items": record.last_sequence,
        "createdAt": record.created_at,
        "updatedAt": record.updated_at,
    }


async def session_record(env: CliEnvironment, session_id: str) -> SessionRecord:
    """The session's record.

    Raises:
        CliNotFoundError: no such session in the tenant.
    """
    storage = await env.storage()
    record = await storage.sessions.get(tenant_id=env.tenant, session_id=session_id)
    if record is None:
        raise CliNotFoundError(
            f"No session {session_id!r} in {env.settings.storage} (tenant {env.tenant!r}).",
            details={"sessionId": session_id},
        )
    return record


async def list_sessions(env: CliEnvironment, *, limit: int | None = None) -> list[SessionRecord]:
    """The tenant's sessions, most recently updated first."""
    storage = await env.storage()
    return await storage.sessions.list_sessions(tenant_id=env.tenant, limit=limit)


async def transcript(env: CliEnvironment, session_id: str) -> list[CanonicalItem]:
    """The items a run on this session would be given as history.

    Raises:
        CliNotFoundError: no such session (it is not created).
    """
    await session_record(env, session_id)
    store = await env.sessions()
    loaded = await store.load(tenant_id=env.tenant, session_id=session_id)
    return list(loaded.items)


async def reset_session(env: CliEnvironment, session_id: str) -> int:
    """Hide the history from later runs (an empty snapshot); returns the items hidden."""
    storage = await env.storage()
    record = await storage.sessions.get(tenant_id=env.tenant, session_id=session_id)
    if record is None or record.last_sequence == 0:
        return 0
    loaded = await storage.sessions.load(tenant_id=env.tenant, session_id=session_id)
    covered = loaded.snapshot.through_sequence if loaded.snapshot is not None else 0
    hidden = len(await transcript(env, session_id))
    if covered >= record.last_sequence and hidden == 0:
        return 0
    await storage.sessions.compact(
        tenant_id=env.tenant,
        session_id=session_id,
        expected_revision=record.revision,
        through_sequence=record.last_sequence,
        state={"items": [], "reset": True},
    )
    return hidden


async def delete_session(env: CliEnvironment, session_id: str) -> None:
    """Remove the session and its journal.

    Raises:
        CliNotFoundError: no such session.
    """
    storage = await env.storage()
    if not await storage.delete_session(tenant_id=env.tenant, session_id=session_id):
        raise CliNotFoundError(
            f"No session {session_id!r} in {env.settings.storage} (tenant {env.tenant!r}).",
            details={"sessionId": session_id},
        )


async def session_usage(env: CliEnvironment, session_id: str) -> tuple[Usage, int]:
    """``(usage, runs)`` over the checkpoints of the session's runs (newest state per run)."""
    storage = await env.storage()
    records = await storage.checkpoints.list_checkpoints(tenant_id=env.tenant, limit=100_000)
    total, runs = Usage(), 0
    for record in records:
        if record.session_id != session_id:
            continue
        usage = record.state.get("usage")
        if isinstance(usage, dict):
            total = total + normalize_usage_delta(cast(dict[str, Any], usage))
            runs += 1
    return total, runs


def _short(value: JsonValue, limit: int = 120) -> str:
    import json

    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_item(item: CanonicalItem) -> tuple[str, str]:
    """``(speaker, text)`` for showing one transcript item in a terminal."""
    if isinstance(item, TextItem):
        return ("you" if item.role == "user" else item.role), item.text
    if isinstance(item, ToolCallItem):
        return "tool", f"{item.name} {_short(item.input)} ({item.id})"
    if isinstance(item, ToolResultItem):
        return "tool", f"{item.name or item.call_id} -> {item.status}: {_short(item.output)}"
    return item.type, ""


def write_text(target: str, text: str) -> Path:
    """Write ``text`` to ``target`` (``~`` expanded); returns the path (blocking: use a thread)."""
    path = Path(target).expanduser()
    path.write_text(text, "utf-8")
    return path


def usage_json(usage: Usage) -> JsonObject:
    """A usage's wire form."""
    return cast(JsonObject, usage.to_json())


def items_json(items: Sequence[CanonicalItem]) -> list[JsonObject]:
    """Items' wire forms."""
    from actoviq.core import item_to_json

    return [item_to_json(item) for item in items]
