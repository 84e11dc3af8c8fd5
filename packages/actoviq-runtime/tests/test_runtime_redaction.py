"""Redaction has no hole in the default policy (issue 11 §5, decisions D6/D10): the whole path.

A model streams a tool call whose JSON arguments hold secrets under sensitive keys, split across
deltas; the tool refuses part of the input (so its validation error travels too). Nothing of
the secrets may reach the sinks, the ``RunHandle``, the OpenTelemetry spans (content capture
on), the ``tool.failed`` message or the run's error. The arguments, redacted, are delivered once
the call is complete.
"""

from __future__ import annotations

import json
from typing import cast

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from runtime_testkit import make_agent, scripted_runtime

from actoviq.core import JsonObject, ToolCallItem, ToolResultItem
from actoviq.events import InMemoryEventSink, OpenTelemetrySink, RedactionPolicy
from actoviq.providers import ModelRequest, ToolCallDelta
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import RuntimeTool, ToolBehavior, ToolDescriptor, json_schema_input

CANARY = "sk-live-CANARY7731XQ"
MISPLACED = "pw-MISPLACED-42"  # a value the schema refuses: its error must not quote it
ARGUMENTS: JsonObject = {
    "region": MISPLACED,
    "deploy": {"targets": [{"name": "api", "accessToken": CANARY}], "x-api-key": CANARY},
}


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _provider() -> ScriptedProvider:
    text = json.dumps(ARGUMENTS)
    deltas = [
        ToolCallDelta(call_id="c1", name="deploy" if i == 0 else None, arguments_delta=piece)
        for i, piece in enumerate(_pieces(text, 7))  # the canary is cut across pieces
    ]
    call = ToolCallItem(id="c1", name="deploy", input=ARGUMENTS)

    def answer(request: ModelRequest) -> ScriptedTurn:
        if any(isinstance(item, ToolResultItem) for item in request.input):
            return ScriptedTurn(text="could not deploy")
        return ScriptedTurn(tool_calls=[call], events=deltas)

    return ScriptedProvider([answer], repeat_last=True)


def _deploy_tool() -> RuntimeTool:
    schema: JsonObject = {
        "type": "object",
        "properties": {"region": {"type": "integer"}, "deploy": {"type": "object"}},
    }
    return RuntimeTool(
        descriptor=ToolDescriptor(
            name="deploy",
            input=json_schema_input(schema),
            behavior=ToolBehavior(effect="side-effect"),
        ),
        execute=lambda ctx, args: "deployed",
    )


async def _streamed(policy: RedactionPolicy | None) -> tuple[str, str, str, list[JsonObject]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    sink = InMemoryEventSink()
    runtime = scripted_runtime(
        _provider(),
        tools=[_deploy_tool()],
        event_sinks=[sink, OpenTelemetrySink(tracer_provider=provider, capture_content=True)],
        redaction=policy,
    )
    async with runtime, runtime.stream(make_agent(tools=("deploy",)), "ship it") as handle:
        handle_events = [event async for event in handle]
        result = await handle.result()
    assert result.output == "could not deploy"
    spans = "\n".join(
        f"{span.name} {dict(span.attributes or {})} "
        + " ".join(f"{e.name} {dict(e.attributes or {})}" for e in span.events)
        for span in exporter.get_finished_spans()
    )
    provider.shutdown()
    deltas = [cast(JsonObject, e.data) for e in handle_events if e.type == "model.tool_call.delta"]
    handle_text = json.dumps([e.data for e in handle_events])
    return json.dumps(sink.to_json()), handle_text, spans, deltas


async def test_streamed_argument_secrets_reach_no_sink_handle_span_or_error() -> None:
    sinks, handle, spans, deltas = await _streamed(None)
    for text in (sinks, handle, spans):
        assert "CANARY" not in text
    # The pieces cut the canary, so no single piece could show it: reassemble what was sent.
    assert "CANARY" not in "".join(cast(str, d.get("argumentsDelta", "")) for d in deltas)
    assert len(deltas) > 3
    assert sum(cast(int, d["argumentsLength"]) for d in deltas) == len(json.dumps(ARGUMENTS))
    [whole] = [d["arguments"] for d in deltas if "arguments" in d]
    assert whole == {
        "region": MISPLACED,  # an ordinary key: key-based redaction keeps it
        "deploy": {
            "targets": [{"name": "api", "accessToken": "[REDACTED]"}],
            "x-api-key": "[REDACTED]",
        },
    }
    events = cast(list[JsonObject], json.loads(sinks))
    [failure] = [
        cast(JsonObject, cast(JsonObject, e["data"])["failure"])
        for e in events
        if e["type"] == "tool.failed"
    ]
    assert failure["kind"] == "validation"
    assert "MISPLACED" not in json.dumps(failure)
    assert "<str> is not of type 'integer'" in json.dumps(failure)  # named by its type only


async def test_raw_argument_deltas_are_an_opt_in() -> None:
    _, _, _, deltas = await _streamed(RedactionPolicy(raw_argument_deltas=True))
    raw = "".join(cast(str, d["argumentsDelta"]) for d in deltas)
    assert raw == json.dumps(ARGUMENTS) and CANARY in raw  # what the host asked for
