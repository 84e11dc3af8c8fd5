"""``SerializedRunState`` (schemaVersion 2): what checkpoints hold and ``resume()`` continues.

The state is JSON-safe: no clients, secrets, callables or signals. Version 2 differs from the
reference version 1 (spec 03 §1.17, decisions D5) by:

* ``pendingTools`` — every tool call of the current turn, in call order, each with its state
  (``prepared → started → committed``, ``awaiting_approval``, ``unknown``), effect, interruption id,
  idempotency key and result (03 §8.1 Q1); the entries are
  :class:`~actoviq.runtime.tools.PendingTool` values;
* ``interruptions`` — the open interruptions (approval, reconciliation) with their reasons;
* ``lastEventSequence`` — a resumed run continues the event sequence (Q4);
* ``remainingRunMs`` instead of ``deadlineAt`` while interrupted — the approval wait does not
  consume the run deadline (Q12);
* ``decisions`` — the resolved approvals and reconciliations, for audit (Q5);
* ``stateRevision`` — incremented by every save of the run (in any process): with
  ``trace.spanId`` it names one version of the run, and ``resume()`` continues only the newest
  (decision D10, :mod:`actoviq.runtime.stores.claims`). Absent reads as 0.

:meth:`SerializedRunState.from_json` also reads reference version 1 states (one ``pendingTool``
becomes a one-element list) and refuses other versions with :class:`RunStateVersionError`.

Example:
    >>> SerializedRunState.from_json({"schemaVersion": 3})
    Traceback (most recent call last):
    ...
    actoviq.runtime.errors.RunStateVersionError: Unsupported run state version 3.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, TypeAlias, cast

import attrs

from actoviq.core import (
    MAX_WIRE_DEPTH,
    CanonicalItem,
    Interruption,
    JsonObject,
    ModelSettings,
    Usage,
    from_json,
    item_from_json,
    item_to_json,
    json_value_error,
    normalize_usage_delta,
    to_json,
)
from actoviq.events import TraceContext
from actoviq.runtime.errors import RunStateError, RunStateVersionError
from actoviq.runtime.tools import DecisionOutcome, PendingTool

__all__ = [
    "RUN_STATE_SCHEMA_VERSION",
    "ResolvedDecision",
    "RunStateStatus",
    "SerializedRunState",
    "trace_from_json",
    "trace_to_json",
]

RUN_STATE_SCHEMA_VERSION: Final = 2
"""The version of the serialised run state this runtime writes."""

RunStateStatus: TypeAlias = Literal["running", "interrupted", "completed", "cancelled", "failed"]
"""The status recorded in a serialised run state."""

_STATUSES: Final = frozenset({"running", "interrupted", "completed", "cancelled", "failed"})


@attrs.frozen(kw_only=True, slots=True)
class ResolvedDecision:
    """A decision that resume applied, kept in the state for audit."""

    interruption_id: str
    call_id: str
    tool_name: str
    outcome: DecisionOutcome
    decided_at: str
    reason: str | None = None
    metadata: JsonObject | None = None

    def to_json(self) -> JsonObject:
        """Wire form."""
        data: JsonObject = {
            "interruptionId": self.interruption_id,
            "callId": self.call_id,
            "toolName": self.tool_name,
            "outcome": self.outcome,
            "decidedAt": self.decided_at,
        }
        if self.reason is not None:
            data["reason"] = self.reason
        if self.metadata is not None:
            data["metadata"] = self.metadata
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ResolvedDecision:
        """Load the wire form.

        Raises:
            RunStateError: not an object, or a field missing or of the wrong type.
        """
        if not isinstance(data, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise RunStateError("Serialized run state decisions must be JSON objects.")
        texts: dict[str, str] = {}
        for key in ("interruptionId", "callId", "toolName", "outcome", "decidedAt"):
            value = data.get(key)
            if type(value) is not str:
                raise RunStateError(f"Serialized run state decision field {key} must be a string.")
            texts[key] = value
        reason, metadata = data.get("reason"), data.get("metadata")
        if reason is not None and type(reason) is not str:
            raise RunStateError("Serialized run state decision field reason must be a string.")
        if metadata is not None and type(metadata) is not dict:
            raise RunStateError("Serialized run state decision field metadata must be an object.")
        return cls(
            interruption_id=texts["interruptionId"],
            call_id=texts["callId"],
            tool_name=texts["toolName"],
            outcome=cast(DecisionOutcome, texts["outcome"]),
            decided_at=texts["decidedAt"],
            reason=reason,
            metadata=cast("JsonObject | None", metadata),
        )


def trace_to_json(trace: TraceContext) -> JsonObject:
    """``{runId, parentRunId?, traceId, spanId, parentSpanId?}``."""
    data: JsonObject = {"runId": trace.run_id}
    if trace.parent_run_id is not None:
        data["parentRunId"] = trace.parent_run_id
    data["traceId"] = trace.trace_id
    data["spanId"] = trace.span_id
    if trace.parent_span_id is not None:
        data["parentSpanId"] = trace.parent_span_id
    return data


def trace_from_json(data: Any) -> TraceContext:
    """Load a persisted trace context."""
    if not isinstance(data, Mapping):
        raise RunStateError("Serialized run state is missing its trace.")
    mapping = cast(Mapping[str, Any], data)
    return TraceContext(
        run_id=mapping.get("runId"),  # type: ignore[arg-type]
        trace_id=mapping.get("traceId"),  # type: ignore[arg-type]
        span_id=mapping.get("spanId"),  # type: ignore[arg-type]
        parent_span_id=mapping.get("parentSpanId"),
        parent_run_id=mapping.get("parentRunId"),
    )


def _list(mapping: Mapping[str, Any], key: str) -> list[Any]:
    value = mapping.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise RunStateError(f"Serialized run state field {key} must be a list.")
    return cast(list[Any], value)


def _pending(data: Any) -> PendingTool:
    try:
        return from_json(PendingTool, data)
    except RunStateError:
        raise
    except Exception as error:
        raise RunStateError(f"Malformed pending tool in run state: {error}") from error


def _items(data: Any, label: str) -> tuple[CanonicalItem, ...]:
    if not isinstance(data, list):
        raise RunStateError(f"Serialized run state field {label} must be a list.")
    return tuple(item_from_json(entry) for entry in cast(list[Any], data))


@attrs.frozen(kw_only=True, slots=True)
class SerializedRunState:
    """A resumable, JSON-safe run state (``schemaVersion`` 2). See the module docstring."""

    run_id: str
    agent_id: str
    agent_config_digest: str
    status: RunStateStatus
    trace: TraceContext
    started_at: str
    turn: int
    input: tuple[CanonicalItem, ...]
    transcript: tuple[CanonicalItem, ...]
    generated_items: tuple[CanonicalItem, ...]
    usage: Usage
    deadline_at: str | None = None
    remaining_run_ms: int | None = None
    session_id: str | None = None
    tenant_id: str | None = None
    expected_session_revision: str | None = None
    workspace_id: str | None = None
    pending_tools: tuple[PendingTool, ...] = ()
    interruptions: tuple[Interruption, ...] = ()
    last_event_sequence: int = 0
    decisions: tuple[ResolvedDecision, ...] = ()
    child_run_ids: tuple[str, ...] = ()
    metadata: JsonObject = attrs.field(factory=lambda: cast(JsonObject, {}))
    state_revision: int = 0
    model_settings: ModelSettings | None = None
    structured_output_retries: int = 0
    tool_retries: tuple[tuple[str, int], ...] = ()
    schema_version: int = RUN_STATE_SCHEMA_VERSION

    def to_json(self) -> JsonObject:
        """The wire form (camelCase; absent optionals omitted)."""
        data: JsonObject = {
            "schemaVersion": self.schema_version,
            "runId": self.run_id,
            "agentId": self.agent_id,
            "agentConfigDigest": self.agent_config_digest,
            "status": self.status,
            "trace": trace_to_json(self.trace),
            "startedAt": self.started_at,
        }
        if self.deadline_at is not None:
            data["deadlineAt"] = self.deadline_at
        if self.remaining_run_ms is not None:
            data["remainingRunMs"] = self.remaining_run_ms
        data["turn"] = self.turn
        data["input"] = [item_to_json(item) for item in self.input]
        data["transcript"] = [item_to_json(item) for item in self.transcript]
        data["generatedItems"] = [item_to_json(item) for item in self.generated_items]
        data["usage"] = cast(JsonObject, self.usage.to_json())
        for key, value in (
            ("sessionId", self.session_id),
            ("tenantId", self.tenant_id),
            ("expectedSessionRevision", self.expected_session_revision),
            ("workspaceId", self.workspace_id),
        ):
            if value is not None:
                data[key] = value
        data["pendingTools"] = [cast(JsonObject, to_json(tool)) for tool in self.pending_tools]
        if self.interruptions:
            data["interruptions"] = [
                cast(JsonObject, to_json(entry)) for entry in self.interruptions
            ]
        data["lastEventSequence"] = self.last_event_sequence
        data["stateRevision"] = self.state_revision
        data["decisions"] = [decision.to_json() for decision in self.decisions]
        data["childRunIds"] = list(self.child_run_ids)
        data["metadata"] = self.metadata
        # Additive fields (absent when unset, so older readers and states are unaffected).
        if self.model_settings is not None:
            data["modelSettings"] = self.model_settings.to_json()
        if self.structured_output_retries:
            data["structuredOutputRetries"] = self.structured_output_retries
        if self.tool_retries:
            data["toolRetries"] = cast(JsonObject, dict(self.tool_retries))
        return data

    @classmethod
    def from_json(cls, data: object) -> SerializedRunState:
        """Load version 2, or upgrade a reference version 1 state.

        Raises:
            RunStateVersionError: ``"Unsupported run state version <v>."``.
            RunStateError: ``"Serialized run state is missing identity."`` or a malformed field.
        """
        if isinstance(data, SerializedRunState):
            return data
        if not isinstance(data, Mapping):
            raise RunStateError("Serialized run state must be a JSON object.")
        mapping = cast(Mapping[str, Any], data)
        # Strict JSON (D2) over the whole state first: what a checkpoint store or another
        # language could not hold is refused here, typed, naming the path.
        error = json_value_error(dict(mapping), "Serialized run state", max_depth=MAX_WIRE_DEPTH)
        if error is not None:
            raise RunStateError(error.message, details=error.details)
        version = mapping.get("schemaVersion")
        if type(version) is not int or version not in (1, 2):
            raise RunStateVersionError(f"Unsupported run state version {version}.")
        run_id = mapping.get("runId")
        agent_id = mapping.get("agentId")
        if (
            type(run_id) is not str
            or not run_id.strip()
            or type(agent_id) is not str
            or not agent_id.strip()
        ):
            raise RunStateError("Serialized run state is missing identity.")
        status = mapping.get("status", "running")
        if status not in _STATUSES:
            raise RunStateError(f"Unknown run state status {status!r}.")
        if version == 1:
            single = mapping.get("pendingTool")
            pending_raw: list[Any] = [single] if single is not None else []
        else:
            pending_raw = _list(mapping, "pendingTools")
        sequence = mapping.get("lastEventSequence", 0)
        if type(sequence) is not int or sequence < 0:
            raise RunStateError("lastEventSequence must be a non-negative integer.")
        turn = mapping.get("turn", 0)
        if type(turn) is not int or turn < 0:
            raise RunStateError("turn must be a non-negative integer.")
        revision = mapping.get("stateRevision", 0)
        if type(revision) is not int or revision < 0:
            raise RunStateError("stateRevision must be a non-negative integer.")
        remaining = mapping.get("remainingRunMs")
        if remaining is not None and (type(remaining) not in (int, float) or remaining < 0):
            raise RunStateError("remainingRunMs must be a non-negative number.")
        for key in (
            "startedAt",
            "deadlineAt",
            "sessionId",
            "tenantId",
            "expectedSessionRevision",
            "workspaceId",
        ):
            if mapping.get(key) is not None and type(mapping[key]) is not str:
                raise RunStateError(f"{key} must be a string.")
        for key in ("usage", "metadata"):
            if mapping.get(key) is not None and type(mapping[key]) is not dict:
                raise RunStateError(f"Serialized run state field {key} must be a JSON object.")
        return cls(
            run_id=run_id,
            agent_id=agent_id,
            agent_config_digest=str(mapping.get("agentConfigDigest", "")),
            status=status,
            trace=trace_from_json(mapping.get("trace")),
            started_at=str(mapping.get("startedAt", "")),
            deadline_at=mapping.get("deadlineAt"),
            remaining_run_ms=None if remaining is None else int(remaining),
            turn=turn,
            input=_items(mapping.get("input", []), "input"),
            transcript=_items(mapping.get("transcript", []), "transcript"),
            generated_items=_items(mapping.get("generatedItems", []), "generatedItems"),
            usage=normalize_usage_delta(cast(Mapping[str, object], mapping.get("usage") or {})),
            session_id=mapping.get("sessionId"),
            tenant_id=mapping.get("tenantId"),
            expected_session_revision=mapping.get("expectedSessionRevision"),
            workspace_id=mapping.get("workspaceId"),
            pending_tools=_pending_tools(pending_raw),
            interruptions=tuple(
                from_json(Interruption, entry) for entry in _list(mapping, "interruptions")
            ),
            last_event_sequence=sequence,
            decisions=tuple(
                ResolvedDecision.from_json(entry) for entry in _list(mapping, "decisions")
            ),
            child_run_ids=_strings(mapping, "childRunIds"),
            metadata=cast(JsonObject, dict(mapping.get("metadata") or {})),
            state_revision=revision,
            model_settings=_model_settings(mapping.get("modelSettings")),
            structured_output_retries=_count(mapping.get("structuredOutputRetries", 0)),
            tool_retries=_tool_retries(mapping.get("toolRetries")),
            schema_version=RUN_STATE_SCHEMA_VERSION,
        )


def _pending_tools(entries: list[Any]) -> tuple[PendingTool, ...]:
    pending = tuple(_pending(entry) for entry in entries)
    if len({entry.call.id for entry in pending}) < len(pending):
        # Two entries for one call would run its (approved) effect twice.
        raise RunStateError("Serialized run state has two pending tools with one call id.")
    return pending


def _strings(mapping: Mapping[str, Any], key: str) -> tuple[str, ...]:
    values = _list(mapping, key)
    if any(type(value) is not str for value in values):
        raise RunStateError(f"Serialized run state field {key} must be a list of strings.")
    return tuple(cast(list[str], values))


def _model_settings(data: object) -> ModelSettings | None:
    if data is None:
        return None
    try:
        return from_json(ModelSettings, data)
    except Exception as error:
        raise RunStateError(f"Malformed modelSettings in run state: {error}") from error


def _count(value: object) -> int:
    if type(value) is not int or value < 0:
        raise RunStateError("structuredOutputRetries must be a non-negative integer.")
    return value


def _tool_retries(data: object) -> tuple[tuple[str, int], ...]:
    if data is None:
        return ()
    if type(data) is not dict:
        raise RunStateError("toolRetries must be a JSON object.")
    counts = cast(dict[str, object], data)
    for count in counts.values():
        if type(count) is not int or count < 0:
            raise RunStateError("toolRetries values must be non-negative integers.")
    return tuple((name, cast(int, count)) for name, count in counts.items())
