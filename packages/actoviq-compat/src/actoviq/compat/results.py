"""``AgentRunResult``: the 0.x result shape, built from the runtime's ``RunResult`` (spec 04 §5.1).

Attributes are snake_case; :meth:`AgentRunResult.to_json` gives the reference's camelCase JSON
(what ``response.completed`` carries). ``message``, ``messages`` and ``usage`` are
Anthropic-shaped dicts (``usage`` with snake_case keys); ``requests`` and ``tool_calls`` are the
0.x records. The runtime's own result stays reachable as :attr:`AgentRunResult.run_result`, the
first thing to read when migrating a caller off the façade.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NotRequired, TypedDict, cast

import attrs

from actoviq.compat._frozen import FrozenList
from actoviq.compat._messages import to_legacy_messages
from actoviq.compat.events import AgentToolCallRecord, PermissionDecision
from actoviq.compat.recorder import ModelCallRecord, RunRecords, output_text
from actoviq.core import (
    JsonObject,
    RunResult,
    TextItem,
    ToolCallItem,
    ToolResultItem,
    Unset,
    Usage,
)
from actoviq.providers.legacy import (
    LegacyUsage,
    Message,
    MessageParam,
    core_usage_to_legacy,
    legacy_stop_reason,
    to_legacy_message,
)

__all__ = ["AgentRequestSummary", "AgentRunResult", "build_result", "legacy_usage"]


class AgentRequestSummary(TypedDict):
    """One model request of a run (``AgentRunResult.requests``)."""

    iteration: int
    messageId: str
    model: str
    stopReason: str | None
    usage: NotRequired[LegacyUsage]
    text: str
    createdAt: str


def _frozen_messages(items: Iterable[MessageParam]) -> tuple[MessageParam, ...]:
    return FrozenList(items)


def _frozen_requests(items: Iterable[AgentRequestSummary]) -> tuple[AgentRequestSummary, ...]:
    return FrozenList(items)


def _frozen_tool_calls(items: Iterable[AgentToolCallRecord]) -> tuple[AgentToolCallRecord, ...]:
    return FrozenList(items)


def _frozen_decisions(items: Iterable[PermissionDecision]) -> tuple[PermissionDecision, ...]:
    return FrozenList(items)


@attrs.frozen(kw_only=True, slots=True)
class AgentRunResult:
    """What ``AgentClient.run`` returns and ``AgentRunStream.result`` resolves to.

    Attributes:
        run_id: the run id (the runtime's).
        model: the model id the last request used.
        text: the final assistant text.
        message: the final Anthropic-style message ``{id, type, role, model, content,
            stop_reason, stop_sequence, usage}``.
        messages: the whole transcript as ``MessageParam`` s (session history included).
            This and the other sequences are tuples that also equal the list of the same
            items (``result.tool_calls == []``), as the reference's arrays did.
        stop_reason: ``end_turn``, ``tool_use``, ``max_tokens``, ... of the final message.
        usage: the run's total usage in the Anthropic convention (``input_tokens`` without the
            cache counts, which appear only when non-zero).
        requests: one summary per model request.
        tool_calls: one record per tool call, in order.
        started_at: when the run started (ISO-8601 UTC).
        completed_at: when it completed.
        session_id: the session the run read and appended to, if any.
        permission_decisions: the decisions of the 0.x permission policy, if one is configured.
        run_result: the runtime's :class:`~actoviq.core.RunResult` (output, canonical items).
    """

    run_id: str
    model: str
    text: str
    message: Message
    messages: tuple[MessageParam, ...] = attrs.field(converter=_frozen_messages)
    stop_reason: str | None
    usage: LegacyUsage | None
    requests: tuple[AgentRequestSummary, ...] = attrs.field(converter=_frozen_requests)
    tool_calls: tuple[AgentToolCallRecord, ...] = attrs.field(converter=_frozen_tool_calls)
    started_at: str
    completed_at: str
    session_id: str | None = None
    permission_decisions: tuple[PermissionDecision, ...] = attrs.field(
        default=(), converter=_frozen_decisions
    )
    run_result: RunResult[Any] | None = attrs.field(default=None, eq=False, repr=False)

    # The 0.x (camelCase) names of the fields, for code moved over from the reference.

    @property
    def runId(self) -> str:
        """0.x name of :attr:`run_id`."""
        return self.run_id

    @property
    def stopReason(self) -> str | None:
        """0.x name of :attr:`stop_reason`."""
        return self.stop_reason

    @property
    def toolCalls(self) -> tuple[AgentToolCallRecord, ...]:
        """0.x name of :attr:`tool_calls`."""
        return self.tool_calls

    @property
    def startedAt(self) -> str:
        """0.x name of :attr:`started_at`."""
        return self.started_at

    @property
    def completedAt(self) -> str:
        """0.x name of :attr:`completed_at`."""
        return self.completed_at

    @property
    def sessionId(self) -> str | None:
        """0.x name of :attr:`session_id`."""
        return self.session_id

    @property
    def permissionDecisions(self) -> tuple[PermissionDecision, ...]:
        """0.x name of :attr:`permission_decisions`."""
        return self.permission_decisions

    def __getitem__(self, key: str) -> Any:
        """A field of :meth:`to_json` by its 0.x name (``result["stopReason"]``).

        Raises:
            KeyError: no such field (absent optionals such as ``sessionId`` included).
        """
        return self.to_json()[key]

    def to_json(self) -> JsonObject:
        """The reference's ``AgentRunResult`` JSON (camelCase; absent optionals omitted)."""
        data: dict[str, Any] = {
            "runId": self.run_id,
            "model": self.model,
            "text": self.text,
            "message": dict(self.message),
            "messages": [dict(m) for m in self.messages],
            "stopReason": self.stop_reason,
            "requests": [dict(r) for r in self.requests],
            "toolCalls": [dict(c) for c in self.tool_calls],
            "startedAt": self.started_at,
            "completedAt": self.completed_at,
        }
        if self.session_id is not None:
            data["sessionId"] = self.session_id
        if self.usage is not None:
            data["usage"] = dict(self.usage)
        if self.permission_decisions:
            data["permissionDecisions"] = [dict(d) for d in self.permission_decisions]
        return cast(JsonObject, data)


