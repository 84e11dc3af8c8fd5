"""Hypothesis strategies and fixed examples for every canonical item type.

The table is checked against ``typing.get_args(CanonicalItem)``: a new item type without a strategy
and an example fails the harness (ADR-001 release gate).

``edge_json_values`` and ``edge_texts`` draw what strict JSON (D2, D10) is about: numbers at the
boundaries every language must agree on (±(2^53 - 1) and one beyond, 2^64, -0.0, 1e21 ± one ulp,
subnormals, large integral floats), lone UTF-16 surrogates in strings and keys, and values nested
around ``MAX_JSON_DEPTH`` (and far beyond). Each must be accepted unchanged or refused typed.
"""

from __future__ import annotations

import math
from typing import Any, get_args

from hypothesis import strategies as st

from actoviq.core import (
    MAX_JSON_DEPTH,
    MAX_SAFE_INTEGER,
    ArtifactRefItem,
    AudioItem,
    Base64Source,
    CanonicalItem,
    DocumentItem,
    ErrorItem,
    FileSource,
    HandoffCallItem,
    HandoffResultItem,
    ImageItem,
    JsonValue,
    RawItem,
    ReasoningItem,
    RefusalItem,
    StructuredItem,
    TextItem,
    ToolCallItem,
    ToolResultItem,
    UrlSource,
)

CANONICAL_TYPES: tuple[type[Any], ...] = get_args(CanonicalItem)

text = st.text(max_size=20)
ident = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-", min_size=1, max_size=12)
json_values: st.SearchStrategy[JsonValue] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(text, children, max_size=4),
    max_leaves=12,
)
json_objects: st.SearchStrategy[dict[str, JsonValue]] = st.dictionaries(
    text, json_values, max_size=4
)
opt_meta = st.none() | json_objects

# --- the edges of strict JSON ---------------------------------------------------------------------

BOUNDARY_INTEGERS: tuple[int, ...] = (
    0,
    -1,
    MAX_SAFE_INTEGER,
    -MAX_SAFE_INTEGER,
    MAX_SAFE_INTEGER - 1,
    MAX_SAFE_INTEGER + 1,  # 2^53: JavaScript cannot tell it from 2^53 + 1
    -(MAX_SAFE_INTEGER + 1),
    2**53 + 1,
    -(2**53 + 1),
    2**63 - 1,
    -(2**63),
    2**64,
    10**21,
)
"""Integers on both sides of the safe range."""

_MIN_NORMAL = 2.2250738585072014e-308
BOUNDARY_FLOATS: tuple[float, ...] = (
    0.0,
    -0.0,
    2.0,
    -3.0,
    0.1,
    0.5,
    5e-324,  # the smallest subnormal
    -5e-324,
    math.nextafter(_MIN_NORMAL, 0.0),  # the largest subnormal
    _MIN_NORMAL,
    1e-7,
    math.nextafter(1e-7, 0.0),  # JavaScript switches to exponent notation below 1e-7
    math.nextafter(1e-7, 1.0),
    1e-6,
    float(MAX_SAFE_INTEGER),  # an integral float in the safe range: written as an integer
    -float(MAX_SAFE_INTEGER),
    2.0**53,  # integral, beyond the safe range
    2.0**53 + 2,
    1e16,
    4.592740275229641e16,
    9.999999999999999e20,
    math.nextafter(1e21, 0.0),  # the largest double JavaScript writes as an integer
    1e21,
    math.nextafter(1e21, math.inf),
    1e300,
    1.7976931348623157e308,
    -1.7976931348623157e308,
)
"""Floats where number formatting changes between languages."""

