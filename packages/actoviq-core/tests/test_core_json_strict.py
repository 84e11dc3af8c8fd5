"""Strict JSON (D2, D10): valid Unicode, safe integers, bounded depth; typed errors everywhere.

Each rule is checked on the validators, on item construction (ItemValidationError naming the
field and path) and on every encoder/decoder of core, which must refuse with JsonValueError and
never raise RecursionError, UnicodeEncodeError or OverflowError.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from actoviq.core import (
    ITEM_TYPES,
    MAX_JSON_DEPTH,
    MAX_SAFE_INTEGER,
    MAX_WIRE_DEPTH,
    AgentSpec,
    AgentSpecError,
    ItemValidationError,
    JsonValue,
    JsonValueError,
    RefSpec,
    TextItem,
    ToolCallItem,
    ToolResultItem,
    UrlSource,
    assert_json_value,
    clone_json_value,
    dumps,
    dumps_canonical,
    dumps_compact,
    find_json_violation,
    is_json_value,
    item_from_json,
    item_to_json,
    json_value_error,
    loads,
    loads_strict,
    to_json,
)
from actoviq.core._validate import check_opt_str, check_str


def nest(depth: int, leaf: Any = 1) -> Any:
    """``leaf`` wrapped in ``depth`` arrays (``nest(1) == [1]``)."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def nest_objects(depth: int) -> Any:
    value: Any = {}
    for _ in range(depth - 1):
        value = {"k": value}
    return value


# Every function of core that checks, copies, writes or reads a JSON value.
WRITERS: dict[str, Callable[[Any], object]] = {
    "assert_json_value": assert_json_value,
    "clone_json_value": clone_json_value,
    "dumps_compact": dumps_compact,
    "dumps_canonical": dumps_canonical,
}


def _reason(call: Callable[[], object]) -> str | None:
    with pytest.raises(JsonValueError) as caught:
        call()
    return caught.value.reason


# --- lone surrogates ------------------------------------------------------------------------------

SURROGATE_VALUES: list[Any] = [
    "x\ud800",
    "\udfff",
    "\ud83d\ude00",  # a surrogate *pair* as two code points is not the emoji either
    {"a": ["ok", "b\udc00"]},
    {"k\ud800": 1},
    [{"nested": {"deeper\udbff": None}}],
]


@pytest.mark.parametrize("value", SURROGATE_VALUES)
def test_lone_surrogates_are_refused_by_every_validator_and_writer(value: Any) -> None:
    assert not is_json_value(value)
    assert find_json_violation(value) is not None
    for name, write in WRITERS.items():
        assert _reason(lambda write=write: write(value)) == "lone-surrogate", name


def test_surrogate_error_names_the_path_without_the_surrogate_itself() -> None:
    error = json_value_error({"a": [0, "x\ud800"]}, "metadata")
    assert error is not None
    assert (error.path, error.reason) == ("$.a[1]", "lone-surrogate")
    error = json_value_error({"ok": {"k\ud800": 1}}, "metadata")
    assert error is not None
    assert error.path == "$.ok.'k\\ud800'"
    error.message.encode("utf-8")  # the message itself is printable


def test_valid_non_ascii_text_is_accepted() -> None:
    value: JsonValue = {"clé": "värde 🙂 日本語", "emoji\U0001f600": ["\ue000", "\uffff"]}
    assert is_json_value(value)
    assert loads_strict(dumps_compact(value).encode("utf-8")) == value


def test_escaped_lone_surrogates_in_json_text_are_refused() -> None:
    assert _reason(lambda: loads_strict('{"a": "\\ud800"}')) == "lone-surrogate"
    assert _reason(lambda: loads_strict('{"\\udc00": 1}')) == "lone-surrogate"
    assert loads_strict('"\\ud83d\\ude00"') == "\U0001f600"  # an escaped pair is the emoji


def _string_fields() -> list[Any]:
    params: list[Any] = []
    for item_type, cls in ITEM_TYPES.items():
        for field in attrs.fields(cls):
            if field.validator in (check_str, check_opt_str):
                params.append(pytest.param(cls, field.name, id=f"{item_type}.{field.name}"))
    return params


def _minimal(cls: type[Any]) -> dict[str, Any]:
    """A valid item of ``cls`` as keyword arguments (every required field set)."""
    values: dict[str, Any] = {
        "role": "assistant",
        "source": UrlSource(url="https://example.test/a"),
        "status": "success",
        "output": None,
        "input": {},
        "opaque": None,
        "value": None,
        "retryable": False,
    }
    kwargs: dict[str, Any] = {}
    if cls.type == "error":
        values["source"] = "tool"
    for field in attrs.fields(cls):
        if field.default is not attrs.NOTHING:
            continue
        kwargs[field.name] = values.get(field.name, "x")
    return kwargs


@pytest.mark.parametrize(("cls", "name"), _string_fields())
def test_every_string_field_of_every_item_refuses_lone_surrogates(
    cls: type[Any], name: str
) -> None:
    kwargs = _minimal(cls)
    cls(**kwargs)  # valid as built
    kwargs[name] = "bad \ud800 text"
    with pytest.raises(ItemValidationError) as caught:
        cls(**kwargs)
    assert caught.value.reason == "lone-surrogate"
    assert caught.value.field is not None


