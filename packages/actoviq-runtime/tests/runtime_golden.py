"""Driving ``AgentRuntime`` with the scenarios of the golden ``run-events.json``.

Builds the golden tools and the scripted provider turns, runs each leg (``run``, ``stream``,
``resume``) and normalises what the port produced the way the golden README says (event ids,
trace and span ids as placeholders by first appearance; ISO-8601 timestamps checked, then
replaced by ``"<timestamp>"``).
"""

from __future__ import annotations

import json
import re
from typing import Any, cast

import attrs
from oracle_data import load_golden as load_golden_file
from runtime_testkit import RecordingCheckpointStore

from actoviq.core import AgentSpec, JsonObject, JsonValue, RunResult, items_from_json, to_json
from actoviq.events import InMemoryEventSink, RunEvent, run_event_to_json
from actoviq.providers import ModelRegistry, ModelRequest, stream_event_from_json
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import (
    AgentRuntime,
    InterruptionDecision,
    RuntimeTool,
    ToolBehavior,
    ToolDescriptor,
    ToolExecutionContext,
    json_schema_input,
)

_ISO_MS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
_TIMESTAMP_KEYS = frozenset({"timestamp", "startedAt", "completedAt", "deadlineAt"})


def load_golden() -> JsonObject:
    """The parsed ``run-events.json``."""
    return cast(JsonObject, load_golden_file("run-events.json"))


def _returns(name: str, value: JsonObject) -> JsonObject:
    if name == "get_weather":
        return {"city": value["city"], "tempC": 18, "condition": "sunny"}
    if name == "get_time":
        return {"timezone": value["timezone"], "time": "14:05"}
    if name == "send_email":
        return {"sent": True, "messageId": "email-1", "to": value["to"]}
    raise AssertionError(f"unknown golden tool {name}")


def golden_tools(descriptors: list[JsonObject], log: list[str]) -> list[RuntimeTool]:
    """Tools equal to the golden ``tools`` (deterministic outputs; executions logged)."""
    tools: list[RuntimeTool] = []
    for descriptor in descriptors:
        name = cast(str, descriptor["name"])
        behavior = cast(JsonObject, descriptor["behavior"])

        def execute(ctx: ToolExecutionContext, value: Any, name: str = name) -> JsonObject:
            log.append(f"{name}:{json.dumps(value, separators=(',', ':'), ensure_ascii=False)}")
            return _returns(name, cast(JsonObject, value))

        tools.append(
            RuntimeTool(
                descriptor=ToolDescriptor(
                    name=name,
                    description=cast(str, descriptor["description"]),
                    input=json_schema_input(cast(JsonObject, descriptor["jsonSchema"])),
                    behavior=ToolBehavior(
                        effect=cast(Any, behavior["effect"]),
                        requires_approval=bool(behavior.get("requiresApproval", False)),
                    ),
                ),
                execute=execute,
            )
        )
    return tools


def scripted_turns(script: list[JsonObject]) -> list[ScriptedTurn]:
    """The golden script as ``ScriptedTurn`` values (same output, usage, id, stream events)."""
    turns: list[ScriptedTurn] = []
    for entry in script:
        response = cast(JsonObject, entry["response"])
        stream = cast(list[JsonObject] | None, entry.get("stream"))
        turns.append(
            ScriptedTurn(
                output=items_from_json(cast(list[Any], response["output"])),
                usage=cast(JsonObject, response["usage"]),
                finish_reason=cast(Any, response["finishReason"]),
                response_id=cast(str, response["id"]),
                events=None if stream is None else [stream_event_from_json(e) for e in stream],
            )
        )
    return turns


class Normalizer:
    """Placeholders for ids by first appearance (shared across a scenario's legs)."""

    def __init__(self) -> None:
        self._ids: dict[str, dict[str, str]] = {"eventId": {}, "traceId": {}, "spanId": {}}

    def _placeholder(self, kind: str, raw: str) -> str:
        table = self._ids[kind]
        if raw not in table:
            table[raw] = f"<{kind}:{len(table) + 1}>"
        return table[raw]

    def value(self, value: Any, key: str | None = None) -> Any:
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for k, v in cast(dict[str, Any], value).items():
                out[k] = self.value(v, k)
            return out
        if isinstance(value, list):
            return [self.value(v) for v in cast(list[Any], value)]
        if isinstance(value, str):
            if key in _TIMESTAMP_KEYS:
                assert _ISO_MS.match(value), f"{key}={value!r} is not ISO-8601 UTC with ms"
                return "<timestamp>"
            if key == "eventId":
                return self._placeholder("eventId", value)
            if key == "traceId":
                return self._placeholder("traceId", value)
            if key in ("spanId", "parentSpanId"):
                return self._placeholder("spanId", value)
        return value


def save_summary(state: JsonObject) -> JsonObject:
    """A checkpoint save as the port records it (``pendingTools`` as ``[callId, status]``)."""
    pending = cast(list[JsonObject], state.get("pendingTools") or [])
    return {
        "op": "save",
        "status": state["status"],
        "turn": state["turn"],
        "pendingTools": [
            [cast(str, cast(JsonObject, p["call"])["id"]), cast(str, p["status"])] for p in pending
        ],
        "generatedItems": len(cast(list[Any], state["generatedItems"])),
        "transcript": len(cast(list[Any], state["transcript"])),
    }


