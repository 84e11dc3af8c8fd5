"""``RunEventLegacyCompatAdapter``: ``RunEvent`` → legacy ``AgentEvent`` (spec 03 §6.6, Q27).

For hosts still written against the 0.x ``AgentEvent`` union. Each source event is projected
(one :class:`RunEventSemanticProjector`, so validation and redaction are the surface ones) and
each semantic is turned into a legacy event when that is possible **without inventing a
required field**. What cannot be represented is reported in ``omitted`` — except the semantics
that have no legacy equivalent by design (``usage``, ``model.completed``, ``request.completed``,
``run.resumed``, non-completed ``terminal``, ``extension``), which are skipped silently.

Q27 fixed: the runtime's ``run.started`` has no ``model``. Instead of reporting it as omitted,
the adapter holds it back until the run's first ``request.started`` (whose ``model`` is the one
the run really asked for) and emits both then. A run that ends before any model request
reports its ``run.started`` as omitted.

Example:
    >>> from actoviq.events import RunEventSequencer, create_root_trace_context
    >>> sequencer = RunEventSequencer(create_root_trace_context("r1"))
    >>> compat = RunEventLegacyCompatAdapter()
    >>> compat.adapt(sequencer.next("run.started", {"agentId": "a"}))
    []
    >>> requested = sequencer.next("model.requested", {"turn": 1, "model": "p:m"})
    >>> [e["type"] for e in compat.adapt(requested)]
    ['run.started', 'request.started']
"""

from __future__ import annotations

import json
import math
from typing import Any, Final, cast

import attrs

from actoviq.core import JsonObject, JsonValue
from actoviq.events import RunEvent
from actoviq.surfaces.projector import ProjectorOptions, RunEventSemanticProjector
from actoviq.surfaces.types import SurfaceSemanticEvent
from actoviq.surfaces.types import SurfaceSemanticType as T

__all__ = [
    "LegacyCompatReport",
    "LegacyOmission",
    "RunEventLegacyCompatAdapter",
    "surface_semantic_to_legacy_agent_event",
]

_SKIPPED: Final = frozenset(
    {T.USAGE, T.MODEL_COMPLETED, T.REQUEST_COMPLETED, T.RUN_RESUMED, T.EXTENSION}
)
_RELEASES: Final = frozenset(
    {
        T.REQUEST_STARTED,
        T.TERMINAL,
        T.ERROR,
        T.RUN_RESUMED,
        T.INTERRUPTION_CANCELLED,
        T.INTERRUPTION_REQUESTED,
    }
)
_PROVIDERS: Final = frozenset({"local", "mcp"})
_MAX_SAFE: Final = 2**53 - 1


@attrs.frozen(kw_only=True, slots=True)
class LegacyOmission:
    """A semantic that could not become a legacy event without inventing a required field.

    Attributes:
        source_event_id: the source ``RunEvent`` id.
        semantic_type: the semantic type.
        reason: what was missing.
    """

    source_event_id: str
    semantic_type: str
    reason: str


@attrs.frozen(kw_only=True, slots=True)
class LegacyCompatReport:
    """The legacy events of one source event and what was left out.

    Attributes:
        events: legacy ``AgentEvent`` objects (fresh dicts).
        omitted: what could not be represented.
    """

    events: tuple[dict[str, Any], ...] = ()
    omitted: tuple[LegacyOmission, ...] = ()


class _Omit(Exception):
    """Internal: the semantic cannot be represented (the message is the reason)."""


def _count(value: object) -> int | None:
    return value if type(value) is int and 0 <= value <= _MAX_SAFE else None


def _int(value: object) -> bool:
    return type(value) is int and abs(value) <= _MAX_SAFE


def _finite(value: object) -> bool:
    return type(value) in (int, float) and math.isfinite(cast(float, value))