def test_item_json_fields_refuse_surrogates_in_keys_and_values_with_the_path() -> None:
    with pytest.raises(ItemValidationError) as caught:
        ToolCallItem(id="c", name="n", input={"q": {"x\udfff": 1}})
    assert caught.value.field == "input"
    assert caught.value.reason == "lone-surrogate"
    with pytest.raises(ItemValidationError) as caught:
        TextItem(role="user", text="ok", metadata={"tags": ["a", "\ud800"]})
    assert (caught.value.field, caught.value.path) == ("metadata", "$.tags[1]")
    with pytest.raises(ItemValidationError):
        item_from_json({"type": "text", "role": "user", "text": "x\ud800"})


# --- depth ----------------------------------------------------------------------------------------


def test_the_depth_limit_is_inclusive_and_counts_containers() -> None:
    assert MAX_JSON_DEPTH == 512
    assert MAX_WIRE_DEPTH > MAX_JSON_DEPTH
    for value in (nest(MAX_JSON_DEPTH), nest_objects(MAX_JSON_DEPTH)):
        assert is_json_value(value)
        assert clone_json_value(value) == value
        assert loads_strict(dumps_compact(value)) == value
    for value in (nest(MAX_JSON_DEPTH + 1), nest_objects(MAX_JSON_DEPTH + 1)):
        assert not is_json_value(value)
        error = json_value_error(value)
        assert error is not None
        assert error.reason == "too-deep"
        assert len(error.message) < 300  # the path is shortened in the message
    assert is_json_value(nest(MAX_JSON_DEPTH + 1), max_depth=MAX_WIRE_DEPTH)
    assert is_json_value(0, max_depth=0)
    assert not is_json_value([], max_depth=0)


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 10_000, 200_000])
def test_deep_values_are_refused_typed_by_every_function(depth: int) -> None:
    value = nest(depth)
    assert not is_json_value(value)
    assert find_json_violation(value) is not None
    for name, write in WRITERS.items():
        assert _reason(lambda write=write: write(value)) == "too-deep", name
    text = "[" * depth + "]" * depth
    assert _reason(lambda: loads_strict(text)) == "too-deep"
    if depth > MAX_WIRE_DEPTH:  # the converter copies documents, which may be deeper
        assert _reason(lambda: to_json({"deep": value})) == "too-deep"
    with pytest.raises(ItemValidationError) as caught:
        ToolResultItem(call_id="c", status="success", output=value)
    assert caught.value.reason == "too-deep"


def test_cycles_are_refused_typed_by_every_function() -> None:
    cyclic: dict[str, Any] = {"a": [1]}
    cyclic["a"].append(cyclic)
    assert not is_json_value(cyclic)
    for name, write in WRITERS.items():
        assert _reason(lambda write=write: write(cyclic)) == "cycle", name
    assert _reason(lambda: to_json(cyclic)) == "too-deep"  # the converter copies, bounded


def test_items_at_the_depth_limit_survive_every_core_codec() -> None:
    deep = nest(MAX_JSON_DEPTH - 1)  # input is an object: one more level
    call = ToolCallItem(id="c", name="n", input={"deep": deep})
    wire = item_to_json(call)
    assert wire["input"] == {"deep": deep}
    assert item_from_json(wire) == call
    text = dumps(call)
    assert loads(ToolCallItem, text) == call
    assert item_from_json(json.loads(text)) == call
    result = ToolResultItem(call_id="c", status="success", output=nest(MAX_JSON_DEPTH))
    assert loads(ToolResultItem, dumps(result)) == result


def test_core_codecs_do_not_depend_on_the_remaining_python_stack() -> None:
    # Called 700 frames down (a framework's stack), the iterative walks still work at the limit.
    deep = ToolResultItem(call_id="c", status="success", output=nest(MAX_JSON_DEPTH))

    def at_depth(frames: int) -> object:
        if frames:
            return at_depth(frames - 1)
        return (
            item_to_json(deep),
            is_json_value(nest(MAX_JSON_DEPTH)),
            json_value_error(nest(100_000)),
        )

    wire, valid, error = at_depth(700)  # type: ignore[misc]
    assert wire == {
        "type": "tool_result",
        "callId": "c",
        "status": "success",
        "output": deep.output,
    }
    assert valid is True
    assert isinstance(error, JsonValueError)


# --- safe integers --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "number", [MAX_SAFE_INTEGER + 1, -(MAX_SAFE_INTEGER + 1), 2**53 + 1, 2**64, -(2**63), 10**400]
)
def test_integers_beyond_the_safe_range_are_refused(number: int) -> None:
    assert not is_json_value(number)
    assert not is_json_value({"n": [number]})
    for name, write in WRITERS.items():
        assert _reason(lambda write=write: write({"n": number})) == "unsafe-integer", name
    assert _reason(lambda: loads_strict(f'{{"n": {number}}}')) == "unsafe-integer"
    with pytest.raises(ItemValidationError) as caught:
        ToolCallItem(id="c", name="n", input={"n": number})
    assert (caught.value.reason, caught.value.path) == ("unsafe-integer", "$.n")
    assert "strings" in str(caught.value)  # says what to do instead


