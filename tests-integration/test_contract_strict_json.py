"""Strict JSON across the contract (D2, D10; issues 11 §3 and 23).

Every JSON-carrying field of every item, event data, run states and store payloads get values on
the strict-JSON boundaries (``strategies.edge_json_values``): each is accepted and survives
unchanged, or is refused with the typed error — never a raw ``RecursionError``,
``UnicodeEncodeError`` or a silently changed number. Numbers also go through a JavaScript reader:
an emulation of ``JSON.stringify(JSON.parse(text))`` written from the ECMAScript specification
(``js_numbers``), and the real ``node`` when it is installed.
"""

from __future__ import annotations

import asyncio
import math
import tempfile
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, cast

import attrs
import pytest
from harness import REGISTRY, load_plugins
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from js_numbers import NodeJson, es_number_to_string, js_reserialise, node_path
from strategies import BOUNDARY_FLOATS, edge_json_values, edge_texts, number_edges, text

from actoviq.core import (
    ITEM_TYPES,
    MAX_SAFE_INTEGER,
    MAX_WIRE_DEPTH,
    CanonicalItem,
    ItemValidationError,
    JsonObject,
    JsonValue,
    JsonValueError,
    TextItem,
    ToolResultItem,
    UrlSource,
    dumps,
    dumps_compact,
    is_json_value,
    item_from_json,
    item_to_json,
    loads,
    loads_strict,
)
from actoviq.core._validate import (
    check_json,
    check_json_object,
    check_opt_json_object,
    check_opt_str,
    check_str,
)
from actoviq.events import (
    DeliveryFailure,
    EventDispatcher,
    EventEmitter,
    EventValidationError,
    InMemoryEventSink,
    RunEvent,
    create_root_trace_context,
    default_processors,
    run_event_dumps,
    run_event_from_json,
    run_event_to_json,
)
from actoviq.runtime import (
    InMemorySessionStore,
    NewSessionItem,
    RunStateError,
    SerializedRunState,
    StorageDataError,
)
from actoviq.storage.sqlite import SqliteStorage

load_plugins()
EDGE = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --- the comparison every test uses ---------------------------------------------------------------


def wire_form(number: object) -> object:
    """How a number reads back from our JSON: an integral float in the safe range as an int."""
    if type(number) is float and number.is_integer() and abs(number) <= MAX_SAFE_INTEGER:
        return int(number)
    return number


def assert_same_wire_value(original: object, decoded: object, *, key_order: bool = True) -> None:
    """``decoded`` is ``original`` as read back: same structure, key order, strings, and numbers
    of the same type and value (bit for bit for floats), integral safe floats as ints.

    ``key_order=False`` after a trip through JavaScript, which writes array-index keys
    (``"0"``, ``"12"``) first: the same keys, in any order."""
    stack: list[tuple[object, object]] = [(original, decoded)]
    while stack:
        left, right = stack.pop()
        left = wire_form(left)
        assert type(left) is type(right), (left, right)
        if type(left) is dict:
            left_map: dict[str, Any] = left  # type: ignore[assignment]
            right_map: dict[str, Any] = right  # type: ignore[assignment]
            if key_order:
                assert list(left_map) == list(right_map)
            else:
                assert sorted(left_map) == sorted(right_map)
            stack.extend((value, right_map[key]) for key, value in left_map.items())
        elif type(left) is list:
            left_list: list[Any] = left  # type: ignore[assignment]
            right_list: list[Any] = right  # type: ignore[assignment]
            assert len(left_list) == len(right_list)
            stack.extend(zip(left_list, right_list, strict=True))
        elif type(left) is float:
            assert math.copysign(1.0, left) == math.copysign(1.0, right)  # type: ignore[arg-type]
            assert left == right
        else:
            assert left == right


def holds_big_integral_float(value: object) -> bool:
    """True when ``value`` holds a float JavaScript writes as an integer beyond 2^53 - 1."""
    stack: list[object] = [value]
    while stack:
        current = stack.pop()
        if type(current) is float and 2.0**53 <= abs(current) < 1e21:
            return True
        if type(current) is dict:
            stack.extend(current.values())  # type: ignore[union-attr]
        elif type(current) is list:
            stack.extend(current)  # type: ignore[arg-type]
    return False


# --- the ECMAScript number formatter ------------------------------------------------------

