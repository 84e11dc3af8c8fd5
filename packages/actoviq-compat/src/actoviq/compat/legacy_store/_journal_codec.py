"""The session journal inside a JSON v1 file, and the legacy projection of what is appended.

A JSON v1 file holds Anthropic-style ``messages`` and ``runs``: enough for a 0.x reader, not for
the runtime (item ids, kinds, exact canonical payloads, snapshots). The Python store keeps those
in one extra top-level key, :data:`~actoviq.compat.legacy_store.shapes.JOURNAL_KEY`::

    "actoviqJournal": {
      "schemaVersion": 1,
      "items": [{"itemId", "kind", "createdAt", "payload"}, ...],      # sequence = position + 1
      "snapshots": [{"throughSequence", "revision", "state", "createdAt"}, ...],
      "covers": {"messages": n, "messagesSha256": "...", "runs": r}
    }

and mirrors every appended canonical item into ``messages`` (and every ``legacy_run`` entry into
``runs``), so a 0.x reader, the reference SDK and the JSON v1 migrator still see the conversation.

``covers`` says how much of ``messages``/``runs`` the journal accounts for. What another JSON v1
writer appended after that (a rollback routed writes back to a 0.x writer) is read as journal
entries with the migrator's conversion and ids (``json-v1:message:<m>:<b>``,
``json-v1:run:<r>``), and written into the journal by the next write. A file with no journal is
the case ``covers = 0``: every message and run is read that way. If the covered messages were
rewritten by another writer (the hash differs), the file is refused: the two histories cannot
be merged safely.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, Final, cast

import attrs

from actoviq.compat._messages import append_blocks
from actoviq.compat.legacy_store.shapes import FILE_MAX_DEPTH, JOURNAL_KEY, StoredSession
from actoviq.core import (
    ITEM_TYPES,
    CanonicalItem,
    ItemValidationError,
    JsonObject,
    JsonValue,
    TextItem,
    UnknownItemTypeError,
    dumps_canonical,
    item_from_json,
)
from actoviq.providers.legacy import to_legacy_message_param
from actoviq.runtime import NewSessionItem, SessionSnapshot, StorageDataError, StoredSessionItem
from actoviq.storage.sqlite.legacy import convert_legacy_json_v1_message

__all__ = [
    "JOURNAL_SCHEMA_VERSION",
    "LEGACY_RUN_KIND",
    "Journal",
    "decode_journal",
    "encode_journal",
    "project_entries",
]

JOURNAL_SCHEMA_VERSION: Final = 1
LEGACY_RUN_KIND: Final = "legacy_run"


@attrs.define(kw_only=True)
class Journal:
    """A session's journal as read from its file (``extras`` are derived, not yet written).

    Every read parses the file again, so the payloads handed out are never shared.
    """

    items: list[JsonObject]
    snapshots: list[JsonObject]
    extras: list[JsonObject]
    covered_runs: int

    @property
    def last_sequence(self) -> int:
        """The sequence of the newest entry (journaled and derived)."""
        return len(self.items) + len(self.extras)

    def entries(self) -> list[JsonObject]:
        """Every entry in sequence order."""
        return [*self.items, *self.extras]

    def stored(self, start: int = 0, stop: int | None = None) -> tuple[StoredSessionItem, ...]:
        """Entries ``start+1 .. stop`` as :class:`StoredSessionItem` s."""
        entries = self.entries()[start:stop]
        return tuple(
            StoredSessionItem(
                sequence=start + offset + 1,
                item_id=cast(str, entry["itemId"]),
                kind=cast(str, entry["kind"]),
                payload=cast(JsonObject, entry["payload"]),
                created_at=cast(str, entry["createdAt"]),
            )
            for offset, entry in enumerate(entries)
        )

    def latest_snapshot(self) -> SessionSnapshot | None:
        """The newest snapshot, or None."""
        if not self.snapshots:
            return None
        snap = self.snapshots[-1]
        return SessionSnapshot(
            through_sequence=cast(int, snap["throughSequence"]),
            revision=cast(int, snap["revision"]),
            state=cast(JsonObject, snap["state"]),
            created_at=cast(str, snap["createdAt"]),
        )


def _messages_hash(messages: Sequence[Any]) -> str:
    text = dumps_canonical(cast(JsonValue, list(messages)), "messages", max_depth=FILE_MAX_DEPTH)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _bad(session_id: str, problem: str) -> StorageDataError:
    return StorageDataError(f"Invalid session journal in JSON v1 session {session_id!r}: {problem}")


def _check_entry(session_id: str, value: object, index: int) -> JsonObject:
    if type(value) is not dict:
        raise _bad(session_id, f"item {index} is not an object")
    entry = cast(JsonObject, value)
    for key in ("itemId", "kind", "createdAt"):
        if not isinstance(entry.get(key), str) or not entry[key]:
            raise _bad(session_id, f"item {index} needs a non-empty string {key}")
    if type(entry.get("payload")) is not dict:
        raise _bad(session_id, f"item {index} needs an object payload")
    return entry


def _check_snapshot(session_id: str, value: object, index: int) -> JsonObject:
    if type(value) is not dict:
        raise _bad(session_id, f"snapshot {index} is not an object")
    snap = cast(JsonObject, value)
    for key in ("throughSequence", "revision"):
        if type(snap.get(key)) is not int or cast(int, snap[key]) < 0:
            raise _bad(session_id, f"snapshot {index} needs a non-negative integer {key}")
    if type(snap.get("state")) is not dict or not isinstance(snap.get("createdAt"), str):
        raise _bad(session_id, f"snapshot {index} needs an object state and a createdAt")
    return snap


def _derived(session: StoredSession, covered_messages: int, covered_runs: int) -> list[JsonObject]:
    """Journal entries for messages and runs no journal write accounted for (migrator rules)."""
    session_id = session["id"]
    fallback = session["createdAt"]  # a string in every validated file
    label = f"JSON v1 session {session_id}"
    entries: list[JsonObject] = []
    messages = cast(list[JsonValue], session["messages"])
    for m in range(covered_messages, len(messages)):
        message = messages[m]
        stamp = fallback
        if type(message) is dict and isinstance(message.get("createdAt"), str):
            stamp = cast(str, message["createdAt"])
        for b, payload in enumerate(
            convert_legacy_json_v1_message(message, f"{label} message {m}")
        ):
            entries.append(
                {
                    "itemId": f"json-v1:message:{m}:{b}",
                    "kind": cast(str, payload["type"]),
                    "createdAt": stamp,
                    "payload": payload,
                }
            )
    runs = cast(list[JsonValue], session["runs"])
    for r in range(covered_runs, len(runs)):
        run = runs[r]
        if type(run) is not dict:
            raise StorageDataError(f"Invalid {label} run {r}: a run must be a JSON object.")
        stamp = run.get("createdAt")
        entries.append(
            {
                "itemId": f"json-v1:run:{r}",
                "kind": LEGACY_RUN_KIND,
                "createdAt": stamp if isinstance(stamp, str) else fallback,
                "payload": run,
            }
        )
    return entries


def decode_journal(session: StoredSession) -> Journal:
    """Read the journal of a validated session file (a file without one has an empty journal).

    Raises:
        StorageDataError: the journal is malformed, or the messages it covers were rewritten.
    """
    session_id = session["id"]
    raw = cast(JsonObject, session).get(JOURNAL_KEY)
    if raw is None:
        return Journal(items=[], snapshots=[], extras=_derived(session, 0, 0), covered_runs=0)
    if type(raw) is not dict:
        raise _bad(session_id, "it must be an object")
    journal = cast(JsonObject, raw)
    if journal.get("schemaVersion") != JOURNAL_SCHEMA_VERSION:
        raise _bad(session_id, f"unsupported schemaVersion {journal.get('schemaVersion')!r}")
    items_raw, snaps_raw, covers = (
        journal.get("items"),
        journal.get("snapshots"),
        journal.get("covers"),
    )
    if type(items_raw) is not list or type(snaps_raw) is not list or type(covers) is not dict:
        raise _bad(session_id, "items and snapshots must be lists and covers an object")
    items = [_check_entry(session_id, v, i) for i, v in enumerate(cast(list[Any], items_raw))]
    snapshots = [
        _check_snapshot(session_id, v, i) for i, v in enumerate(cast(list[Any], snaps_raw))
    ]
    cover = cast(JsonObject, covers)
    covered_messages, covered_runs = cover.get("messages"), cover.get("runs")
    if type(covered_messages) is not int or type(covered_runs) is not int:
        raise _bad(session_id, "covers needs integer messages and runs")
    messages, runs = session["messages"], session["runs"]
    if not 0 <= covered_messages <= len(messages) or not 0 <= covered_runs <= len(runs):
        raise StorageDataError(
            f"JSON v1 session {session_id!r}: messages or runs were removed by another writer "
            "after the session journal was written; restore the file from a backup or migrate "
            "it again."
        )
    if _messages_hash(messages[:covered_messages]) != cover.get("messagesSha256"):
        raise StorageDataError(
            f"JSON v1 session {session_id!r}: messages were rewritten by another writer after "
            "the session journal was written; restore the file from a backup or migrate it "
            "again."
        )
    return Journal(
        items=items,
        snapshots=snapshots,
        extras=_derived(session, covered_messages, covered_runs),
        covered_runs=covered_runs,
    )


def _legacy_param(payload: JsonObject) -> tuple[str, list[Any]] | None:
    """``(role, blocks)`` of one canonical payload, or None (not canonical, or a system text)."""
    if payload.get("type") not in ITEM_TYPES:
        return None
    try:
        item: CanonicalItem = item_from_json(payload)
    except (ItemValidationError, UnknownItemTypeError):
        return None
    if isinstance(item, TextItem) and item.role == "system":
        return None  # the system prompt lives in ``systemPrompt``, never in messages
    param = to_legacy_message_param(item)
    return param["role"], list(param["content"])


def project_entries(session: StoredSession, new: Sequence[NewSessionItem]) -> None:
    """Mirror appended entries into ``messages`` / ``runs`` (in place)."""
    messages = cast(list[Any], session["messages"])
    runs = cast(list[Any], session["runs"])
    for entry in new:
        if entry.kind == LEGACY_RUN_KIND:
            runs.append(entry.payload)
            continue
        projected = _legacy_param(entry.payload)
        if projected is not None:
            append_blocks(messages, *projected)


def encode_journal(session: StoredSession, journal: Journal) -> JsonObject:
    """The journal object to store, covering the session's current messages and runs."""
    encoded: dict[str, Any] = {
        "schemaVersion": JOURNAL_SCHEMA_VERSION,
        "items": journal.entries(),
        "snapshots": journal.snapshots,
        "covers": {
            "messages": len(session["messages"]),
            "messagesSha256": _messages_hash(session["messages"]),
            "runs": len(session["runs"]),
        },
    }
    return cast(JsonObject, encoded)