def test_safe_integers_and_booleans_are_accepted() -> None:
    for number in (MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER, 0, True, False):
        assert is_json_value(number)
        assert loads_strict(dumps_compact(number)) == number
    assert loads_strict(str(MAX_SAFE_INTEGER)) == MAX_SAFE_INTEGER


# --- numbers on the wire --------------------------------------------------------------------------


def test_integral_floats_in_the_safe_range_are_written_as_integers() -> None:
    assert dumps_compact({"a": 2.0, "b": [-0.0, 0.5, -3.0]}) == '{"a":2,"b":[0,0.5,-3]}'
    assert dumps_canonical(1.0) == dumps_canonical(1) == "1"
    assert dumps_compact(float(MAX_SAFE_INTEGER)) == str(MAX_SAFE_INTEGER)
    copy: Any = clone_json_value({"n": 2.0})
    assert copy == {"n": 2}
    assert type(copy["n"]) is int
    kept: list[JsonValue] = [1.5, 2.0]
    dumps_compact({"keep": kept})
    assert type(kept[1]) is float  # the caller's value is not changed


@pytest.mark.parametrize(
    "number", [2.0**53, 4.592740275229641e16, 1e16, 9.999999999999999e20, 1e21, 1e300, 5e-324]
)
def test_other_floats_read_back_as_the_same_float(number: float) -> None:
    for sign in (1.0, -1.0):
        value = sign * number
        back = loads_strict(dumps_compact(value))
        assert type(back) is float
        assert back == value


def test_a_float_rewritten_as_a_big_integer_is_refused_not_changed() -> None:
    # What a JavaScript program writes for 4.592740275229641e16: an integer beyond 2^53.
    assert _reason(lambda: loads_strict("45927402752296410")) == "unsafe-integer"
    assert _reason(lambda: loads_strict("9007199254740992")) == "unsafe-integer"


def test_numbers_that_overflow_to_infinity_are_refused() -> None:
    for text in ("1e400", "[-1e400]", '{"a": 1E309}'):
        assert _reason(lambda text=text: loads_strict(text)) == "non-finite"
    for text in ("NaN", "[Infinity]"):
        with pytest.raises(JsonValueError, match="finite numbers"):
            loads_strict(text)


# --- agent specs ----------------------------------------------------------------------------------


def test_agent_specs_refuse_what_their_digest_could_not_write() -> None:
    with pytest.raises(AgentSpecError) as caught:
        AgentSpec(id="a", name="bad\ud800", instructions="hi")
    assert caught.value.field == "name"
    with pytest.raises(AgentSpecError) as caught:
        AgentSpec(id="a\ud800", name="n", instructions="hi")
    assert caught.value.field == "id"
    with pytest.raises(AgentSpecError):
        AgentSpec(id="a", name="n", instructions="hi", metadata={"n": 2**60})
    with pytest.raises(AgentSpecError):
        AgentSpec(
            id="a", name="n", instructions="hi", tools=(RefSpec(id="t", options={"d": nest(600)}),)
        )
    deep = {"deep": nest(MAX_JSON_DEPTH - 1)}
    spec: AgentSpec[Any, str] = AgentSpec(id="a", name="n", instructions="hi", metadata=deep)
    assert spec.digest().startswith("sha256v1:")
    assert spec.digest([{"name": "t", "inputSchema": {"type": "object"}}]) != spec.digest()
    with pytest.raises(JsonValueError):
        spec.digest([{"name": "t\ud800"}])


# --- one rule set: the fast check and the error path agree --------------------------------------

_bad_leaves = st.sampled_from(
    [float("nan"), float("-inf"), 2**53, -(2**53) - 7, "\ud800", "ok\udfff", b"x", (1,), {1}]
)
_good_leaves = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-MAX_SAFE_INTEGER, max_value=MAX_SAFE_INTEGER)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
_values = st.recursive(
    _good_leaves | _bad_leaves,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text() | st.sampled_from(["k\ud800"]), children, max_size=4)
    ),
    max_leaves=20,
)


@given(_values, st.integers(min_value=0, max_value=6))
def test_the_fast_check_and_the_error_path_agree(value: Any, max_depth: int) -> None:
    valid = is_json_value(value, max_depth=max_depth)
    error = json_value_error(value, max_depth=max_depth)
    assert valid is (error is None)
    assert (find_json_violation(value, max_depth=max_depth) is None) is valid
    if valid:
        assert loads_strict(dumps_compact(value, max_depth=max_depth)) == value
    else:
        assert error is not None
        assert error.reason in {
            "not-json",
            "non-finite",
            "unsafe-integer",
            "lone-surrogate",
            "non-string-key",
            "too-deep",
        }
        with pytest.raises(JsonValueError):
            dumps_compact(value, max_depth=max_depth)