ES_EXAMPLES: list[tuple[float, str]] = [
    (0.0, "0"),
    (-0.0, "0"),
    (1.0, "1"),
    (-1.5, "-1.5"),
    (0.1, "0.1"),
    (100.0, "100"),
    (123e-20, "1.23e-18"),
    (1e-6, "0.000001"),
    (1e-7, "1e-7"),
    (1.5e-7, "1.5e-7"),
    (0.000001234, "0.000001234"),
    (1e20, "100000000000000000000"),
    (1e21, "1e+21"),
    (123456789012345680000.0, "123456789012345680000"),
    (4.592740275229641e16, "45927402752296410"),
    (2.0**53, "9007199254740992"),
    (5e-324, "5e-324"),
    (1.7976931348623157e308, "1.7976931348623157e+308"),
    (-2.5e-10, "-2.5e-10"),
    (1.2345e21, "1.2345e+21"),
]


@pytest.mark.parametrize(("number", "expected"), ES_EXAMPLES, ids=repr)
def test_the_number_formatter_follows_ecmascript(number: float, expected: str) -> None:
    assert es_number_to_string(number) == expected


def test_the_javascript_reserialiser_keeps_structure_and_strings() -> None:
    text = '{"b":[1,2.0,-0.0,1e21,1e-7],"a":"x\\u0001\\n\\"\\\\ \\u2028 \\ud83d\\ude00","z":null}'
    assert js_reserialise(text) == (
        '{"b":[1,2,0,1e+21,1e-7],"a":"x\\u0001\\n\\"\\\\ \u2028 \U0001f600","z":null}'
    )


# --- numbers: Python -> JSON -> JavaScript -> Python --------------------------------------


def _refusal(action: Callable[[], object]) -> tuple[object, BaseException | None]:
    """``(result, None)``, or ``(None, error)`` for a typed refusal."""
    try:
        return action(), None
    except (JsonValueError, ItemValidationError, EventValidationError, RunStateError) as error:
        return None, error


def _numbers_round_trip(number: int | float, rewrite: Callable[[str], str]) -> None:
    value: JsonValue = {"n": number, "list": [number, {"deep": number}]}
    text, refused = _refusal(lambda: dumps_compact(value))
    big_float = type(number) is float and 2.0**53 <= abs(number) < 1e21
    if refused is not None:  # only integers beyond the safe range are refused when written
        assert isinstance(refused, JsonValueError)
        assert refused.reason == "unsafe-integer"
        assert type(number) is int and abs(number) > MAX_SAFE_INTEGER
        return
    assert type(text) is str
    direct = loads_strict(text)
    assert_same_wire_value(value, direct)
    again, refused = _refusal(lambda: loads_strict(rewrite(text)))
    if refused is not None:  # never silently changed: refused, typed
        assert isinstance(refused, JsonValueError)
        assert refused.reason == "unsafe-integer"
        assert big_float
        return
    assert_same_wire_value(direct, again)
    assert not big_float


@EDGE
@given(number_edges)
def test_every_number_survives_a_javascript_reader_or_is_refused_typed(number: int | float) -> None:
    _numbers_round_trip(number, js_reserialise)


@pytest.fixture(scope="module")
def node() -> Iterator[NodeJson]:
    executable = node_path()
    if executable is None:
        pytest.skip("node is not on the PATH: the ECMAScript emulation above covers the rules")
    process = NodeJson(executable)
    yield process
    process.close()


@pytest.mark.parametrize("number", BOUNDARY_FLOATS, ids=repr)
def test_boundary_numbers_through_real_node(node: NodeJson, number: float) -> None:
    assert node.number_to_string(number) == es_number_to_string(number)
    _numbers_round_trip(number, node.reserialise)


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False) | number_edges.map(float))
def test_the_emulation_agrees_with_node_on_random_numbers(node: NodeJson, number: float) -> None:
    assert node.number_to_string(number) == es_number_to_string(number)
    _numbers_round_trip(number, node.reserialise)


@EDGE
@given(edge_json_values)
# JavaScript writes array-index keys first, ascending (the emulation kept insertion order).
@example(value={"": None, "0": None})
@example(value={"b": 1, "10": 2, "2": 3, "01": 4, "4294967295": 5, "4294967294": 6})
def test_the_emulation_agrees_with_node_on_whole_documents(node: NodeJson, value: Any) -> None:
    if not is_json_value(value):
        return
    text = dumps_compact(value)
    assert js_reserialise(text) == node.reserialise(text)


