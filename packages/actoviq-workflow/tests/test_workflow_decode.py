"""Host-side decoding never lets anything but a typed ``WorkflowExecutorError`` escape.

Whatever a hostile child writes on its protocol pipe (random bytes, random JSON, deep nesting,
numbers that overflow to infinity, invalid UTF-8, wrong JSON-RPC shapes), the host either gets a
value or raises a :class:`~actoviq.workflow.WorkflowExecutorError` subclass.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actoviq.core import AbortController, JsonValue, is_json_value
from actoviq.workflow import (
    CapabilityCallContext,
    WorkflowExecutionError,
    WorkflowExecutorError,
    WorkflowExecutorLimits,
    WorkflowOutputLimitError,
    WorkflowProtocolError,
)
from actoviq.workflow._process import (
    ChildRun,
    _answer_call,  # pyright: ignore[reportPrivateUsage]
    settle_message,
)
from actoviq.workflow.protocol import decode_message

LIMITS = WorkflowExecutorLimits(max_output_bytes=4096, max_message_bytes=65536)

json_values: st.SearchStrategy[object] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
message_keys = st.sampled_from(["jsonrpc", "id", "result", "error", "method", "params"])
rpc_shapes: st.SearchStrategy[dict[str, object]] = st.dictionaries(
    message_keys,
    json_values
    | st.just("2.0")
    | st.just("workflow:execute")
    | st.fixed_dictionaries({"code": json_values, "message": json_values, "data": json_values}),
    max_size=5,
)


def _settle(line: bytes) -> JsonValue:
    message = decode_message(line)
    return settle_message(message, limits=LIMITS, timeout_ms=1000)


def _outcome(line: bytes) -> tuple[str, object]:
    """``("value", value)`` or ``("error", code)``; any other exception escapes (and fails)."""
    try:
        return "value", _settle(line)
    except WorkflowExecutorError as error:
        return "error", error.code


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=256))
def test_random_bytes_raise_only_typed_errors(data: bytes) -> None:
    kind, outcome = _outcome(data)
    if kind == "error":
        assert str(outcome).startswith("WORKFLOW_")
    else:
        assert is_json_value(outcome)


@settings(max_examples=300, deadline=None)
@given(rpc_shapes)
def test_random_json_rpc_shapes_raise_only_typed_errors(shape: dict[str, object]) -> None:
    line = json.dumps(shape, allow_nan=True).encode("utf-8", errors="surrogatepass")
    kind, outcome = _outcome(line)
    if kind == "error":
        assert str(outcome).startswith("WORKFLOW_")
        return
    assert shape.get("id") == "workflow:execute"
    assert outcome == shape["result"]


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        (b"[" * 3000 + b"]" * 3000, ""),  # too deep, or (Python 3.13 parses it) not an object
        (b'{"jsonrpc":"2.0","id":"workflow:execute","result":1e400}', "strict JSON"),
        (b'{"jsonrpc":"2.0","id":"workflow:execute","result":-1e400}', "strict JSON"),
        (b'{"jsonrpc":"2.0","id":"workflow:execute","result":NaN}', "invalid JSON"),
        (b'{"jsonrpc":"2.0","id":"workflow:execute","result":"\xff\xfe"}', "UTF-8"),
        (b"\xed\xa0\x80", "UTF-8"),
        (b'"just a string"', "non-object"),
        (b'{"jsonrpc":"1.0","id":"workflow:execute","result":1}', "jsonrpc"),
        (b'{"jsonrpc":"2.0","id":"other","result":1}', "unexpected response id"),
        (b'{"jsonrpc":"2.0","id":"workflow:execute"}', "without result or error"),
        (b"", "empty"),
    ],
    ids=[
        "nested-3000",
        "1e400",
        "minus-1e400",
        "nan",
        "invalid-utf8-in-string",
        "encoded-surrogate",
        "not-an-object",
        "wrong-version",
        "wrong-id",
        "no-result",
        "empty",
    ],
)
def test_hostile_lines_are_protocol_errors(line: bytes, fragment: str) -> None:
    with pytest.raises(WorkflowProtocolError) as caught:
        _settle(line)
    assert caught.value.code == "WORKFLOW_PROTOCOL_ERROR"
    assert fragment in caught.value.message


def test_deep_but_parsable_result_is_typed() -> None:
    depth = 900  # below the parser's recursion limit, deep enough to trouble encoders
    line = b'{"jsonrpc":"2.0","id":"workflow:execute","result":' + b"[" * depth + b"]" * depth
    line += b"}"
    try:
        value = _settle(line)
    except (WorkflowProtocolError, WorkflowOutputLimitError):
        return
    assert isinstance(value, list)


def test_remote_error_with_odd_shapes_maps_to_execution_error() -> None:
    line = b'{"jsonrpc":"2.0","id":"workflow:execute","error":{"code":7,"message":[1],"data":3}}'
    with pytest.raises(WorkflowExecutionError) as caught:
        _settle(line)
    assert caught.value.remote_code == "WORKFLOW_EXECUTION_FAILED"


def test_oversized_result_is_an_output_limit_error() -> None:
    line = json.dumps({"jsonrpc": "2.0", "id": "workflow:execute", "result": "x" * 5000}).encode()
    with pytest.raises(WorkflowOutputLimitError):
        _settle(line)


def _echo(value: JsonValue, context: CapabilityCallContext) -> JsonValue:
    return value


RUN = ChildRun(
    argv=["unused"],
    cwd="/",
    workspace="/",
    executor_kind="test",
    source="",
    input=None,
    capabilities=("echo",),
    handlers={"echo": _echo},
    limits=LIMITS,
    timeout_ms=1000,
    signal=None,
)


@settings(max_examples=200, deadline=None)
@given(
    st.fixed_dictionaries(
        {"jsonrpc": st.just("2.0"), "method": st.sampled_from(["capability.call", "other"])},
        optional={
            "id": json_values,
            "params": json_values
            | st.fixed_dictionaries(
                {"name": st.sampled_from(["echo", "hidden"]) | json_values},
                optional={"input": json_values},
            ),
        },
    )
)
def test_random_capability_calls_raise_only_typed_errors(message: dict[str, object]) -> None:
    line = json.dumps(message, allow_nan=True).encode("utf-8", errors="surrogatepass")

    async def answer() -> tuple[str, dict[str, object] | None]:
        try:
            decoded = decode_message(line)
            _, reply = await _answer_call(RUN, decoded, AbortController().signal)
        except WorkflowExecutorError as error:
            return error.code, None
        return "reply", reply

    kind, reply = asyncio.run(answer())
    if kind != "reply":
        assert kind.startswith("WORKFLOW_")
    else:
        assert reply is not None
        assert ("result" in reply) != ("error" in reply)
        assert is_json_value(reply)
