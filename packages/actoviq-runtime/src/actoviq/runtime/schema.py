"""JSON Schema (draft 2020-12) of ``SerializedRunState`` version 2 (decisions D2 and D5).

``make docs`` publishes it as ``docs/schemas/run-state.schema.json``. Canonical items are
referenced through the embedded item schema of ``actoviq.core``. ``resume()`` also reads reference
version-1 states; this schema describes what this version writes.
"""

from __future__ import annotations

from typing import Any, cast

from actoviq.core import REASONING_EFFORTS, REASONING_SUMMARIES, JsonObject, items_json_schema
from actoviq.runtime.state import RUN_STATE_SCHEMA_VERSION

__all__ = ["model_settings_json_schema", "run_state_json_schema"]

_ITEM = {"$ref": "urn:actoviq:schema:canonical-item"}
_TEXT: dict[str, Any] = {"type": "string", "minLength": 1}
_OPT_TEXT: dict[str, Any] = {"type": "string"}


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def model_settings_json_schema() -> JsonObject:
    """The schema of :class:`~actoviq.core.ModelSettings` on the wire (all fields optional)."""
    number: dict[str, Any] = {"type": "number"}
    reasoning = {
        "type": "object",
        "properties": {
            "effort": {"enum": list(REASONING_EFFORTS)},
            "summary": {"enum": list(REASONING_SUMMARIES)},
            "budgetTokens": {"type": "integer", "minimum": 1},
        },
        "additionalProperties": False,
    }
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "temperature": {**number, "minimum": 0, "maximum": 2},
            "topP": {**number, "minimum": 0, "maximum": 1},
            "maxOutputTokens": {"type": "integer", "minimum": 1},
            "stopSequences": {"type": "array", "items": {"type": "string", "minLength": 1}},
            "seed": {"type": "integer"},
            "reasoning": reasoning,
            "parallelToolCalls": {"type": "boolean"},
            "toolChoice": {"type": "string", "minLength": 1},
            "promptCacheKey": {"type": "string", "minLength": 1},
            "metadata": {"type": "object"},
            "providerOptions": {
                "type": "object",
                "additionalProperties": {"type": "object"},
            },
        },
        "additionalProperties": False,
    }
    return cast(JsonObject, schema)


def run_state_json_schema() -> JsonObject:
    """The schema of the state an interrupted (or checkpointed) run serialises."""
    usage_fields = [
        "requests",
        "inputTokens",
        "outputTokens",
        "totalTokens",
        "cacheReadTokens",
        "cacheWriteTokens",
        "reasoningTokens",
        "audioInputTokens",
        "audioOutputTokens",
    ]
    usage = _object(
        {
            **{name: {"type": "integer", "minimum": 0} for name in usage_fields},
            "costUsd": {"type": "number", "minimum": 0},
        },
        [*usage_fields, "costUsd"],
    )
    trace = _object(
        {
            "runId": _TEXT,
            "traceId": _TEXT,
            "spanId": _TEXT,
            "parentSpanId": _TEXT,
            "parentRunId": _TEXT,
        },
        ["runId", "traceId", "spanId"],
    )
    pending_tool = _object(
        {
            "call": _ITEM,
            "effect": {"enum": ["read", "idempotent-write", "side-effect"]},
            "status": {
                "enum": ["prepared", "started", "committed", "awaiting_approval", "unknown"]
            },
            "interruptionId": _TEXT,
            "idempotencyKey": _TEXT,
            "result": _ITEM,
        },
        ["call", "effect", "status"],
    )
    interruption = _object(
        {
            "id": _TEXT,
            "kind": {"enum": ["approval", "reconciliation"]},
            "reason": _OPT_TEXT,
            "callId": _OPT_TEXT,
            "toolName": _OPT_TEXT,
            "input": {},
            "metadata": {"type": "object"},
        },
        ["id", "kind", "reason"],
    )
    decision = _object(
        {
            "interruptionId": _TEXT,
            "callId": _OPT_TEXT,
            "toolName": _OPT_TEXT,
            "outcome": {"enum": ["approve", "reject", "committed", "failed", "retry"]},
            "decidedAt": _OPT_TEXT,
            "reason": _OPT_TEXT,
            "metadata": {"type": "object"},
        },
        ["interruptionId", "callId", "toolName", "outcome", "decidedAt"],
    )
    items = {"type": "array", "items": _ITEM}
    state = _object(
        {
            "schemaVersion": {"const": RUN_STATE_SCHEMA_VERSION},
            "runId": _TEXT,
            "agentId": _TEXT,
            "agentConfigDigest": _TEXT,
            "status": {"type": "string"},
            "trace": {"$ref": "#/$defs/trace"},
            "startedAt": _TEXT,
            "deadlineAt": _OPT_TEXT,
            "remainingRunMs": {"type": "integer", "minimum": 0},
            "turn": {"type": "integer", "minimum": 0},
            "input": items,
            "transcript": items,
            "generatedItems": items,
            "usage": {"$ref": "#/$defs/usage"},
            "sessionId": _OPT_TEXT,
            "tenantId": _OPT_TEXT,
            "expectedSessionRevision": _OPT_TEXT,
            "workspaceId": _OPT_TEXT,
            "pendingTools": {"type": "array", "items": {"$ref": "#/$defs/pendingTool"}},
            "interruptions": {"type": "array", "items": {"$ref": "#/$defs/interruption"}},
            "lastEventSequence": {"type": "integer", "minimum": 0},
            "stateRevision": {"type": "integer", "minimum": 0},
            "decisions": {"type": "array", "items": {"$ref": "#/$defs/decision"}},
            "childRunIds": {"type": "array", "items": _TEXT},
            "metadata": {"type": "object"},
            "modelSettings": {"$ref": "#/$defs/modelSettings"},
            "structuredOutputRetries": {"type": "integer", "minimum": 0},
            "toolRetries": {"type": "object", "additionalProperties": {"type": "integer"}},
        },
        [
            "schemaVersion",
            "runId",
            "agentId",
            "agentConfigDigest",
            "status",
            "trace",
            "startedAt",
            "turn",
            "input",
            "transcript",
            "generatedItems",
            "usage",
        ],
    )
    schema: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:actoviq:schema:run-state",
        "title": "Actoviq SerializedRunState (schemaVersion 2)",
        **state,
        "$defs": {
            "item": items_json_schema(),
            "usage": usage,
            "trace": trace,
            "pendingTool": pending_tool,
            "interruption": interruption,
            "decision": decision,
            "modelSettings": model_settings_json_schema(),
        },
    }
    return cast(JsonObject, schema)
