"""Legacy JSON v1 session files (spec 04 §3.10-3.11): reading and conversion to canonical items.

A JSON v1 root holds ``sessions/<sessionId>.json`` files (``version: 1``) whose ``messages`` are
Anthropic-style ``{role, content}`` messages. :func:`convert_legacy_json_v1_message` turns one
message into canonical item payloads, each tagged ``metadata.legacyJsonV1 = {role, blockIndex}``;
thinking signatures and encrypted content are dropped.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import cast

import attrs

from actoviq.core import (
    MAX_WIRE_DEPTH,
    JsonObject,
    JsonValue,
    find_json_violation,
    json_value_error,
)
from actoviq.runtime.stores import NewSessionItem, StorageDataError
from actoviq.runtime.stores.validation import json_data_error

__all__ = [
    "EPOCH_FALLBACK",
    "LegacySessionFile",
    "convert_legacy_json_v1_message",
    "plan_items",
    "read_legacy_session_file",
]

EPOCH_FALLBACK = "1970-01-01T00:00:00.000Z"
_DROPPED_THINKING_KEYS = ("signature", "encrypted_content")


def _source(block: JsonObject) -> JsonObject | None:
    source = block.get("source")
    if type(source) is not dict:
        return None
    kind = source.get("type")
    if kind == "url" and isinstance(source.get("url"), str):
        return {"kind": "url", "url": source["url"]}
    if kind == "base64":
        media, data = source.get("media_type"), source.get("data")
        if isinstance(media, str) and isinstance(data, str):
            return {"kind": "base64", "mediaType": media, "data": data}
        return None
    if kind in ("file", "file_id"):
        file_id = source.get("file_id", source.get("fileId"))
        if isinstance(file_id, str) and file_id:
            return {"kind": "file", "fileId": file_id}
    return None


def _raw(role: str, block: JsonValue) -> JsonObject:
    return {"type": "raw", "provider": "legacy", "value": {"role": role, "content": block}}


def _convert_block(role: str, block: JsonValue, label: str) -> JsonObject:
    if type(block) is not dict or not isinstance(block.get("type"), str):
        return _raw(role, block)
    kind = block["type"]
    if kind == "text":
        if not isinstance(block.get("text"), str):
            raise StorageDataError(f"Invalid {label}: text block must have a string text.")
        return {"type": "text", "role": role, "text": block["text"]}
    if kind == "thinking":
        opaque = {k: v for k, v in block.items() if k not in _DROPPED_THINKING_KEYS}
        summary = block.get("thinking")
        item: JsonObject = {"type": "reasoning", "provider": "legacy", "opaque": opaque}
        if isinstance(summary, str):
            item["summary"] = summary
        return item
    if kind == "tool_use":
        call_id, name, args = block.get("id"), block.get("name"), block.get("input")
        if not (isinstance(call_id, str) and call_id and isinstance(name, str) and name):
            raise StorageDataError(f"Invalid {label}: tool_use needs a non-empty id and name.")
        if type(args) is not dict:
            raise StorageDataError(f"Invalid {label}: tool_use input must be a JSON object.")
        return {"type": "tool_call", "id": call_id, "name": name, "input": args}
    if kind == "tool_result":
        call_id = block.get("tool_use_id")
        if not (isinstance(call_id, str) and call_id):
            raise StorageDataError(f"Invalid {label}: tool_result needs a tool_use_id.")
        return {
            "type": "tool_result",
            "callId": call_id,
            "status": "error" if block.get("is_error") is True else "success",
            "output": block.get("content"),
        }
    if kind in ("document", "image"):
        source = _source(block)
        if source is None:
            return _raw(role, block)
        converted: JsonObject = {"type": kind, "role": role, "source": source}
        if kind == "document":
            if isinstance(block.get("name"), str):
                converted["name"] = block["name"]
            if source["kind"] == "base64":
                converted["mediaType"] = source["mediaType"]
        return converted
    return _raw(role, block)


def convert_legacy_json_v1_message(message: object, label: str = "message") -> list[JsonObject]:
    """Convert one legacy ``{role, content}`` message to canonical item payloads (wire JSON).

    Raises:
        StorageDataError: the role is not user/assistant, the content is neither a string nor a
            list, a block is not lossless JSON, or a known block is malformed.

    Example:
        >>> convert_legacy_json_v1_message({"role": "user", "content": "hi"})
        [{'type': 'text', 'role': 'user', 'text': 'hi', 'metadata': {'legacyJsonV1': \
{'role': 'user', 'blockIndex': 0}}}]
    """
    if type(message) is not dict:
        raise StorageDataError(f"Invalid {label}: a message must be a JSON object.")
    body = cast(JsonObject, message)
    role = body.get("role")
    if role not in ("user", "assistant"):
        raise StorageDataError(f'Invalid {label}: role must be "user" or "assistant".')
    role = cast(str, role)
    content = body.get("content")
    if isinstance(content, str):
        blocks: list[JsonValue] = [{"type": "text", "text": content}]
    elif type(content) is list:
        blocks = list(cast(list[JsonValue], content)) or [{"type": "text", "text": ""}]
    else:
        raise StorageDataError(f"Invalid {label}: content must be a string or a list.")
    items: list[JsonObject] = []
    for index, block in enumerate(blocks):
        if find_json_violation(block) is not None:
            raise StorageDataError(f"Invalid {label}: block {index} is not lossless JSON.")
        item = _convert_block(role, block, f"{label} block {index}")
        item["metadata"] = {"legacyJsonV1": {"role": role, "blockIndex": index}}
        items.append(item)
    return items


@attrs.frozen(kw_only=True)
class LegacySessionFile:
    """One planned JSON v1 session file.

    Attributes:
        path: the absolute file path.
        source_key: ``sessions/<file name>`` (POSIX), the ledger key.
        session_id: the file's ``id``.
        content_hash: sha256 hex of the raw bytes.
        created_at: the session's ``createdAt`` (or the epoch fallback).
        metadata: ``{sourceFormat: "hadamard-json-v1", legacy: <file minus messages and runs>}``.
        items: journal entries (converted message blocks, then ``legacy_run`` entries).
        warnings: non-fatal findings (e.g. the file stem differs from the id).
    """

    path: Path
    source_key: str
    session_id: str
    content_hash: str
    created_at: str
    metadata: JsonObject
    items: tuple[NewSessionItem, ...]
    warnings: tuple[str, ...] = ()


def _loads(raw: bytes, path: Path) -> JsonValue:
    def reject(name: str) -> object:
        raise ValueError(f"non-finite number {name}")

    try:
        value = cast(JsonValue, json.loads(raw.decode("utf-8"), parse_constant=reject))
    except (UnicodeDecodeError, ValueError) as error:
        raise StorageDataError(f"Invalid JSON v1 session file {path}: {error}") from None
    except RecursionError:
        raise StorageDataError(
            f"Invalid JSON v1 session file {path}: nested beyond the JSON parser's limit"
        ) from None
    # The strict rules (D2) up front, so a plan names the file instead of a later write failing.
    error = json_value_error(value, "file", max_depth=MAX_WIRE_DEPTH)
    if error is not None:
        problem = json_data_error(value, "file", error)
        raise StorageDataError(f"Invalid JSON v1 session file {path}: {problem.message}")
    return value


def plan_items(parsed: JsonObject, created_at: str, label: str) -> list[NewSessionItem]:
    """The journal entries of one parsed JSON v1 session (messages, then runs)."""
    items: list[NewSessionItem] = []
    for m, message in enumerate(cast(list[JsonValue], parsed["messages"])):
        stamp = created_at
        if type(message) is dict and isinstance(message.get("createdAt"), str):
            stamp = cast(str, message["createdAt"])
        for b, payload in enumerate(
            convert_legacy_json_v1_message(message, f"{label} message {m}")
        ):
            items.append(
                NewSessionItem(
                    item_id=f"json-v1:message:{m}:{b}",
                    kind=cast(str, payload["type"]),
                    payload=payload,
                    created_at=stamp,
                )
            )
    for r, run in enumerate(cast(list[JsonValue], parsed["runs"])):
        if type(run) is not dict:
            raise StorageDataError(f"Invalid {label} run {r}: a run must be a JSON object.")
        run_stamp = run.get("createdAt")
        items.append(
            NewSessionItem(
                item_id=f"json-v1:run:{r}",
                kind="legacy_run",
                payload=run,
                created_at=run_stamp if isinstance(run_stamp, str) else created_at,
            )
        )
    return items


def read_legacy_session_file(path: Path, root: Path) -> LegacySessionFile:
    """Read, validate and convert one JSON v1 session file.

    Raises:
        StorageDataError: unreadable file, invalid JSON, wrong shape or unconvertible message.
    """
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise StorageDataError(f"Cannot read JSON v1 session file {path}: {error}") from None
    parsed = _loads(raw, path)
    label = f"JSON v1 session file {path.name}"
    if type(parsed) is not dict:
        raise StorageDataError(f"Invalid {label}: the root must be an object.")
    if parsed.get("version") != 1 or type(parsed.get("version")) is not int:
        raise StorageDataError(f"Invalid {label}: version must be 1.")
    session_id = parsed.get("id")
    if not (isinstance(session_id, str) and session_id):
        raise StorageDataError(f"Invalid {label}: id must be a non-empty string.")
    if type(parsed.get("messages")) is not list or type(parsed.get("runs")) is not list:
        raise StorageDataError(f"Invalid {label}: messages and runs must be lists.")
    created = parsed.get("createdAt")
    created_at = created if isinstance(created, str) else EPOCH_FALLBACK
    legacy = {k: v for k, v in parsed.items() if k not in ("messages", "runs")}
    warnings = () if path.stem == session_id else (f"file stem {path.stem!r} differs from id",)
    return LegacySessionFile(
        path=path,
        source_key=path.relative_to(root).as_posix(),
        session_id=session_id,
        content_hash=hashlib.sha256(raw).hexdigest(),
        created_at=created_at,
        metadata={"sourceFormat": "hadamard-json-v1", "legacy": legacy},
        items=tuple(plan_items(parsed, created_at, label)),
        warnings=warnings,
    )