def legacy_usage(usage: Usage) -> LegacyUsage:
    """Canonical usage in the Anthropic convention; cache counts only when non-zero.

    Example:
        >>> legacy_usage(Usage(input_tokens=4, output_tokens=2))
        {'input_tokens': 4, 'output_tokens': 2}
    """
    full = core_usage_to_legacy(usage)
    out: LegacyUsage = {
        "input_tokens": full.get("input_tokens", 0),
        "output_tokens": full.get("output_tokens", 0),
    }
    if full.get("cache_read_input_tokens"):
        out["cache_read_input_tokens"] = full.get("cache_read_input_tokens")
    if full.get("cache_creation_input_tokens"):
        out["cache_creation_input_tokens"] = full.get("cache_creation_input_tokens")
    return out


def _text(call: ModelCallRecord) -> str:
    return "".join(
        item.text
        for item in call.response.output
        if isinstance(item, TextItem) and item.role == "assistant"
    )


def _request_summary(call: ModelCallRecord) -> AgentRequestSummary:
    response = call.response
    summary: AgentRequestSummary = {
        "iteration": call.iteration,
        "messageId": response.id,
        "model": response.model.model_id,
        "stopReason": legacy_stop_reason(response.finish_reason),
        "text": _text(call),
        "createdAt": call.created_at,
    }
    if isinstance(response.usage, Usage):
        summary["usage"] = legacy_usage(response.usage)
    return summary


def _tool_calls(result: RunResult[Any], records: RunRecords) -> list[AgentToolCallRecord]:
    calls = {item.id: item for item in result.items if isinstance(item, ToolCallItem)}
    out: list[AgentToolCallRecord] = []
    for item in result.items:
        if not isinstance(item, ToolResultItem):
            continue
        recorded = records.tool_calls.get(item.call_id)
        call = calls.get(item.call_id) or records.call_item(item.call_id)
        name = call.name if call is not None else (item.name or "")
        output = item.output
        record: AgentToolCallRecord = {
            "id": item.call_id,
            "name": name,
            "publicName": name,
            "provider": "local",
            "input": call.input if call is not None else {},
            "startedAt": recorded.started_at if recorded is not None else result.completed_at,
            "outputText": (
                recorded.output_text
                if recorded is not None
                else ("" if isinstance(output, Unset) else output_text(output))
            ),
            "isError": item.status != "success",
            "completedAt": (recorded.completed_at if recorded is not None else result.completed_at),
            "durationMs": recorded.duration_ms if recorded is not None else 0.0,
        }
        if not isinstance(output, Unset):
            record["output"] = output
        out.append(record)
    return out


def build_result(
    result: RunResult[Any],
    records: RunRecords,
    *,
    model: str,
    input_items: list[Any],
) -> AgentRunResult:
    """The 0.x result of a completed run.

    Args:
        result: the runtime's result.
        records: what the recorder kept for the run.
        model: the configured model id (used when the run made no model call).
        input_items: the run's canonical input (used when the run made no model call).
    """
    calls = records.model_calls
    last = calls[-1] if calls else None
    if last is not None:
        message = to_legacy_message(last.response)
        transcript = [*last.request.input, *last.response.output]
        text = _text(last)
        model_id = last.response.model.model_id
    else:
        text = result.output if isinstance(result.output, str) else ""
        message = cast(
            Message,
            {
                "id": result.run_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": text}] if text else [],
                "stop_reason": None,
                "stop_sequence": None,
            },
        )
        transcript = [*input_items, *result.items]
        model_id = model
    return AgentRunResult(
        run_id=result.run_id,
        model=model_id,
        text=text,
        message=message,
        messages=tuple(to_legacy_messages(transcript)),
        stop_reason=message["stop_reason"],
        usage=legacy_usage(result.usage),
        requests=tuple(_request_summary(call) for call in calls),
        tool_calls=tuple(_tool_calls(result, records)),
        started_at=result.started_at,
        completed_at=result.completed_at,
        session_id=result.session_id,
        permission_decisions=tuple(records.permission_decisions),
        run_result=result,
    )
