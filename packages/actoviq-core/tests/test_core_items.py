from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import attrs
import pytest

from actoviq.core import (
    ITEM_TYPES,
    UNSET,
    ArtifactRefItem,
    AudioItem,
    Base64Source,
    DocumentItem,
    ErrorItem,
    FileSource,
    HandoffCallItem,
    HandoffResultItem,
    ImageItem,
    ItemValidationError,
    PreservedItem,
    RawItem,
    ReasoningItem,
    RefusalItem,
    StructuredItem,
    TextItem,
    ToolCallItem,
    ToolResultItem,
    UnknownItemTypeError,
    UrlSource,
    assert_output_item,
    dumps,
    is_output_item,
    item_from_json,
    item_to_json,
    items_from_json,
    items_to_json,
    loads,
)

Golden = Callable[[str], Any]


def test_there_are_exactly_fourteen_item_types_in_reference_order() -> None:
    assert list(ITEM_TYPES) == [
        "text",
        "image",
        "audio",
        "document",
        "artifact_ref",
        "tool_call",
        "tool_result",
        "handoff_call",
        "handoff_result",
        "reasoning",
        "raw",
        "structured",
        "refusal",
        "error",
    ]


def test_every_golden_item_round_trips_exactly(golden: Golden) -> None:
    vectors = golden("items.json")["valid"]
    assert len(vectors) == 51
    for vector in vectors:
        item = item_from_json(vector["value"])
        assert item.type == vector["type"]
        assert item_to_json(item) == vector["value"], vector["name"]
        assert item_from_json(json.loads(dumps(item))) == item


def test_upstream_transcript_round_trips_in_order_without_provider_keys(golden: Golden) -> None:
    data = golden("items.json")["transcript_roundtrip"]
    items = items_from_json(data["items"])
    assert [item.type for item in items] == data["types_in_order"]
    dumped = items_to_json(items)
    assert dumped == data["items"]
    text = json.dumps(dumped)
    for forbidden in data["forbidden_substrings"]:
        assert forbidden not in text


def _eighteen_items() -> list[Any]:
    return [
        TextItem(role="system", text="Be precise."),
        TextItem(role="user", text="Hi"),
        TextItem(role="assistant", text="Hello", id="m1"),
        ImageItem(source=UrlSource(url="https://x.test/a.png"), detail="high"),
        ImageItem(source=Base64Source(media_type="image/png", data="iVBO")),
        ImageItem(source=FileSource(file_id="f1"), role="assistant"),
        AudioItem(source=Base64Source(media_type="audio/wav", data="UklG"), transcript="hey"),
        DocumentItem(source=FileSource(file_id="d1"), name="r.pdf", media_type="application/pdf"),
        ArtifactRefItem(artifact_id="art1"),
        ToolCallItem(id="c1", name="lookup", input={"q": "x"}),
        ToolResultItem(call_id="c1", status="success", output=None),
        HandoffCallItem(id="h1", target_agent_id="rev", input={"t": 1}),
        HandoffResultItem(call_id="h1", target_agent_id="rev", status="error", output=None),
        ReasoningItem(id="r1", provider="anthropic", summary="s", opaque={"sig": "x"}),
        RawItem(id="raw1", provider="fixture", value={"future": [1, None]}),
        StructuredItem(value={"a": 1}, schema_name="answer"),
        RefusalItem(message="no", provider_data={"why": None}),
        ErrorItem(
            source="tool", code="E", message="m", retryable=False, call_id="c1", details={"x": 1}
        ),
    ]


def test_constructed_transcript_round_trips_equal_items() -> None:
    items = _eighteen_items()
    assert len({item.type for item in items}) == 14
    back = items_from_json(json.loads(json.dumps(items_to_json(items))))
    assert back == items
    reasoning = back[13]
    raw = back[14]
    assert isinstance(reasoning, ReasoningItem) and reasoning.opaque == {"sig": "x"}
    assert isinstance(raw, RawItem) and raw.value == {"future": [1, None]}