# --- every JSON-carrying field of every item ------------------------------------------------------

_JSON_VALIDATORS = (check_json, check_json_object, check_opt_json_object)


def _fields() -> list[Any]:
    params: list[Any] = []
    for item_type, cls in ITEM_TYPES.items():
        for field in attrs.fields(cls):
            if field.validator in _JSON_VALIDATORS or field.validator in (check_str, check_opt_str):
                params.append(pytest.param(cls, field.name, id=f"{item_type}.{field.name}"))
    return params


def _minimal(cls: type[Any]) -> dict[str, Any]:
    values: dict[str, Any] = {
        "role": "assistant",
        "source": "tool" if cls.type == "error" else UrlSource(url="https://example.test/a"),
        "status": "success",
        "output": None,
        "input": {},
        "opaque": None,
        "value": None,
        "retryable": False,
    }
    return {
        field.name: values.get(field.name, "x")
        for field in attrs.fields(cls)
        if field.default is attrs.NOTHING
    }


def _place(cls: type[Any], name: str, value: object) -> object:
    validator = attrs.fields_dict(cls)[name].validator
    if validator in (check_str, check_opt_str):
        return value if type(value) is str else str(value)
    is_object = isinstance(value, dict)
    if validator in (check_json_object, check_opt_json_object) and not is_object:
        return {"value": value}
    return value


@pytest.mark.parametrize(("cls", "name"), _fields())
@EDGE
@given(data=st.data())
def test_every_item_field_accepts_unchanged_or_refuses_typed(
    cls: type[Any], name: str, data: st.DataObject
) -> None:
    validator = attrs.fields_dict(cls)[name].validator
    drawn = data.draw(edge_texts if validator in (check_str, check_opt_str) else edge_json_values)
    value = _place(cls, name, drawn)
    kwargs = {**_minimal(cls), name: value}
    built, refused = _refusal(lambda: cls(**kwargs))
    if refused is not None:
        assert isinstance(refused, ItemValidationError)
        assert refused.field is not None
        assert not is_json_value(value)  # refused exactly what strict JSON refuses
        return
    item = cast(CanonicalItem, built)
    assert is_json_value(value)
    wire = item_to_json(item)
    text = dumps(item)
    assert_same_wire_value(wire, loads_strict(text, max_depth=MAX_WIRE_DEPTH))
    again = loads(cls, text)
    assert again == item
    assert_same_wire_value(wire, item_to_json(again))
    assert item_from_json(wire) == item
    rewritten, refused = _refusal(lambda: loads(cls, js_reserialise(text)))
    if refused is not None:
        assert holds_big_integral_float(wire)
        return
    assert_same_wire_value(
        item_to_json(again), item_to_json(cast(CanonicalItem, rewritten)), key_order=False
    )


# --- events, run states and store payloads ------------------------------------------------


def _event(data: Any) -> RunEvent:
    return RunEvent(
        event_id="e1",
        sequence=1,
        run_id="r1",
        trace_id="0" * 32,
        span_id="1" * 16,
        type="tool.completed",
        timestamp="2026-01-01T00:00:00.000Z",
        data=data,
    )


@EDGE
@given(edge_json_values)
@example(value={"b": 1, "0": 2})  # JavaScript moves "0" first: same keys, other order
def test_event_data_is_written_and_read_unchanged_or_refused_typed(value: Any) -> None:
    event = _event({"value": value})
    text, refused = _refusal(lambda: run_event_dumps(event))
    if refused is not None:
        assert not is_json_value(value)
        return
    back = run_event_from_json(cast(str, text))
    assert_same_wire_value(event.data, back.data)
    rewritten, refused = _refusal(lambda: run_event_from_json(js_reserialise(cast(str, text))))
    if refused is not None:
        assert holds_big_integral_float(value)
        return
    assert_same_wire_value(back.data, cast(RunEvent, rewritten).data, key_order=False)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edge_json_values)
