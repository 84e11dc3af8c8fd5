"""The published JSON Schema of ``actoviq --json`` output (``docs/schemas/cli-output.schema.json``).

Every line ``--json`` writes is one document with a ``kind``: ``event`` (a surface semantic
event, embedded schema), ``result``, ``error``, the ``sessions``/``session``/``session.*``
documents, ``usage``, ``migration``, ``inspect.*``, ``serve.listening`` and ``mcp.listening``.
``actoviq sessions export`` writes canonical items, one per line (the embedded item schema).
"""

from __future__ import annotations

from typing import Any, Final

from actoviq.core import JsonObject, items_json_schema
from actoviq.surfaces import surface_semantic_event_json_schema

__all__ = ["CLI_OUTPUT_SCHEMA_ID", "ITEM_SCHEMA_ID", "cli_output_json_schema"]

CLI_OUTPUT_SCHEMA_ID: Final = "urn:actoviq:schema:cli-output"
ITEM_SCHEMA_ID: Final = "urn:actoviq:schema:canonical-item"
_EVENT_ID: Final = "urn:actoviq:schema:surface-semantic-event"

_STRING: Final[JsonObject] = {"type": "string"}
_INT: Final[JsonObject] = {"type": "integer", "minimum": 0}
_BOOL: Final[JsonObject] = {"type": "boolean"}
_OBJECT: Final[JsonObject] = {"type": "object"}
_USAGE: Final[JsonObject] = {"$ref": "#/$defs/usage"}
_ITEM: Final[JsonObject] = {"$ref": ITEM_SCHEMA_ID}


def _doc(kind: str, required: dict[str, Any], optional: dict[str, Any] | None = None) -> JsonObject:
    properties: dict[str, Any] = {"kind": {"const": kind}, **required, **(optional or {})}
    return {
        "type": "object",
        "required": ["kind", *required],
        "properties": properties,
        "additionalProperties": False,
    }


def _array(items: JsonObject) -> JsonObject:
    return {"type": "array", "items": items}


def _session_record() -> dict[str, Any]:
    return {
        "sessionId": _STRING,
        "tenantId": _STRING,
        "revision": _INT,
        "items": _INT,
        "createdAt": _STRING,
        "updatedAt": _STRING,
    }


def _interruption() -> JsonObject:
    return {
        "type": "object",
        "required": ["id", "kind", "reason"],
        "properties": {
            "id": _STRING,
            "kind": {"enum": ["approval", "reconciliation"]},
            "reason": _STRING,
            "callId": _STRING,
            "toolName": _STRING,
        },
        "additionalProperties": False,
    }