def test_absent_and_null_stay_different() -> None:
    absent = RefusalItem(message="x")
    null = RefusalItem(message="x", provider_data=None)
    assert absent.provider_data is UNSET
    assert "providerData" not in item_to_json(absent)
    assert item_to_json(null)["providerData"] is None
    assert item_from_json(item_to_json(null)) == null
    assert item_from_json(item_to_json(absent)) == absent
    # tool output null is present on the wire
    assert (
        item_to_json(ToolResultItem(call_id="c", status="success", output=None))["output"] is None
    )


def test_snake_case_attributes_become_camel_case_keys() -> None:
    data = item_to_json(
        ImageItem(source=Base64Source(media_type="image/png", data="x"), alt_text="alt")
    )
    assert data == {
        "type": "image",
        "source": {"kind": "base64", "mediaType": "image/png", "data": "x"},
        "altText": "alt",
    }


def test_unknown_type_is_rejected_with_the_original_kept_or_preserved() -> None:
    data = {"type": "video", "source": {"kind": "url", "url": "u"}}
    with pytest.raises(UnknownItemTypeError) as caught:
        item_from_json(data)
    assert caught.value.data == data
    assert caught.value.code == "UNKNOWN_ITEM_TYPE"
    kept = item_from_json(data, preserve_unknown=True)
    assert isinstance(kept, PreservedItem)
    assert kept.type == "video"
    assert item_to_json(kept) == data  # never coerced to text
    with pytest.raises(UnknownItemTypeError):
        item_from_json({"text": "no type"})


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"type": "text", "role": "robot", "text": "x"}, "role"),
        ({"type": "text", "role": "user"}, "text"),
        ({"type": "text", "role": "user", "text": 3}, "text"),
        ({"type": "tool_call", "id": "c", "name": "n", "input": []}, "input"),
        ({"type": "tool_call", "name": "n", "input": {}}, "id"),
        ({"type": "tool_result", "callId": "c", "status": "ok", "output": 1}, "status"),
        ({"type": "tool_result", "callId": "c", "status": "success"}, "output"),
        ({"type": "image", "role": "system", "source": {"kind": "url", "url": "u"}}, "role"),
        ({"type": "image", "source": {"kind": "ftp", "url": "u"}}, "source.kind"),
        ({"type": "image", "source": {"kind": "base64", "data": "x"}}, "mediaType"),
        (
            {"type": "error", "source": "model", "code": "c", "message": "m", "retryable": 1},
            "retryable",
        ),
        ({"type": "structured", "role": "user", "value": 1}, "role"),
        ({"type": "text", "role": "user", "text": "x", "metadata": []}, "metadata"),
        ({"type": "text", "role": "user", "text": "x", "extra": 1}, "extra"),
    ],
)
def test_bad_fields_raise_a_typed_error_naming_the_field(data: dict[str, Any], field: str) -> None:
    with pytest.raises(ItemValidationError) as caught:
        item_from_json(data)
    assert caught.value.field == field
    assert field in str(caught.value)


def test_constructors_validate_json_fields() -> None:
    with pytest.raises(ItemValidationError, match=r"tool_call\.input"):
        ToolCallItem(id="c", name="n", input={"x": float("nan")})
    with pytest.raises(ItemValidationError, match="invalid at"):
        RawItem(provider="p", value={"b": b"bytes"})  # type: ignore[dict-item]


def test_items_are_frozen_values() -> None:
    item = TextItem(role="user", text="a")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        item.text = "b"  # type: ignore[misc]
    assert attrs.evolve(item, text="b") == TextItem(role="user", text="b")
    assert hash(TextItem(role="user", text="a")) == hash(item)


def test_output_items_must_have_assistant_roles() -> None:
    assert is_output_item(TextItem(role="assistant", text="x"))
    assert not is_output_item(TextItem(role="user", text="x"))
    assert is_output_item(ImageItem(source=UrlSource(url="u")))
    assert not is_output_item(ImageItem(source=UrlSource(url="u"), role="user"))
    assert not is_output_item({"type": "text"})
    with pytest.raises(ItemValidationError, match="role 'assistant'"):
        assert_output_item(TextItem(role="system", text="x"))


def test_loads_and_dumps_round_trip_a_single_item() -> None:
    item = ToolCallItem(id="c", name="n", input={"é": [1, 2.5, None]})
    assert loads(ToolCallItem, dumps(item)) == item
