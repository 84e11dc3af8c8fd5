"""OpenTelemetry spans of a run, with the secrets redacted before they reach the exporter.

``OpenTelemetrySink`` turns the run's events into GenAI semantic-convention spans: one
``invoke_agent`` span for the run, a ``chat`` child per model call and an ``execute_tool`` child
per tool call. Here the tool fails with an error that quotes the API key it was given; the span
records the failure (status ERROR, an ``exception`` event) with the key redacted, and no span
attribute or event holds the key in clear.

The spans go to the OpenTelemetry SDK's in-memory exporter so the example can print them; a
service adds its own exporter's span processor instead (``BatchSpanProcessor`` in production).
``pip install "actoviq-events[otel-sdk]"`` provides the SDK.

Offline (``ACTOVIQ_OFFLINE=1`` or no API key) the scripted provider plays the model; with
``OPENAI_API_KEY`` or ``ANTHROPIC_API_KEY`` a real model decides to call the tool.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from actoviq.core import AgentSpec, ToolCallItem
from actoviq.events import OpenTelemetrySink
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import AgentRuntime, tool

DEMO_KEY = "sk-demo-1111-not-a-real-key-0000"


@tool(effect="read")
def fetch_report(name: str, api_key: str) -> str:
    """Fetch a report from the reporting backend.

    Args:
        name: the report's name.
        api_key: the key the backend expects.
    """
    raise PermissionError(f"backend refused key {api_key} for report {name!r}")


def models() -> tuple[ModelRegistry, str, str]:
    """A real provider when a key is set (and not offline), else the scripted one."""
    offline = os.environ.get("ACTOVIQ_OFFLINE") == "1"
    if not offline and os.environ.get("OPENAI_API_KEY"):
        from actoviq.providers.openai import OpenAIResponsesProvider

        name = os.environ.get("ACTOVIQ_OPENAI_MODEL", "gpt-4.1-mini")
        return ModelRegistry([OpenAIResponsesProvider()]), f"openai-responses:{name}", name
    if not offline and os.environ.get("ANTHROPIC_API_KEY"):
        from actoviq.providers.anthropic import AnthropicProvider

        name = os.environ.get("ACTOVIQ_ANTHROPIC_MODEL", "claude-3-5-haiku-latest")
        return ModelRegistry([AnthropicProvider()]), f"anthropic:{name}", name
    call = ToolCallItem(
        id="call_report", name="fetch_report", input={"name": "q3", "api_key": DEMO_KEY}
    )
    script = [
        ScriptedTurn(tool_calls=[call]),
        ScriptedTurn(text="The reporting backend refused the key; the report is unavailable."),
    ]
    return ModelRegistry([ScriptedProvider(script)]), "scripted:demo-model", "scripted"


def show(spans: tuple[ReadableSpan, ...]) -> None:
    """Print each span (children first, as they end) with its attributes and events."""
    for span in spans:
        attributes = dict(span.attributes or {})
        parent = f" (child of {span.parent.span_id:016x})" if span.parent else ""
        print(f"{span.name} [{span.status.status_code.name}]{parent}")
        for key in ("gen_ai.tool.name", "actoviq.tool.outcome", "error.type"):
            if key in attributes:
                print(f"    {key} = {attributes[key]}")
        for event in span.events:
            message = dict(event.attributes or {}).get("exception.message")
            if message is not None:
                print(f"    {event.name}: {message}")


async def main() -> None:
    registry, model, label = models()
    print(f"provider: {label}")
    # --8<-- [start:sink]
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    runtime = AgentRuntime(
        models=registry,
        tools=[fetch_report],
        event_sinks=[OpenTelemetrySink(tracer_provider=tracer_provider)],
    )
    # --8<-- [end:sink]
    agent: AgentSpec[Any, Any] = AgentSpec(
        id="reporter",
        name="Reporter",
        instructions=(
            f"Fetch the report 'q3' with fetch_report, using the API key {DEMO_KEY}. "
            "If it fails, say so in one sentence."
        ),
        model=model,
        tools=("fetch_report",),
    )
    async with runtime:
        result = await runtime.run(agent, "Get me the Q3 report.")
    print(f"run: {result.status}")
    spans = exporter.get_finished_spans()
    show(spans)
    names = [span.name.split(" ")[0] for span in spans]
    assert "invoke_agent" in names, names
    assert "chat" in names, names
    exported = json.dumps([json.loads(span.to_json()) for span in spans])
    print(f"the key appears in the exported spans: {DEMO_KEY in exported}")
    assert DEMO_KEY not in exported
    tracer_provider.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