def test_delivered_events_are_always_strict_json(value: Any) -> None:
    # Through the default processor chain, whatever the emitter was given: the event is delivered
    # as strict JSON, or (nested beyond MAX_WIRE_DEPTH) dropped with a typed delivery failure.
    delivered, failures = asyncio.run(_deliver(value))
    if failures:
        assert [failure.code for failure in failures] == ["REDACTION_FAILED"]
        assert delivered == []
        assert not is_json_value(value, max_depth=MAX_WIRE_DEPTH - 2)
        return
    assert len(delivered) == 1
    assert is_json_value(delivered, max_depth=MAX_WIRE_DEPTH)
    run_event_from_json(dumps_compact(delivered[0], max_depth=MAX_WIRE_DEPTH + 1))


async def _deliver(value: Any) -> tuple[list[JsonObject], list[DeliveryFailure]]:
    item = ToolResultItem(call_id="c", status="success", output="ok", metadata={"k": "v"})
    sink = InMemoryEventSink()
    async with EventDispatcher(default_processors(), [sink]) as dispatcher:
        emitter = EventEmitter(create_root_trace_context("strict"), dispatcher)
        await emitter.emit("tool.completed", {"item": item_to_json(item), "value": value})
    return [run_event_to_json(event) for event in sink.events], list(dispatcher.failures)


def _state(metadata: Any) -> dict[str, Any]:
    return {
        "schemaVersion": 2,
        "runId": "r1",
        "agentId": "assistant",
        "status": "interrupted",
        "trace": {"runId": "r1", "traceId": "a" * 32, "spanId": "b" * 16},
        "metadata": metadata,
    }


@EDGE
@given(edge_json_values, text)
def test_run_states_are_read_unchanged_or_refused_typed(value: Any, key: str) -> None:
    data = _state({key: value})
    loaded, refused = _refusal(lambda: SerializedRunState.from_json(data))
    if refused is not None:
        assert isinstance(refused, RunStateError)
        assert refused.details is not None
        assert not is_json_value(data, max_depth=MAX_WIRE_DEPTH)
        return
    wire = cast(SerializedRunState, loaded).to_json()
    assert wire["metadata"] == data["metadata"]  # kept as given in memory
    text = dumps_compact(wire, max_depth=MAX_WIRE_DEPTH)
    back = cast(dict[str, Any], loads_strict(text, max_depth=MAX_WIRE_DEPTH))
    assert_same_wire_value(data["metadata"], back["metadata"])
    again = SerializedRunState.from_json(back)
    assert_same_wire_value(wire, again.to_json())


async def _awaited(pending: Awaitable[Sequence[CanonicalItem]]) -> Sequence[CanonicalItem]:
    return await pending


async def _store_round_trip(values: list[Any]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        async with await SqliteStorage.open(Path(folder) / "edge.db") as storage:
            for store in (InMemorySessionStore(), storage.sessions):
                await store.create(tenant_id="t", session_id="s")
                revision, kept = 0, cast(list[JsonObject], [])
                for index, value in enumerate(values):
                    payload: JsonObject = {"value": value}
                    item = NewSessionItem(item_id=f"i{index}", kind="edge", payload=payload)
                    try:
                        record = await store.append(
                            tenant_id="t", session_id="s", expected_revision=revision, items=[item]
                        )
                    except StorageDataError:
                        assert not is_json_value(payload, max_depth=MAX_WIRE_DEPTH)
                        continue
                    revision = record.revision
                    kept.append(payload)
                loaded = await store.load(tenant_id="t", session_id="s")
                assert loaded.session.revision == revision
                for original, stored in zip(kept, loaded.items, strict=True):
                    assert_same_wire_value(original, dict(stored.payload))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(edge_json_values, min_size=1, max_size=12))
def test_store_payloads_are_kept_unchanged_or_refused_typed(values: list[Any]) -> None:
    asyncio.run(_store_round_trip(values))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(edge_json_values, min_size=1, max_size=4))
def test_items_with_edge_values_survive_every_registered_store(values: list[Any]) -> None:
    items: list[CanonicalItem] = [TextItem(role="user", text="hi")]
    for index, value in enumerate(values):
        if is_json_value(value):
            items.append(
                ToolResultItem(call_id=f"c{index}", status="success", output=value, name="t")
            )
    for name, round_trip in REGISTRY.persistence.items():
        back: list[CanonicalItem] = list(asyncio.run(_awaited(round_trip(items))))
        assert list(back) == items, name
        for original, stored in zip(items, back, strict=True):
            assert_same_wire_value(item_to_json(original), item_to_json(stored))
