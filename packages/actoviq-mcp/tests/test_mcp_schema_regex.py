"""A server's input-schema regular expressions never run in the host (ReDoS).

``^(a+)+$`` against ``"aaaa…a!"`` takes exponential time in Python's ``re``; a hostile server
could stall every run on the host through the model's arguments. The host validates with the
schema minus its regexes (the server still checks them); the model sees the whole schema.
Tool-name filters are fnmatch patterns (linear): only their type needs checking.
"""

from __future__ import annotations

from typing import Any

import mcp.types as types
import pytest
from mcp.server import Server

from actoviq.core import JsonValue
from actoviq.mcp import McpConfigurationError, McpResultError, McpServer, mcp_tools
from actoviq.mcp.schema_guard import has_regex, without_regex
from actoviq.runtime import ToolInputInvalidError

CATASTROPHIC = "^(a+)+$"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "x": {"type": "string", "pattern": CATASTROPHIC},
        "pattern": {"type": "string", "maxLength": 8},  # a property *named* pattern
        "tags": {
            "type": "object",
            "patternProperties": {CATASTROPHIC: {"type": "integer"}},
            "additionalProperties": False,
        },
        "any": {"anyOf": [{"$ref": "#/$defs/code"}, {"type": "integer"}]},
    },
    "required": ["x"],
    "$defs": {"code": {"type": "string", "pattern": "^(\\w+\\s?)*$", "examples": ["pattern"]}},
}


def _server() -> Server[Any]:
    tool = types.Tool(name="regexy", input_schema=SCHEMA)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool])

    async def call_tool(ctx: Any, params: Any) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text="ran")])

    return Server("regexy", on_list_tools=list_tools, on_call_tool=call_tool)


async def test_server_patterns_are_not_run_locally_but_shown_to_the_model() -> None:
    async with McpServer.in_process(_server(), mode="legacy") as server:
        toolset = await mcp_tools(server)
        tool = toolset.get("regexy")
        assert tool is not None
        schema = tool.descriptor.input
        assert schema.json_schema == SCHEMA  # the model sees the server's schema whole
        evil = "a" * 64 + "!"  # exponential under ^(a+)+$ if the host ran the pattern
        value = {"x": evil, "tags": {evil: 1}, "any": "word " * 20 + "!"}
        assert schema.parse(value) == value
        # Everything that is not a regex is still checked locally.
        with pytest.raises(ToolInputInvalidError):
            schema.parse({"x": 5})
        with pytest.raises(ToolInputInvalidError):
            schema.parse({"x": "a", "pattern": "longer than eight"})
        with pytest.raises(ToolInputInvalidError):
            schema.parse({"x": "a", "tags": "not an object"})


def test_without_regex_rewrites_schema_positions_only() -> None:
    stripped = without_regex(SCHEMA)
    assert stripped == {
        "type": "object",
        "properties": {
            "x": {"type": "string"},
            "pattern": {"type": "string", "maxLength": 8},
            "tags": {"type": "object"},  # additionalProperties depended on the patterns
            "any": {"anyOf": [{"$ref": "#/$defs/code"}, {"type": "integer"}]},
        },
        "required": ["x"],
        "$defs": {"code": {"type": "string", "examples": ["pattern"]}},
    }
    assert has_regex(SCHEMA)
    assert not has_regex(stripped)
    assert SCHEMA["properties"]["x"]["pattern"] == CATASTROPHIC  # the input is not mutated


@pytest.mark.parametrize("schema", [True, False, {"const": {"pattern": "^(a+)+$"}}])
def test_without_regex_keeps_boolean_schemas_and_data(schema: JsonValue) -> None:
    assert without_regex(schema) == schema


@pytest.mark.parametrize("spec", [5, 1.5, object()])
async def test_a_tool_filter_that_is_neither_names_nor_a_predicate_is_typed(spec: Any) -> None:
    # Before: include=5 raised a bare TypeError ('int' object is not iterable).
    async with McpServer.in_process(_server(), mode="legacy") as server:
        with pytest.raises(McpConfigurationError):
            await mcp_tools(server, include=spec)


def _output_server(structured: dict[str, Any]) -> Server[Any]:
    output_schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "code": {"type": "string", "pattern": CATASTROPHIC},
            "n": {"type": "integer"},
        },
        "required": ["code"],
    }
    tool = types.Tool(name="evil_out", input_schema={"type": "object"}, output_schema=output_schema)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool])

    async def call_tool(ctx: Any, params: Any) -> types.CallToolResult:
        return types.CallToolResult(
            content=[types.TextContent(type="text", text="done")], structured_content=structured
        )

    return Server("evil-out", on_list_tools=list_tools, on_call_tool=call_tool)


async def test_output_schema_patterns_are_not_run_on_the_servers_output() -> None:
    # Before: the SDK ran ^(a+)+$ on 64 a's and a "!" in the host: the call never returned.
    evil = {"code": "a" * 64 + "!", "n": 1}
    async with McpServer.in_process(_output_server(evil), mode="legacy") as server:
        await server.list_tools()
        result = await server.call_tool_raw("evil_out", {})
        assert result.structured_content == evil


async def test_output_schema_keywords_other_than_regexes_are_still_checked() -> None:
    async with McpServer.in_process(_output_server({"n": 1}), mode="legacy") as server:
        with pytest.raises(McpResultError, match="outputSchema"):
            await server.call_tool_raw("evil_out", {})  # "code" is required
    async with McpServer.in_process(_output_server({"code": 5}), mode="legacy") as server:
        with pytest.raises(McpResultError, match="outputSchema"):
            await server.call_tool_raw("evil_out", {})  # not listed first: listed on demand
