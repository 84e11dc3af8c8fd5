"""The legacy ``AgentEvent`` union and its mapping to ``RunEvent`` types (spec 03 §6.5).

A legacy event is a JSON object ``{type, runId, timestamp, …payload}`` from the 0.x SDK's
``AgentEvent`` union (33 members; members 15 and 16 have three type strings each). This module
holds the pure part: which type maps to which ``RunEvent`` type and how the payload is shaped.
The stateful part (run contexts, sequences, identities) is
:class:`~actoviq.surfaces.legacy_adapter.LegacyAgentEventRunEventAdapter`.

Example:
    >>> legacy_run_event_payload({"type": "response.text.delta", "runId": "r", "timestamp": 1,
    ...                           "iteration": 2, "delta": "he", "snapshot": "he"})
    ('model.text.delta', {'turn': 2, 'iteration': 2, 'delta': 'he', 'snapshot': 'he'})
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, cast

__all__ = [
    "LEGACY_AGENT_EVENT_TYPES",
    "LEGACY_ENVELOPE_KEYS",
    "LegacyAgentEvent",
    "legacy_run_event_payload",
]

LegacyAgentEvent = Mapping[str, Any]
"""A legacy event: a mapping with ``type``, ``runId``, ``timestamp`` and its payload fields."""

LEGACY_AGENT_EVENT_TYPES: Final[tuple[str, ...]] = (
    "run.started",
    "request.started",
    "request.prompt_cache",
    "response.text.delta",
    "response.thinking.delta",
    "response.tool_input.delta",
    "response.content",
    "response.message",
    "tool.call",
    "tool.permission",
    "tool.result",
    "tool.progress",
    "session.compacted",
    "checkpoint.created",
    "checkpoint.restore.requested",
    "checkpoint.restore.completed",
    "checkpoint.restore.conflicted",
    "sandbox.applied",
    "sandbox.degraded",
    "sandbox.violation",
    "hook.lifecycle",
    "conversation.compacted",
    "model.fallback",
    "request.interrupted",
    "response.completed",
    "error",
    "agent.execution",
    "workflow.start",
    "step.start",
    "step.done",
    "workflow.done",
    "workflow.script.start",
    "workflow.phase.start",
    "workflow.agent.start",
    "workflow.agent.done",
    "workflow.log",
    "workflow.script.done",
)
"""Every legacy type string, in the order of spec 03 §6.5 (33 members, 37 strings)."""

LEGACY_ENVELOPE_KEYS: Final = frozenset(
    {
        "type",
        "runId",
        "timestamp",
        "eventId",
        "sequence",
        "schemaVersion",
        "traceId",
        "spanId",
        "parentSpanId",
        "parentRunId",
    }
)
"""Keys that are envelope, never payload."""

_MISSING: Final = object()


def _pick(event: LegacyAgentEvent, *pairs: tuple[str, str]) -> dict[str, Any]:
    """``{target: event[source]}`` for every source key present (absent stays absent)."""
    out: dict[str, Any] = {}
    for target, source in pairs:
        value = event.get(source, _MISSING)
        if value is not _MISSING:
            out[target] = value
    return out


def _turn(event: LegacyAgentEvent) -> dict[str, Any]:
    return _pick(event, ("turn", "iteration"), ("iteration", "iteration"))


def _mapping(value: object) -> Mapping[str, Any]:
    return cast(Mapping[str, Any], value) if isinstance(value, Mapping) else {}


def _run_started(event: LegacyAgentEvent) -> dict[str, Any]:
    return _pick(event, ("sessionId", "sessionId"), ("model", "model"), ("input", "input"))


def _request_started(event: LegacyAgentEvent) -> dict[str, Any]:
    return {
        **_turn(event),
        **_pick(
            event,
            ("requestTokenEstimate", "requestTokenEstimate"),
            ("requestByteLength", "requestByteLength"),
            ("localMicrocompact", "localMicrocompact"),
        ),
    }


def _text_delta(event: LegacyAgentEvent) -> dict[str, Any]:
    return {**_turn(event), **_pick(event, ("delta", "delta"), ("snapshot", "snapshot"))}


def _thinking_delta(event: LegacyAgentEvent) -> dict[str, Any]:
    # The signature is an opaque provider blob: it never leaves the legacy event.
    return {
        **_turn(event),
        **_pick(
            event,
            ("outputIndex", "index"),
            ("index", "index"),
            ("delta", "delta"),
            ("snapshot", "snapshot"),
        ),
    }


def _tool_input_delta(event: LegacyAgentEvent) -> dict[str, Any]:
    return {
        **_turn(event),
        **_pick(
            event,
            ("outputIndex", "index"),
            ("index", "index"),
            ("callId", "toolUseId"),
            ("toolUseId", "toolUseId"),
            ("name", "toolName"),
            ("argumentsDelta", "delta"),
            ("delta", "delta"),
            ("snapshot", "snapshot"),
        ),
    }


def _content(event: LegacyAgentEvent) -> dict[str, Any]:
    return {**_turn(event), "kind": "content", **_pick(event, ("content", "content"))}


def _message(event: LegacyAgentEvent) -> dict[str, Any]:
    return {**_turn(event), "kind": "message", **_pick(event, ("message", "message"))}


_CALL_FIELDS: Final = (
    ("callId", "id"),
    ("name", "name"),
    ("publicName", "publicName"),
    ("provider", "provider"),
    ("mcpServerName", "mcpServerName"),
    ("input", "input"),
    ("startedAt", "startedAt"),
)


def _tool_call(event: LegacyAgentEvent) -> dict[str, Any]:
    call = _mapping(event.get("call"))
    return {**_turn(event), **_pick(call, *_CALL_FIELDS), **_pick(event, ("call", "call"))}


def _tool_permission(event: LegacyAgentEvent) -> dict[str, Any]:
    return {**_turn(event), **_pick(event, ("decision", "decision"))}


def _tool_progress(event: LegacyAgentEvent) -> dict[str, Any]:
    return {
        **_turn(event),
        **_pick(
            event,
            ("callId", "toolUseId"),
            ("toolUseId", "toolUseId"),
            ("progress", "data"),
            ("data", "data"),
        ),
    }


def _tool_result(event: LegacyAgentEvent) -> dict[str, Any]:
    result = _mapping(event.get("result"))
    return {
        **_turn(event),
        **_pick(
            result,
            *_CALL_FIELDS,
            ("output", "output"),
            ("outputText", "outputText"),
            ("isError", "isError"),
            ("completedAt", "completedAt"),
            ("durationMs", "durationMs"),
        ),
        **_pick(event, ("result", "result")),
    }


def _session_compacted(event: LegacyAgentEvent) -> dict[str, Any]:
    return {
        "scope": "session",
        **_pick(event, ("sessionId", "sessionId"), ("trigger", "trigger"), ("result", "result")),
    }


def _conversation_compacted(event: LegacyAgentEvent) -> dict[str, Any]:
    return {
        "scope": "conversation",
        **_turn(event),
        **_pick(
            event,
            ("trigger", "trigger"),
            ("tokenEstimateBefore", "tokenEstimateBefore"),
            ("tokenEstimateAfter", "tokenEstimateAfter"),
            ("messagesSummarized", "messagesSummarized"),
            ("preservedMessages", "preservedMessages"),
            ("clearedToolResults", "clearedToolResults"),
        ),
    }


def _fallback(event: LegacyAgentEvent) -> dict[str, Any]:
    return {
        **_turn(event),
        **_pick(event, ("fromModel", "fromModel"), ("toModel", "toModel"), ("reason", "reason")),
    }


def _request_interrupted(event: LegacyAgentEvent) -> dict[str, Any]:
    return {
        "scope": "request",
        **_turn(event),
        **_pick(event, ("retry", "retry"), ("maxRetries", "maxRetries"), ("reason", "reason")),
    }


def _response_completed(event: LegacyAgentEvent) -> dict[str, Any]:
    out: dict[str, Any] = {"status": "completed", **_pick(event, ("result", "result"))}
    usage = _mapping(event.get("result")).get("usage", _MISSING)
    if usage is not _MISSING:
        out["usage"] = usage
    return out


def _error(event: LegacyAgentEvent) -> dict[str, Any]:
    return {"status": "failed", **_pick(event, ("error", "error"))}


_MAPPERS: Final[dict[str, tuple[str, Callable[[LegacyAgentEvent], dict[str, Any]]]]] = {
    "run.started": ("run.started", _run_started),
    "request.started": ("model.requested", _request_started),
    "response.text.delta": ("model.text.delta", _text_delta),
    "response.thinking.delta": ("model.reasoning.delta", _thinking_delta),
    "response.tool_input.delta": ("model.tool_call.delta", _tool_input_delta),
    "response.content": ("model.content", _content),
    "response.message": ("model.content", _message),
    "tool.call": ("tool.started", _tool_call),
    "tool.permission": ("tool.permission", _tool_permission),
    "tool.progress": ("tool.progress", _tool_progress),
    "session.compacted": ("session.compacted", _session_compacted),
    "conversation.compacted": ("conversation.compacted", _conversation_compacted),
    "model.fallback": ("model.fallback", _fallback),
    "request.interrupted": ("model.interrupted", _request_interrupted),
    "response.completed": ("run.completed", _response_completed),
    "error": ("run.failed", _error),
}


def legacy_run_event_payload(event: LegacyAgentEvent) -> tuple[str, dict[str, Any]]:
    """``(RunEvent type, data)`` for one legacy event (data not yet redacted).

    ``tool.result`` becomes ``tool.failed`` when ``result.isError`` is true, else
    ``tool.completed``; types without a runtime equivalent become ``legacy.<type>`` carrying the
    event minus its envelope keys.
    """
    kind = cast(str, event.get("type"))
    if kind == "tool.result":
        failed = _mapping(event.get("result")).get("isError") is True
        return ("tool.failed" if failed else "tool.completed"), _tool_result(event)
    mapper = _MAPPERS.get(kind)
    if mapper is not None:
        return mapper[0], mapper[1](event)
    return f"legacy.{kind}", {
        key: value for key, value in event.items() if key not in LEGACY_ENVELOPE_KEYS
    }