number_edges: st.SearchStrategy[int | float] = (
    st.sampled_from(BOUNDARY_INTEGERS)
    | st.sampled_from(BOUNDARY_FLOATS)
    | st.integers(min_value=MAX_SAFE_INTEGER - 2, max_value=MAX_SAFE_INTEGER + 2).map(
        lambda n: n * (1 if n % 2 else -1)
    )
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.floats(min_value=2.0**53, max_value=1e21).map(math.floor).map(float)
)
"""Numbers at and around every boundary, plus arbitrary ones (some beyond the safe range)."""

lone_surrogates = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)


def _spliced(head: str, bad: str, tail: str) -> str:
    return head + bad + tail


edge_texts: st.SearchStrategy[str] = st.one_of(
    text,
    st.builds(_spliced, text, lone_surrogates, text),
    st.sampled_from(["\ud83d\ude00", "\U0001f600", "\ud83d", "x\udfff", "\ufffd", "\u2028"]),
)
"""Strings, some holding lone surrogates (or a surrogate pair as two code points)."""


def nest(depth: int, leaf: Any = 0) -> Any:
    """``leaf`` inside ``depth`` arrays: ``nest(2) == [[0]]`` is 2 deep."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


deep_values: st.SearchStrategy[Any] = st.integers(
    min_value=MAX_JSON_DEPTH - 2, max_value=MAX_JSON_DEPTH + 1
).map(nest) | st.sampled_from([MAX_JSON_DEPTH + 64, 20_000]).map(nest)
"""Arrays nested around the depth limit, and far beyond it."""

edge_json_values: st.SearchStrategy[Any] = (
    st.recursive(
        st.none() | st.booleans() | number_edges | edge_texts,
        lambda children: (
            st.lists(children, max_size=3) | st.dictionaries(edge_texts, children, max_size=3)
        ),
        max_leaves=8,
    )
    | deep_values
)
"""JSON-shaped values whose leaves and keys sit on the strict-JSON boundaries."""
opt_text = st.none() | text
opt_id = st.none() | ident
sources = st.one_of(
    st.builds(UrlSource, url=text),
    st.builds(Base64Source, media_type=text, data=text),
    st.builds(FileSource, file_id=ident),
)
media_role = st.none() | st.sampled_from(["user", "assistant"])
status = st.sampled_from(["success", "error"])

STRATEGIES: dict[type[Any], st.SearchStrategy[Any]] = {
    TextItem: st.builds(
        TextItem,
        role=st.sampled_from(["system", "user", "assistant"]),
        text=text,
        id=opt_id,
        metadata=opt_meta,
    ),
    ImageItem: st.builds(
        ImageItem,
        source=sources,
        role=media_role,
        detail=st.none() | st.sampled_from(["auto", "low", "high"]),
        alt_text=opt_text,
        id=opt_id,
        metadata=opt_meta,
    ),
    AudioItem: st.builds(
        AudioItem,
        source=sources,
        role=media_role,
        transcript=opt_text,
        id=opt_id,
        metadata=opt_meta,
    ),
    DocumentItem: st.builds(
        DocumentItem,
        source=sources,
        role=media_role,
        name=opt_text,
        media_type=opt_text,
        id=opt_id,
        metadata=opt_meta,
    ),
    ArtifactRefItem: st.builds(
        ArtifactRefItem,
        artifact_id=ident,
        name=opt_text,
        media_type=opt_text,
        description=opt_text,
        id=opt_id,
        metadata=opt_meta,
    ),
    ToolCallItem: st.builds(
        ToolCallItem, id=ident, name=ident, input=json_objects, metadata=opt_meta
    ),
    ToolResultItem: st.builds(
        ToolResultItem,
        call_id=ident,
        status=status,
        output=json_values,
        name=st.none() | ident,
        id=opt_id,
        metadata=opt_meta,
    ),
    HandoffCallItem: st.builds(
        HandoffCallItem, id=ident, target_agent_id=ident, input=json_values, metadata=opt_meta
    ),
    HandoffResultItem: st.builds(
        HandoffResultItem,
        call_id=ident,
        target_agent_id=ident,
        status=status,
        output=json_values,
        id=opt_id,
        metadata=opt_meta,
    ),
    ReasoningItem: st.builds(
        ReasoningItem,
        opaque=json_values,
        provider=st.none() | ident,
        summary=opt_text,
        id=opt_id,
        metadata=opt_meta,
    ),
    RawItem: st.builds(RawItem, provider=ident, value=json_values, id=opt_id, metadata=opt_meta),
    StructuredItem: st.builds(
        StructuredItem, value=json_values, schema_name=opt_text, id=opt_id, metadata=opt_meta
    ),
    RefusalItem: st.builds(RefusalItem, message=text, id=opt_id, metadata=opt_meta)
    | st.builds(RefusalItem, message=text, provider_data=json_values),
    ErrorItem: st.builds(
        ErrorItem,
        source=st.sampled_from(["model", "tool", "handoff", "provider", "runtime"]),
        code=ident,
        message=text,
        retryable=st.booleans(),
        call_id=st.none() | ident,
        details=opt_meta,
        id=opt_id,
        metadata=opt_meta,
    ),
}

any_item: st.SearchStrategy[CanonicalItem] = st.one_of(*STRATEGIES.values())


def examples(metadata: dict[str, JsonValue] | None = None) -> dict[type[Any], CanonicalItem]:
    """One deterministic, realistic example per type (optionally all carrying ``metadata``)."""
    items: list[Any] = [
        TextItem(role="user", text="Summarise the report.", metadata=metadata),
        ImageItem(
            source=UrlSource(url="https://example.test/chart.png"),
            role="user",
            detail="high",
            metadata=metadata,
        ),
        AudioItem(
            source=Base64Source(media_type="audio/wav", data="UklGRg=="),
            role="user",
            transcript="hello",
            metadata=metadata,
        ),
        DocumentItem(
            source=Base64Source(media_type="application/pdf", data="JVBERi0xLjQK"),
            role="user",
            name="report.pdf",
            media_type="application/pdf",
            metadata=metadata,
        ),
        ArtifactRefItem(artifact_id="artifact_1", name="big.json", metadata=metadata),
        ToolCallItem(id="call_1", name="lookup", input={"q": "cas"}, metadata=metadata),
        ToolResultItem(
            call_id="call_1",
            status="success",
            output={"value": 42},
            name="lookup",
            metadata=metadata,
        ),
        HandoffCallItem(
            id="handoff_1", target_agent_id="reviewer", input={"task": "review"}, metadata=metadata
        ),
        HandoffResultItem(
            call_id="handoff_1",
            target_agent_id="reviewer",
            status="success",
            output={"ok": True},
            metadata=metadata,
        ),
        ReasoningItem(
            opaque={"type": "reasoning", "id": "rs_1"},
            provider="fixture",
            summary="Checked.",
            metadata=metadata,
        ),
        RawItem(
            provider="fixture", value={"type": "web_search_call", "id": "ws_1"}, metadata=metadata
        ),
        StructuredItem(value={"answer": "42"}, schema_name="answer", metadata=metadata),
        RefusalItem(message="I cannot help with that.", metadata=metadata),
        ErrorItem(
            source="tool",
            code="READ_FAILED",
            message="missing",
            retryable=False,
            call_id="call_1",
            metadata=metadata,
        ),
    ]
    return {type(item): item for item in items}


def context_for(item: CanonicalItem) -> list[CanonicalItem]:
    """A minimal valid transcript ending in ``item`` (results follow their calls)."""
    lead: list[CanonicalItem] = [TextItem(role="user", text="Hi")]
    if isinstance(item, ToolResultItem):
        lead.append(ToolCallItem(id=item.call_id, name=item.name or "lookup", input={}))
    if isinstance(item, HandoffResultItem):
        lead.append(
            HandoffCallItem(id=item.call_id, target_agent_id=item.target_agent_id, input=None)
        )
    return [*lead, item]
