"""Property: a secret canary never reaches delivered events or exported spans."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from actoviq.events import (
    EventDispatcher,
    EventEmitter,
    InMemoryEventSink,
    OpenTelemetrySink,
    RedactionPolicy,
    SequentialIdFactory,
    create_root_trace_context,
    default_processors,
)

MARK = "CANARY"


def _canary(tail: str) -> str:
    return f"sk-test-{MARK}{tail}"


canaries = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=8, max_size=24).map(
    _canary
)
SENSITIVE_KEYS = [
    "api_key",
    "apiKey",
    "API-KEY",
    "x-api-key",
    "Authorization",
    "proxy-authorization",
    "token",
    "access_token",
    "client_secret",
    "password",
    "Cookie",
    "openai_api_key",
]
TEMPLATES = [
    "Authorization: Bearer {c}",
    "authorization=Bearer {c}",
    "curl -H 'Authorization: Basic {c}' https://api.example.com",
    "https://user:{c}@example.com/path",
    "postgres://admin:{c}@db.internal:5432/app",
    "https://example.com/v1/models?api_key={c}&limit=3",
    "use {c} as the key",
    "api_key={c}",
    '{{"password": "{c}"}}',
]
words = st.text(alphabet="abcdefgh ", max_size=12)
keys = st.text(alphabet="abcdefgh", min_size=1, max_size=8)
scalars: st.SearchStrategy[object] = st.one_of(st.none(), st.booleans(), st.integers(), words)


def _keyed(key: str, canary: str) -> object:
    return {key: canary}


def _keyed_nested(key: str, canary: str) -> object:
    return {key: {"value": canary, "list": [canary]}}


def _in_text(template: str, canary: str, before: str, after: str) -> object:
    return f"{before} {template.format(c=canary)} {after}"


def _secret_leaf(scan_text: bool) -> st.SearchStrategy[object]:
    sensitive = st.sampled_from(SENSITIVE_KEYS)
    keyed = st.builds(_keyed, sensitive, canaries)
    keyed_nested = st.builds(_keyed_nested, sensitive, canaries)
    if not scan_text:
        return st.one_of(keyed, keyed_nested)
    texts = st.builds(_in_text, st.sampled_from(TEMPLATES), canaries, words, words)
    return st.one_of(keyed, keyed_nested, texts)


def _containers(children: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return st.one_of(st.lists(children, max_size=4), st.dictionaries(keys, children, max_size=4))


def _document(body: object, guaranteed: object) -> object:
    return {"body": body, "guaranteed": guaranteed}


def _trees(scan_text: bool) -> st.SearchStrategy[object]:
    leaves = st.one_of(scalars, _secret_leaf(scan_text))
    tree = st.recursive(leaves, _containers, max_leaves=20)
    return st.builds(_document, tree, _secret_leaf(scan_text))


def _span_text(span: ReadableSpan) -> str:
    parts: list[str] = [span.name, str(dict(span.attributes or {}))]
    parts.append(span.status.description or "")
    for event in span.events:
        parts.append(event.name)
        parts.append(str(dict(event.attributes or {})))
    return "\n".join(parts)


async def _deliver(data: Any, policy: RedactionPolicy) -> tuple[str, str]:
    # Free text that embeds the secret is only safe with text scanning (key-based is not
    # content detection, spec 03 §5.5), so the JSON-in-a-delta event needs scan_text.
    text = json.dumps(data) if policy.scan_text else "plain text"
    exporter = InMemoryExporterHolder()
    ids = SequentialIdFactory()
    memory = InMemoryEventSink()
    otel = OpenTelemetrySink(tracer_provider=exporter.provider, capture_content=True)
    async with EventDispatcher(default_processors(policy), [memory, otel]) as dispatcher:
        emitter = EventEmitter(create_root_trace_context("run", ids=ids), dispatcher, ids=ids)
        await emitter.emit("run.started", {"agentId": "agent"})
        await emitter.emit("model.requested", {"turn": 1, "model": "p:m"})
        await emitter.emit("model.text.delta", {"delta": text})
        await emitter.emit("custom.payload", data)
        await emitter.emit("tool.started", {"callId": "c", "name": "t", "effect": "read"})
        await emitter.emit("tool.failed", {"callId": "c", "name": "t", "failure": data})
        await emitter.emit("run.failed", {"error": data})
        assert dispatcher.failures == ()
    delivered = json.dumps(memory.to_json())
    spans = "\n".join(_span_text(span) for span in exporter.exporter.get_finished_spans())
    exporter.provider.shutdown()
    assert len(memory.events) == 7
    return delivered, spans


class InMemoryExporterHolder:
    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))


@settings(max_examples=60, deadline=None)
@given(_trees(scan_text=True))
def test_canary_never_delivered_with_text_scanning(data: Any) -> None:
    assert MARK in json.dumps(data)  # the property is not vacuous
    delivered, spans = asyncio.run(_deliver(data, RedactionPolicy(scan_text=True)))
    assert MARK not in delivered
    assert MARK not in spans
    assert "[REDACTED]" in delivered


@settings(max_examples=60, deadline=None)
@given(_trees(scan_text=False))
def test_canary_under_sensitive_keys_never_delivered_by_default(data: Any) -> None:
    assert MARK in json.dumps(data)
    delivered, spans = asyncio.run(_deliver(data, RedactionPolicy()))
    assert MARK not in delivered
    assert MARK not in spans
