"""Property: a secret canary never reaches delivered events or exported spans.

Secrets sit under generated sensitive keys (any casing style, vendor prefixes), in nested
lists and mappings, as plain values, inside free text (with text scanning), inside JSON
documents held in string fields, and inside tool-call arguments streamed as JSON text split at
arbitrary points across several deltas (and in the raw provider events carrying the same
pieces). The default policy must withhold every argument fragment and deliver the whole
arguments, once complete, redacted by key.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, cast

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
# Sensitive keys are generated, not listed: a sensitive core (one of the default patterns'
# words), optional vendor prefixes, written camelCase, PascalCase, snake_case, SCREAMING_SNAKE,
# kebab-case or Train-Case.
CORES: tuple[tuple[str, ...], ...] = (
    ("api", "key"),
    ("access", "token"),
    ("refresh", "token"),
    ("auth", "token"),
    ("id", "token"),
    ("session", "token"),
    ("bearer", "token"),
    ("token",),
    ("client", "secret"),
    ("app", "secret"),
    ("secret",),
    ("private", "key"),
    ("signing", "key"),
    ("encryption", "key"),
    ("master", "key"),
    ("password",),
    ("passwd",),
    ("passphrase",),
    ("credentials",),
    ("authorization",),
    ("signature",),
)
STYLES = ("camel", "pascal", "snake", "screaming", "kebab", "train")
vendor = st.text(alphabet="bdfhjlmnqvwxz", min_size=2, max_size=6)  # never forms a core word


def _spell(words: list[str], style: str) -> str:
    if style == "camel":
        return words[0] + "".join(w.capitalize() for w in words[1:])
    if style == "pascal":
        return "".join(w.capitalize() for w in words)
    if style == "snake":
        return "_".join(words)
    if style == "screaming":
        return "_".join(words).upper()
    if style == "kebab":
        return "-".join(words)
    return "-".join(w.capitalize() for w in words)


def _key(prefix: list[str], core: tuple[str, ...], style: str) -> str:
    return _spell([*prefix, *core], style)


sensitive_keys = st.one_of(
    st.builds(_key, st.lists(vendor, max_size=2), st.sampled_from(CORES), st.sampled_from(STYLES)),
    st.builds(_key, st.just([]), st.just(("cookie",)), st.sampled_from(STYLES)),
    st.builds(_key, st.just(["set"]), st.just(("cookie",)), st.sampled_from(STYLES)),
)
SENSITIVE_KEYS = sensitive_keys  # kept for the free-text properties below
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
    sensitive = SENSITIVE_KEYS
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


# -- tool-call arguments streamed as JSON text ---------------------------------------------------

REDACTED = "[REDACTED]"
plain_keys = st.text(alphabet="abcdefgh", min_size=1, max_size=8)  # never a sensitive word
plain_values: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-1000, 1000),
    st.text(alphabet="abcdefgh xyz", max_size=10),
)


@st.composite
def _argument_pair(draw: st.DrawFn, depth: int = 0) -> tuple[Any, Any]:
    """``(value, what the default redaction must deliver for it)``."""
    shape = draw(
        st.sampled_from(["leaf", "list", "dict", "json-string"] if depth < 3 else ["leaf"])
    )
    if shape == "leaf":
        value = draw(plain_values)
        return value, value
    if shape == "list":
        pairs = draw(st.lists(_argument_pair(depth + 1), max_size=3))
        return [p[0] for p in pairs], [p[1] for p in pairs]
    if shape == "json-string":  # a JSON document held in a string field
        inner, expected = draw(_argument_object(depth + 1))
        text = json.dumps(inner, ensure_ascii=False)
        if expected == inner:
            return text, text
        return text, json.dumps(expected, ensure_ascii=False, separators=(",", ":"))
    return draw(_argument_object(depth + 1))


@st.composite
def _argument_object(draw: st.DrawFn, depth: int = 0) -> tuple[Any, Any]:
    value: dict[str, Any] = {}
    expected: dict[str, Any] = {}
    for key in draw(st.lists(plain_keys, max_size=3, unique=True)):
        value[key], expected[key] = draw(_argument_pair(depth + 1))
    if draw(st.booleans()):
        secret_key = draw(sensitive_keys)
        secret = draw(canaries)
        value[secret_key] = draw(st.sampled_from([secret, [secret], {"value": secret}]))
        expected[secret_key] = REDACTED
    return value, expected


@st.composite
def _streamed_arguments(draw: st.DrawFn) -> tuple[str, list[str], dict[str, Any]]:
    """Arguments with a secret nested in a list (always) and elsewhere (maybe), as JSON text
    split at arbitrary points into several pieces; and the redacted arguments expected."""
    body, expected = draw(_argument_object())
    secret_key, secret = draw(sensitive_keys), draw(canaries)
    body["items"] = [
        {"note": "x", secret_key: secret},
        *([body.pop("items")] if "items" in body else []),
    ]
    expected["items"] = [
        {"note": "x", secret_key: REDACTED},
        *([expected.pop("items")] if "items" in expected else []),
    ]
    spaced = draw(st.booleans())
    text = json.dumps(body, ensure_ascii=False, separators=(", ", ": ") if spaced else (",", ":"))
    cuts = sorted(set(draw(st.lists(st.integers(1, len(text) - 1), min_size=1, max_size=8))))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    return text, pieces, expected


def _raw_provider_events(pieces: list[str]) -> list[dict[str, Any]]:
    """The same pieces as OpenAI Responses, Chat Completions and Anthropic stream events."""
    events: list[dict[str, Any]] = []
    for piece in pieces:
        events.append({"type": "response.function_call_arguments.delta", "delta": piece})
        events.append(
            {"choices": [{"delta": {"tool_calls": [{"function": {"arguments": piece}}]}}]}
        )
        events.append(
            {
                "type": "content_block_delta",
                "delta": {"type": "input_json_delta", "partial_json": piece},
            }
        )
    return events


async def _deliver_arguments(
    pieces: list[str], policy: RedactionPolicy
) -> tuple[list[dict[str, Any]], str, str]:
    exporter = InMemoryExporterHolder()
    ids = SequentialIdFactory()
    memory = InMemoryEventSink()
    otel = OpenTelemetrySink(tracer_provider=exporter.provider, capture_content=True)
    async with EventDispatcher(default_processors(policy), [memory, otel]) as dispatcher:
        emitter = EventEmitter(create_root_trace_context("run", ids=ids), dispatcher, ids=ids)
        await emitter.emit("run.started", {"agentId": "agent"})
        await emitter.emit("model.requested", {"turn": 1, "model": "p:m"})
        for index, piece in enumerate(pieces):
            data: dict[str, Any] = {"callId": "call-1", "argumentsDelta": piece, "outputIndex": 0}
            if index == 0:
                data["name"] = "deploy"
            await emitter.emit("model.tool_call.delta", data)
        for raw in _raw_provider_events(pieces):
            await emitter.emit("model.provider.event", {"provider": "p", "event": raw})
        await emitter.emit("model.completed", {"turn": 1, "finishReason": "tool_calls"})
        await emitter.emit("run.completed", {"status": "completed"})
        assert dispatcher.failures == ()
    deltas = [
        cast(dict[str, Any], e.data) for e in memory.events if e.type == "model.tool_call.delta"
    ]
    # The pieces cut the secret, so no single piece may show it: reassemble what each raw shape
    # delivered and append it, so a leak of the pieces is seen whole.
    raw = [
        cast(dict[str, Any], cast(dict[str, Any], e.data)["event"])
        for e in memory.events
        if e.type == "model.provider.event"
    ]
    joined = [
        "".join(str(r["delta"]) for r in raw[0::3]),
        "".join(
            str(r["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"])
            for r in raw[1::3]
        ),
        "".join(str(r["delta"]["partial_json"]) for r in raw[2::3]),
        "".join(str(d.get("argumentsDelta", "")) for d in deltas),
    ]
    delivered = json.dumps(memory.to_json(), ensure_ascii=False) + "\n".join(joined)
    spans = "\n".join(_span_text(span) for span in exporter.exporter.get_finished_spans())
    exporter.provider.shutdown()
    return deltas, delivered, spans


@settings(max_examples=80, deadline=None)
@given(_streamed_arguments())
def test_streamed_argument_secrets_never_delivered_by_default(
    streamed: tuple[str, list[str], dict[str, Any]],
) -> None:
    text, pieces, expected = streamed
    assert MARK in text and len(pieces) >= 2  # the property is not vacuous
    deltas, delivered, spans = asyncio.run(_deliver_arguments(pieces, RedactionPolicy()))
    assert MARK not in delivered
    assert MARK not in spans
    assert all("argumentsDelta" not in d for d in deltas)
    assert sum(cast(int, d["argumentsLength"]) for d in deltas) == len(text)
    completed = [d["arguments"] for d in deltas if "arguments" in d]
    assert completed == [expected]  # once, on the last piece, redacted by key
    assert "arguments" in deltas[-1]


@settings(max_examples=30, deadline=None)
@given(_streamed_arguments())
def test_raw_argument_deltas_are_an_explicit_opt_in(
    streamed: tuple[str, list[str], dict[str, Any]],
) -> None:
    text, pieces, _ = streamed
    deltas, _, _ = asyncio.run(
        _deliver_arguments(pieces, RedactionPolicy(raw_argument_deltas=True))
    )
    assert "".join(cast(str, d["argumentsDelta"]) for d in deltas) == text


@settings(max_examples=60, deadline=None)
@given(_argument_object(), sensitive_keys, canaries)
def test_json_documents_in_string_fields_are_redacted_by_key(
    pair: tuple[dict[str, Any], dict[str, Any]], key: str, secret: str
) -> None:
    document, expected = pair
    document[key], expected[key] = [secret], REDACTED
    delivered = asyncio.run(_deliver({"config": json.dumps(document)}, RedactionPolicy()))
    assert MARK not in delivered[0] and MARK not in delivered[1]
    assert (
        json.dumps(json.dumps(expected, ensure_ascii=False, separators=(",", ":")))[1:-1]
        in delivered[0]
    )