def request_json(request: ModelRequest) -> JsonObject:
    """A model request as wire JSON."""
    return cast(JsonObject, to_json(request))


@attrs.define
class LegOutcome:
    """What one leg produced (already normalised where the README says so)."""

    events: list[JsonObject]
    result: JsonObject
    raw_result: RunResult[Any]
    handle_events: list[JsonObject] | None = None
    saves: list[JsonObject] = attrs.field(factory=lambda: cast(list[JsonObject], []))
    deletes: list[str] = attrs.field(factory=lambda: cast(list[str], []))
    final_snapshot: JsonObject | None = None


@attrs.define
class ScenarioRun:
    """All legs of one scenario plus the provider's requests and the tool executions."""

    legs: list[LegOutcome]
    requests: list[tuple[str, JsonObject]]
    executions: list[str]


def _result_json(normalizer: Normalizer, result: RunResult[Any]) -> JsonObject:
    data = cast(JsonObject, to_json(result))
    return cast(JsonObject, normalizer.value(data))


async def drive(scenario: JsonObject, golden: JsonObject) -> ScenarioRun:
    """Run every leg of ``scenario`` against a fresh runtime and collect what it produced."""
    log: list[str] = []
    provider = ScriptedProvider(scripted_turns(cast(list[JsonObject], scenario["script"])))
    store = RecordingCheckpointStore()
    sink = InMemoryEventSink()
    agent_data = cast(JsonObject, scenario["agent"])
    agent: AgentSpec[Any, Any] = AgentSpec(
        id=cast(str, agent_data["id"]),
        name=cast(str, agent_data["name"]),
        instructions=cast(str, agent_data["instructions"]),
        model=cast(str, agent_data["model"]),
        tools=tuple(cast(list[str], agent_data.get("tools", []))),
    )
    runtime = AgentRuntime(
        models=ModelRegistry([provider]),
        tools=golden_tools(cast(list[JsonObject], golden["tools"]), log),
        checkpoint_store=store,
        event_sinks=[sink],
    )
    normalizer = Normalizer()
    run_id = cast(str, cast(JsonObject, scenario["run_options"])["runId"])
    legs: list[LegOutcome] = []
    seen_events = 0
    seen_saves = 0
    seen_deletes = 0
    last_state: JsonObject | None = None
    async with runtime:
        for leg in cast(list[JsonObject], scenario["legs"]):
            kind = leg["leg"]
            handle_events: list[RunEvent] | None = None
            snapshot: JsonObject | None = None
            if kind == "run":
                result = await runtime.run(agent, cast(str, scenario["input"]), run_id=run_id)
            else:
                if kind == "stream":
                    handle = runtime.stream(agent, cast(str, scenario["input"]), run_id=run_id)
                else:
                    decisions = [
                        InterruptionDecision(
                            interruption_id=cast(str, d["interruptionId"]),
                            outcome=cast(Any, d["outcome"]),
                            reason=cast(str | None, d.get("reason")),
                        )
                        for d in cast(list[JsonObject], leg["decisions"])
                    ]
                    assert last_state is not None
                    handle = runtime.resume(last_state, decisions)
                handle_events = []
                async with handle:
                    async for event in handle:
                        handle_events.append(event)
                    result = await handle.result()
                    snapshot = await handle.snapshot()
            events = list(sink.events_for_run(run_id))[seen_events:]
            seen_events += len(events)
            outcome = LegOutcome(
                events=[normalizer.value(run_event_to_json(e)) for e in events],
                result=_result_json(normalizer, result),
                raw_result=result,
                handle_events=None
                if handle_events is None
                else [normalizer.value(run_event_to_json(e)) for e in handle_events],
                saves=[save_summary(s) for s in store.saves[seen_saves:]],
                deletes=store.deletes[seen_deletes:],
                final_snapshot=None if snapshot is None else normalizer.value(snapshot),
            )
            seen_saves = len(store.saves)
            seen_deletes = len(store.deletes)
            last_state = result.state
            legs.append(outcome)
    requests = [
        ("stream" if call.streaming else "generate", request_json(call.request))
        for call in provider.calls
    ]
    return ScenarioRun(legs=legs, requests=requests, executions=log)


def strip_types(events: list[JsonObject], *types: str) -> list[JsonObject]:
    """Events without the given types."""
    return [event for event in events if event["type"] not in types]


def renumber(events: list[JsonObject], start: int = 1) -> list[JsonObject]:
    """Events with sequences ``start, start+1, …`` (after a deliberate removal)."""
    return [{**event, "sequence": start + index} for index, event in enumerate(events)]


def json_equal(left: JsonValue, right: JsonValue) -> bool:
    """Type-strict JSON equality (bools never equal numbers; ints equal floats by value)."""
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(
            json_equal(a, b) for a, b in zip(left, right, strict=True)
        )
    same_kind = type(left) is type(right) or (
        isinstance(left, int | float) and isinstance(right, int | float)
    )
    return same_kind and left == right