def _documents() -> dict[str, JsonObject]:
    usage_pair: JsonObject = {
        "type": "object",
        "required": ["runs", "usage"],
        "properties": {"runs": _INT, "usage": _USAGE},
        "additionalProperties": False,
    }
    middleware_entry: JsonObject = {
        "type": "object",
        "required": ["name", "stage", "priority", "stageIndex", "chainIndex"],
        "properties": {
            "name": _STRING,
            "stage": _STRING,
            "priority": {"type": "integer"},
            "stageIndex": _INT,
            "chainIndex": _INT,
        },
        "additionalProperties": False,
    }
    return {
        "event": _doc("event", {"event": {"$ref": _EVENT_ID}}),
        "result": _doc(
            "result",
            {
                "runId": _STRING,
                "agentId": _STRING,
                "status": {"enum": ["completed", "interrupted", "cancelled"]},
                "output": {},
                "usage": _USAGE,
                "interruptions": _array({"$ref": "#/$defs/interruption"}),
                "exitCode": {"enum": [0, 3, 130]},
            },
            {"sessionId": _STRING},
        ),
        "error": _doc(
            "error",
            {
                "error": {
                    "type": "object",
                    "required": ["name", "code", "message"],
                    "properties": {
                        "name": _STRING,
                        "code": {"type": "string", "pattern": "^[A-Z][A-Z0-9_]*$"},
                        "message": _STRING,
                        "retryable": _BOOL,
                        "details": _OBJECT,
                    },
                    "additionalProperties": False,
                },
                "exitCode": {"enum": [1, 2, 3, 4, 5, 130]},
            },
        ),
        "sessions": _doc(
            "sessions",
            {"tenantId": _STRING, "sessions": _array({"$ref": "#/$defs/sessionRecord"})},
        ),
        "session": _doc("session", {**_session_record(), "transcript": _array(_ITEM)}),
        "sessionSaved": _doc(
            "session.saved", {"sessionId": _STRING, "path": _STRING, "items": _INT}
        ),
        "sessionDeleted": _doc("session.deleted", {"sessionId": _STRING}),
        "sessionReset": _doc("session.reset", {"sessionId": _STRING, "hidden": _INT}),
        "sessionHistory": _doc("session.history", {"sessionId": _STRING, "items": _array(_ITEM)}),
        "usageReport": _doc(
            "usage", {"sessionId": _STRING, "chat": usage_pair, "session": usage_pair}
        ),
        "migration": _doc(
            "migration",
            {
                "action": {"enum": ["migrate", "dry-run", "verify", "rollback"]},
                "report": _OBJECT,
                "exitCode": {"enum": [0, 1]},
            },
        ),
        "inspectModels": _doc(
            "inspect.models",
            {
                "providers": _array(
                    {
                        "type": "object",
                        "required": ["id", "kind", "configured", "available"],
                        "properties": {
                            "id": _STRING,
                            "kind": _STRING,
                            "configured": _BOOL,
                            "available": _BOOL,
                            "keyVariable": _STRING,
                            "baseUrl": _STRING,
                            "hint": _STRING,
                        },
                        "additionalProperties": False,
                    }
                )
            },
        ),
        "inspectModel": _doc(
            "inspect.model", {"model": _STRING, "provider": _STRING, "capabilities": _OBJECT}
        ),
        "inspectMiddleware": _doc(
            "inspect.middleware",
            {"registry": _array(_STRING), "middleware": _array(middleware_entry)},
            {"agent": _STRING},
        ),
        "inspectServices": _doc(
            "inspect.services",
            {
                "storage": _STRING,
                "tenantId": _STRING,
                "checkpoints": _STRING,
                "services": _array(
                    {
                        "type": "object",
                        "required": ["id", "initialized", "pending", "description"],
                        "properties": {
                            "id": _STRING,
                            "initialized": _BOOL,
                            "pending": _BOOL,
                            "description": {"type": ["string", "null"]},
                        },
                        "additionalProperties": False,
                    }
                ),
            },
        ),
        "inspectAgent": _doc(
            "inspect.agent",
            {
                "agent": _STRING,
                "reference": _STRING,
                "source": {"enum": ["config", "module", "builtin"]},
                "model": _STRING,
                "digest": {"type": "string", "pattern": "^sha256v1:"},
                "declaration": _OBJECT,
                "tools": _array(
                    {
                        "type": "object",
                        "required": ["name", "description", "effect", "requiresApproval"],
                        "properties": {
                            "name": _STRING,
                            "description": _STRING,
                            "effect": _STRING,
                            "requiresApproval": _BOOL,
                            "inputSchema": _OBJECT,
                            "timeoutMs": {"type": "number"},
                        },
                        "additionalProperties": False,
                    }
                ),
                "middleware": _array(middleware_entry),
            },
        ),
        "serveListening": _doc(
            "serve.listening",
            {
                "url": _STRING,
                "host": _STRING,
                "port": _INT,
                "token": _STRING,
                "agent": _STRING,
            },
        ),
        "mcpListening": _doc("mcp.listening", {"url": _STRING, "agent": _STRING}),
    }


def cli_output_json_schema() -> JsonObject:
    """The schema every ``--json`` line validates against (JSON Schema 2020-12)."""
    documents = _documents()
    usage_fields = (
        "requests",
        "inputTokens",
        "outputTokens",
        "totalTokens",
        "cacheReadTokens",
        "cacheWriteTokens",
        "reasoningTokens",
        "audioInputTokens",
        "audioOutputTokens",
    )
    usage: JsonObject = {
        "type": "object",
        "properties": {**dict.fromkeys(usage_fields, _INT), "costUsd": {"type": "number"}},
        "required": ["requests", "inputTokens", "outputTokens"],
        "additionalProperties": False,
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": CLI_OUTPUT_SCHEMA_ID,
        "title": "actoviq --json output: one document per line",
        "oneOf": [{"$ref": f"#/$defs/{name}"} for name in documents],
        "$defs": {
            **documents,
            "usage": usage,
            "interruption": _interruption(),
            "sessionRecord": {
                "type": "object",
                "required": list(_session_record()),
                "properties": _session_record(),
                "additionalProperties": False,
            },
            "surfaceSemanticEvent": surface_semantic_event_json_schema(),
            "canonicalItem": items_json_schema(),
        },
    }
