"""``@tool`` schema derivation and JSON-Schema validation (D5: type hints + jsonschema)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Annotated, Any, Literal, NotRequired, Optional, TypedDict

import attrs
import pytest

from actoviq.core import AbortController
from actoviq.runtime.tools import (
    RuntimeTool,
    ToolDefinitionError,
    ToolExecutionContext,
    ToolExecutionError,
    ToolInputInvalidError,
    ToolRegistry,
    ToolRunner,
    json_schema_input,
    schema_from_type,
    tool,
)


def ctx(call_id: str = "c1") -> ToolExecutionContext:
    return ToolExecutionContext(run_id="r1", call_id=call_id, signal=AbortController().signal)


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Address(TypedDict):
    city: str
    zip: NotRequired[str]


@attrs.frozen
class Point:
    x: int
    y: int = 0


def test_primitives_optional_literal_and_defaults() -> None:
    @tool
    def search(
        query: str,
        limit: int = 10,
        ratio: float = 0.5,
        exact: bool = False,
        mode: Literal["fast", "deep"] = "fast",
        tag: Optional[str] = None,  # noqa: UP045 - Optional is one of the supported spellings
        note: str | None = None,
    ) -> list[str]:
        """Search the index.

        Longer text that is not part of the summary.

        Args:
            query: what to look for,
                on two lines.
            limit: at most this many hits.
        """
        return [query] * limit

    schema = search.descriptor.input.json_schema
    assert search.descriptor.name == "search"
    assert search.descriptor.description == "Search the index."
    assert schema == {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "what to look for, on two lines."},
            "limit": {"type": "integer", "description": "at most this many hits.", "default": 10},
            "ratio": {"type": "number", "default": 0.5},
            "exact": {"type": "boolean", "default": False},
            "mode": {"enum": ["fast", "deep"], "type": "string", "default": "fast"},
            "tag": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        },
        "additionalProperties": False,
        "required": ["query"],
    }
    assert search.descriptor.effect == "side-effect"


@tool(name="ship", effect="idempotent-write", description="Ship things.")
def ship(
    to: Address,
    at: Point,
    color: Color,
    items: list[int],
    labels: dict[str, str],
    pair: tuple[int, str],
    rest: tuple[float, ...] = (),
) -> dict[str, Any]:
    return {"to": to, "x": at.x, "color": color, "items": items}


def test_nested_typed_dict_attrs_enum_list_dict_tuple() -> None:
    schema = ship.descriptor.input.json_schema
    properties: Any = schema["properties"]
    assert properties["to"] == {
        "type": "object",
        "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
        "additionalProperties": False,
        "required": ["city"],
    }
    assert properties["at"]["required"] == ["x"]
    assert properties["color"] == {"enum": ["red", "blue"], "type": "string"}
    assert properties["pair"]["prefixItems"] == [{"type": "integer"}, {"type": "string"}]
    parsed: Any = ship.descriptor.input.parse(
        {
            "to": {"city": "Oslo"},
            "at": {"x": 1},
            "color": "blue",
            "items": [1, 2],
            "labels": {"a": "b"},
            "pair": [1, "one"],
            "rest": [1, 2.5],
        }
    )
    assert parsed["at"] == Point(x=1, y=0)
    assert parsed["color"] is Color.BLUE
    assert parsed["pair"] == (1, "one")
    assert parsed["rest"] == (1.0, 2.5)
    assert isinstance(parsed["rest"][0], float)


_VALID_SHIP: dict[str, Any] = {
    "to": {"city": "a"},
    "at": {"x": 1},
    "color": "red",
    "items": [],
    "labels": {},
    "pair": [1, "a"],
}


@pytest.mark.parametrize(
    "bad",
    [
        {},
        {**_VALID_SHIP, "to": {"city": 1}},
        {**_VALID_SHIP, "color": "green"},
        {**_VALID_SHIP, "items": [True]},
        {**_VALID_SHIP, "pair": [1]},
        {**_VALID_SHIP, "extra": 1},
    ],
    ids=["empty", "wrong-nested-type", "unknown-enum", "bool-for-int", "short-tuple", "extra-key"],
)
def test_invalid_nested_input_raises_tool_input_invalid(bad: dict[str, Any]) -> None:
    ship.descriptor.input.parse(_VALID_SHIP)  # the base case is valid: only the change is bad
    with pytest.raises(ToolInputInvalidError):
        ship.descriptor.input.parse(bad)


async def test_decorated_sync_and_async_tools_run_with_context() -> None:
    seen: list[str] = []

    @tool(effect="read")
    async def greet(name: str, context: ToolExecutionContext) -> str:
        seen.append(context.call_id)
        return f"hi {name}"

    @tool
    def locate(point: Point) -> Point:
        return Point(x=point.x + 1, y=point.y)

    schema: Any = greet.descriptor.input.json_schema
    assert "context" not in schema["properties"]
    runner = ToolRunner(ToolRegistry([greet, locate]))
    assert (await runner.execute("greet", {"name": "Ada"}, ctx("c7"))).value == "hi Ada"
    assert seen == ["c7"]
    # an attrs return value is converted to JSON
    assert (await runner.execute("locate", {"point": {"x": 1}}, ctx())).json_value() == {
        "x": 2,
        "y": 0,
    }
    with pytest.raises(ToolExecutionError) as caught:
        await runner.execute("greet", {"name": 5}, ctx())
    assert caught.value.kind == "validation"


def test_annotated_description_and_positional_only() -> None:
    @tool
    def echo(text: Annotated[str, "the text to echo"], /, times: int = 1) -> str:
        return text * times

    properties: Any = echo.descriptor.input.json_schema["properties"]
    assert properties["text"] == {"type": "string", "description": "the text to echo"}
    parsed = echo.descriptor.input.parse({"text": "ab", "times": 2})
    assert echo.execute(ctx(), parsed) == "abab"


def test_unsupported_hints_and_signatures_raise() -> None:
    class Opaque:
        pass

    with pytest.raises(ToolDefinitionError, match="Unsupported"):

        @tool
        def bad(value: Opaque) -> None:
            return None

    with pytest.raises(ToolDefinitionError, match=r"\*args"):

        @tool
        def variadic(*values: int) -> None:
            return None

    with pytest.raises(ToolDefinitionError, match="str keys"):

        @tool
        def keyed(value: dict[int, str]) -> None:
            return None

    @attrs.define
    class Node:
        child: Node | None = None

    with pytest.raises(ToolDefinitionError, match="Recursive"):
        schema_from_type(Node, localns={"Node": Node})


def test_any_mapping_and_bare_containers() -> None:
    def loose(anything: Any, table: Mapping[str, int], items: list, blob: dict) -> None:  # type: ignore[type-arg]
        return None

    loose_tool: RuntimeTool = tool(loose)  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]

    properties: Any = loose_tool.descriptor.input.json_schema["properties"]
    assert properties["anything"] == {}
    assert properties["table"] == {"type": "object", "additionalProperties": {"type": "integer"}}
    assert properties["items"] == {"type": "array", "items": {}}
    parsed: Any = loose_tool.descriptor.input.parse(
        {"anything": [1, None], "table": {"a": 1}, "items": [1, "x"], "blob": {"k": [1]}}
    )
    assert parsed["anything"] == [1, None]


def test_schema_from_type_whole_input() -> None:
    schema = schema_from_type(Point)
    assert schema.parse({"x": 3, "y": 4}) == Point(x=3, y=4)
    with pytest.raises(ToolInputInvalidError, match="x"):
        schema.parse({"y": 4})


def test_json_schema_input_validates_and_rejects_bad_schemas() -> None:
    schema = json_schema_input(
        {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}},
        parse=lambda value: dict(value),  # type: ignore[call-overload]
    )
    assert schema.parse({"n": 1}) == {"n": 1}
    with pytest.raises(ToolInputInvalidError, match="minimum"):
        schema.parse({"n": -1})
    with pytest.raises(ToolDefinitionError, match="Invalid tool JSON Schema"):
        json_schema_input({"type": "nonsense"})


def test_pydantic_model_as_input_type() -> None:
    pydantic = pytest.importorskip("pydantic")

    class Inner(pydantic.BaseModel):
        size: int

    class Order(pydantic.BaseModel):
        sku: str
        inner: Inner
        quantity: int = 1

    @tool
    def order(item: Order) -> Order:
        return item

    document: Any = order.descriptor.input.json_schema
    assert "Inner" in document["$defs"]
    assert document["properties"]["item"]["properties"]["inner"] == {"$ref": "#/$defs/Inner"}
    parsed: Any = order.descriptor.input.parse({"item": {"sku": "a", "inner": {"size": 2}}})
    assert isinstance(parsed["item"], Order)
    assert parsed["item"].inner.size == 2
    with pytest.raises(ToolInputInvalidError):
        order.descriptor.input.parse({"item": {"sku": "a", "inner": {"size": "big"}}})
    whole = schema_from_type(Order)
    assert isinstance(whole.parse({"sku": "b", "inner": {"size": 1}}), Order)


async def test_pydantic_return_value_is_dumped_to_json() -> None:
    pydantic = pytest.importorskip("pydantic")

    class Reply(pydantic.BaseModel):
        text: str

    def answer(context: ToolExecutionContext, args: Any) -> object:
        return Reply(text="ok")

    from actoviq.runtime.tools import ToolDescriptor

    runner = ToolRunner(
        ToolRegistry([RuntimeTool(descriptor=ToolDescriptor(name="a"), execute=answer)])
    )
    assert (await runner.execute("a", {}, ctx())).json_value() == {"text": "ok"}