def _str(data: JsonObject, key: str, what: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value:
        raise _Omit(f"{what} needs a string {key}")
    return value


def _map(value: JsonValue | None) -> JsonObject:
    return cast(JsonObject, value) if type(value) is dict else {}


def _copy_present(source: JsonObject, out: dict[str, Any], *keys: str) -> None:
    for key in keys:
        if key in source:
            out[key] = source[key]


def _model_name(value: JsonValue | None) -> str | None:
    if isinstance(value, str):
        return value or None
    model = _map(value).get("model")
    return model if isinstance(model, str) and model else None


def _call(data: JsonObject, runtime_native: bool) -> dict[str, Any]:
    source = _map(data.get("call")) or data
    call: dict[str, Any] = {
        "id": _str(source, "id", "tool call")
        if "id" in source
        else _str(data, "callId", "tool call"),
        "name": _str(source, "name", "tool call"),
        "publicName": _str(source, "publicName", "tool call"),
    }
    provider = source.get("provider")
    if provider is None and runtime_native:
        provider = "local"  # runtime tools run in the runtime's own ToolRunner
    if provider not in _PROVIDERS:
        raise _Omit("tool call needs provider 'local' or 'mcp'")
    call["provider"] = provider
    _copy_present(source, call, "mcpServerName", "input")
    call["startedAt"] = _str(source, "startedAt", "tool call")
    return call


def _result(semantic: SurfaceSemanticEvent, data: JsonObject) -> dict[str, Any]:
    result = _call(data, semantic.source_type in ("tool.completed", "tool.failed", "tool.rejected"))
    output_text = data.get("outputText")
    if type(output_text) is not str and "output" in data:
        output = data["output"]
        output_text = output if type(output) is str else json.dumps(output, ensure_ascii=False)
    if type(output_text) is not str:
        raise _Omit("tool result needs outputText (the source event carries no tool output)")
    if "output" in data:
        result["output"] = data["output"]
    result["outputText"] = output_text
    result["isError"] = data.get("isError") is True or semantic.type is not T.TOOL_COMPLETED
    result["completedAt"] = _str(data, "completedAt", "tool result")
    if not _finite(data.get("durationMs")):
        raise _Omit("tool result needs a finite durationMs")
    result["durationMs"] = data["durationMs"]
    return result


def _compaction(data: JsonObject, iteration: int) -> tuple[str, dict[str, Any]]:
    if data.get("scope") == "session":
        result = data.get("result")
        if type(result) is not dict:
            raise _Omit("session compaction needs a result object")
        return "session.compacted", {
            "sessionId": _str(data, "sessionId", "session compaction"),
            "trigger": _str(data, "trigger", "session compaction"),
            "result": result,
        }
    out: dict[str, Any] = {"iteration": iteration}
    _copy_present(data, out, "trigger")
    for key in ("tokenEstimateBefore", "tokenEstimateAfter"):
        if not _finite(data.get(key)):
            raise _Omit(f"conversation compaction needs a finite {key}")
        out[key] = data[key]
    for key in ("messagesSummarized", "preservedMessages", "clearedToolResults"):
        if not _int(data.get(key)):
            raise _Omit(f"conversation compaction needs an integer {key}")
        out[key] = data[key]
    return "conversation.compacted", out


_RESULT_LISTS: Final = ("messages", "requests", "toolCalls")


def _run_result(data: JsonObject) -> JsonObject:
    result = _map(data.get("result"))
    ok = (
        all(type(result.get(key)) is str for key in ("runId", "model", "text"))
        and type(result.get("message")) is dict
        and all(type(result.get(key)) is list for key in _RESULT_LISTS)
        and "startedAt" in result
        and "completedAt" in result
    )
    if not ok:
        raise _Omit("response.completed needs a legacy AgentRunResult in data.result")
    return result


def _payload(semantic: SurfaceSemanticEvent) -> tuple[str, dict[str, Any]] | None:
    """``(legacy type, payload)``, None when skipped by design; raises ``_Omit``."""
    kind, data = semantic.type, semantic.data
    iteration = _count(data.get("iteration")) or 0
    if kind in _SKIPPED or (kind is T.TERMINAL and data.get("status") != "completed"):
        return None
    if kind is T.RUN_STARTED:
        model = _model_name(data.get("model"))
        if model is None:
            raise _Omit("run.started needs the model (no model request followed)")
        out: dict[str, Any] = {"model": model, "input": data.get("input", "")}
        _copy_present(data, out, "sessionId")
        return "run.started", out
    if kind is T.REQUEST_STARTED:
        out = {"iteration": iteration}
        _copy_present(data, out, "requestTokenEstimate", "requestByteLength", "localMicrocompact")
        return "request.started", out
    if kind in (T.TEXT_DELTA, T.REASONING_DELTA):
        if not data.get("delta"):
            return None  # all of it held back (a possible secret's start): nothing to show yet
        out = {"iteration": iteration}
        if kind is T.REASONING_DELTA:
            out["index"] = _count(data.get("outputIndex")) or 0
        out["delta"] = data.get("delta") or ""
        out["snapshot"] = data.get("snapshot") or ""
        return ("response.text.delta" if kind is T.TEXT_DELTA else "response.thinking.delta"), out
    if kind is T.TOOL_INPUT_DELTA:
        return "response.tool_input.delta", {
            "iteration": iteration,
            "index": _count(data.get("outputIndex")) or 0,
            "toolUseId": data.get("callId"),
            "toolName": data.get("name"),
            "delta": data.get("delta") or "",
            "snapshot": data.get("snapshot") or "",
        }
    if kind is T.MODEL_CONTENT:
        which = data.get("kind")
        if which == "content" and "content" in data:
            return "response.content", {"iteration": iteration, "content": data["content"]}
        if which == "message" and "message" in data:
            return "response.message", {"iteration": iteration, "message": data["message"]}
        raise _Omit(f"model.content of kind {which!r} has no legacy form")
    if kind is T.TOOL_STARTED:
        return "tool.call", {
            "iteration": iteration,
            "call": _call(data, semantic.source_type == "tool.started"),
        }
    if kind is T.TOOL_PERMISSION:
        if type(data.get("decision")) is not dict:
            raise _Omit("tool.permission needs a decision object")
        return "tool.permission", {"iteration": iteration, "decision": data["decision"]}
    if kind is T.TOOL_PROGRESS:
        progress = _map(data.get("progress"))
        if type(progress.get("type")) is not str:
            raise _Omit("tool.progress needs a progress object with a string type")
        return "tool.progress", {
            "iteration": iteration,
            "toolUseId": _str(data, "callId", "tool.progress"),
            "data": progress,
        }
    if kind in (T.TOOL_COMPLETED, T.TOOL_FAILED, T.TOOL_REJECTED):
        return "tool.result", {"iteration": iteration, "result": _result(semantic, data)}
    if kind is T.COMPACTION_COMPLETED:
        return _compaction(data, iteration)
    if kind is T.MODEL_FALLBACK:
        return "model.fallback", {
            "iteration": iteration,
            "fromModel": _str(data, "fromModel", "model.fallback"),
            "toModel": _str(data, "toModel", "model.fallback"),
            "reason": _str(data, "reason", "model.fallback"),
        }
    if kind is T.INTERRUPTION_REQUESTED:
        if data.get("scope") != "request":
            raise _Omit("a run interruption has no legacy form")
        if not (_int(data.get("retry")) and _int(data.get("maxRetries"))):
            raise _Omit("request.interrupted needs integer retry and maxRetries")
        return "request.interrupted", {
            "iteration": iteration,
            "retry": data["retry"],
            "maxRetries": data["maxRetries"],
            "reason": _str(data, "reason", "request.interrupted"),
        }
    if kind is T.ERROR:
        error: dict[str, Any] = {"message": _str(data, "message", "error")}
        if type(data.get("code")) is str:
            error["code"] = data["code"]
        return "error", {"error": error}  # never a stack
    if kind is T.TERMINAL:
        return "response.completed", {"result": _run_result(data)}
    raise _Omit(f"{kind.value} has no legacy form")


def _legacy(semantic: SurfaceSemanticEvent) -> tuple[dict[str, Any] | None, str | None]:
    try:
        found = _payload(semantic)
    except _Omit as omitted:
        return None, str(omitted)
    if found is None:
        return None, None
    legacy_type, payload = found
    event: dict[str, Any] = {
        "type": legacy_type,
        "runId": semantic.run_id,
        "timestamp": semantic.timestamp,
    }
    event.update(payload)
    return event, None


def surface_semantic_to_legacy_agent_event(semantic: SurfaceSemanticEvent) -> dict[str, Any] | None:
    """The legacy event for one semantic, or None (no legacy form, or a required field missing).

    ``iteration`` is ``data.iteration`` when it is a non-negative safe int, else 0. A reasoning
    signature or an error stack is never emitted.
    """
    return _legacy(semantic)[0]


class RunEventLegacyCompatAdapter:
    """``RunEvent`` s in, legacy ``AgentEvent`` s out (see the module docstring).

    Args:
        options: the options of the projector it owns.
    """

    def __init__(self, options: ProjectorOptions | None = None) -> None:
        self._projector = RunEventSemanticProjector(options)
        self._held: dict[str, SurfaceSemanticEvent] = {}

    @property
    def projector(self) -> RunEventSemanticProjector:
        """The owned projector."""
        return self._projector

    def adapt(self, event: RunEvent) -> list[dict[str, Any]]:
        """The legacy events of one source event (omissions are dropped silently).

        Raises:
            SurfaceError: the projector refused the event (see its ``project``).
        """
        return list(self.adapt_with_report(event).events)

    def adapt_with_report(self, event: RunEvent) -> LegacyCompatReport:
        """The legacy events of one source event and what could not be represented.

        Raises:
            SurfaceError: the projector refused the event (see its ``project``).
        """
        events: list[dict[str, Any]] = []
        omitted: list[LegacyOmission] = []
        for semantic in self._projector.project(event):
            if semantic.type is T.RUN_STARTED and _model_name(semantic.data.get("model")) is None:
                self._held[semantic.run_id] = semantic
                continue
            held = (
                self._held.pop(semantic.run_id, None)
                if semantic.type in _RELEASES and semantic.run_id in self._held
                else None
            )
            if held is not None:
                if semantic.type is T.REQUEST_STARTED:
                    model = semantic.data.get("model")
                    held = held.with_data({**held.data, "model": model})
                self._emit(held, events, omitted)
            self._emit(semantic, events, omitted)
        return LegacyCompatReport(events=tuple(events), omitted=tuple(omitted))

    @staticmethod
    def _emit(
        semantic: SurfaceSemanticEvent,
        events: list[dict[str, Any]],
        omitted: list[LegacyOmission],
    ) -> None:
        legacy, reason = _legacy(semantic)
        if legacy is not None:
            events.append(legacy)
        elif reason is not None:
            omitted.append(
                LegacyOmission(
                    source_event_id=semantic.source_event_id,
                    semantic_type=semantic.type.value,
                    reason=reason,
                )
            )

    def reset(self) -> None:
        """Reset the projector and forget held events."""
        self._projector.reset()
        self._held.clear()
