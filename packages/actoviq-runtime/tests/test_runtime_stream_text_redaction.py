"""Text scanning sees a secret whole even when the model streams it in two deltas (D10).

With ``RedactionPolicy(scan_text=True)`` each event is scanned alone, so the runtime cuts its
text deltas at secret-safe points (``actoviq.events.TextStreamSegmenter``): a secret split at
any position reaches no sink, handle or span in part; every character still arrives, in order;
the run's output keeps the model's text as written.
"""

from __future__ import annotations

import json
from typing import cast

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from runtime_testkit import make_agent, scripted_runtime

from actoviq.events import InMemoryEventSink, OpenTelemetrySink, RedactionPolicy, redact_text
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn

SECRET = "sk-live-CANARY7731XQ"
TEXT = f"Use the header Authorization: Bearer {SECRET} and api_key={SECRET} to call it."


async def _stream(pieces: list[str], policy: RedactionPolicy | None) -> tuple[list[str], str]:
    exporter = InMemorySpanExporter()
    tracer = TracerProvider()
    tracer.add_span_processor(SimpleSpanProcessor(exporter))
    sink = InMemoryEventSink()
    provider = ScriptedProvider([ScriptedTurn(text="".join(pieces), stream_deltas=pieces)])
    runtime = scripted_runtime(
        provider,
        event_sinks=[sink, OpenTelemetrySink(tracer_provider=tracer, capture_content=True)],
        redaction=policy,
    )
    async with runtime, runtime.stream(make_agent(), "go") as handle:
        events = [event async for event in handle]
        result = await handle.result()
    assert result.output == "".join(pieces)  # the output item is the model's own text
    spans = " ".join(
        f"{dict(span.attributes or {})} {[dict(e.attributes or {}) for e in span.events]}"
        for span in exporter.get_finished_spans()
    )
    tracer.shutdown()
    deltas = [cast(str, e.data["delta"]) for e in events if e.type == "model.text.delta"]  # type: ignore[index]
    sunk = [cast(str, e.data["delta"]) for e in sink.events if e.type == "model.text.delta"]  # type: ignore[index]
    assert sunk == deltas
    return deltas, json.dumps(sink.to_json()) + spans


async def test_a_secret_split_at_any_position_is_never_shown_in_part() -> None:
    policy = RedactionPolicy(scan_text=True)
    start = TEXT.index(SECRET)
    for cut in range(start - 8, start + len(SECRET) + 1):  # also through "Bearer "
        deltas, delivered = await _stream([TEXT[:cut], TEXT[cut:]], policy)
        assert "CANARY" not in delivered and "CANARY" not in "".join(deltas), cut
        assert "".join(deltas) == redact_text(TEXT, policy)  # the same as scanning it whole


async def test_word_sized_deltas_arrive_whole_and_in_order() -> None:
    words = [f"{word} " for word in ["the", "model", "writes", "ordinary", "prose", "here"]]
    deltas, _ = await _stream(words, RedactionPolicy(scan_text=True))
    assert deltas == words  # nothing held: each delta ends a word


async def test_without_text_scanning_deltas_are_passed_as_they_come() -> None:
    pieces = ["Bearer sk-", "live-abc", "def"]
    deltas, _ = await _stream(pieces, None)
    assert deltas == pieces  # key-based redaction does not read text: nothing to hold
