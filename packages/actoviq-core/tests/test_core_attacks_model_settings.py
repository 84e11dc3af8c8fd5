"""Hostile ``ModelSettings`` values (issue 14 §1): every bad value is a typed ``AgentSpecError``.

Found by the adversarial review of resolved promises: a non-iterable ``stop_sequences`` raised a
bare ``TypeError``, a deeply nested ``metadata`` a ``RecursionError`` while the error message was
built, and lone surrogates in the string settings were accepted although strict JSON (D2) refuses
them everywhere else, so they failed later in a checkpoint store instead of at construction.
"""

from __future__ import annotations

from typing import Any, cast

import pytest

from actoviq.core import AgentSpec, AgentSpecError, JsonObject, ModelSettings, from_json


def _deep(levels: int) -> JsonObject:
    root: JsonObject = {}
    node = root
    for _ in range(levels):
        child: JsonObject = {}
        node["a"] = child
        node = child
    return root


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("stop_sequences", 5),
        ("stop_sequences", 1.5),
        ("stop_sequences", b"stop"),
        ("stop_sequences", {"a": "b"}),
        ("stop_sequences", ["ok", None]),
        ("stop_sequences", ["x\ud800"]),
        ("prompt_cache_key", "key\udfff"),
        ("tool_choice", "\ud800"),
        ("metadata", _deep(5_000)),
    ],
)
def test_bad_settings_are_typed(field: str, value: Any) -> None:
    with pytest.raises(AgentSpecError) as caught:
        ModelSettings(**{field: value})
    assert caught.value.code == "AGENT_SPEC_INVALID"
    assert len(str(caught.value)) < 400  # the offending value is shown bounded


def test_bad_stop_sequences_from_the_wire_are_typed() -> None:
    with pytest.raises(AgentSpecError):
        from_json(ModelSettings, {"stopSequences": 5})


def test_huge_value_is_shown_bounded() -> None:
    with pytest.raises(AgentSpecError) as caught:
        ModelSettings(temperature="9" * 100_000)  # type: ignore[arg-type]
    assert len(str(caught.value)) < 400


@pytest.mark.parametrize("field", ["tools", "handoffs", "middleware"])
def test_a_list_field_given_a_non_list_is_typed(field: str) -> None:
    # handoffs=5 raised a bare TypeError from the converter.
    with pytest.raises(AgentSpecError) as caught:
        AgentSpec(id="a", name="A", instructions="x", model="m:m", **cast(Any, {field: 5}))
    assert caught.value.field == field
