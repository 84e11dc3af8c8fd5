"""Result mapping against a low-level SDK ``Server`` (in process): every content kind, bad
results, outputSchema validation, resources and prompts."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from mcp import MCPError
from mcp.server import Server
from mcp_testkit import agent, call, runtime_with, scripted, tool_turn, toolbox

from actoviq.core import (
    ArtifactRefItem,
    AudioItem,
    DocumentItem,
    ImageItem,
    TextItem,
    ToolResultItem,
)
from actoviq.mcp import (
    McpCallError,
    McpConfigurationError,
    McpResultError,
    McpServer,
    get_prompt,
    mcp_tools,
    read_resource,
)

PNG = base64.b64encode(b"\x89PNG fake").decode()
WAV = base64.b64encode(b"RIFF fake").decode()
PDF = base64.b64encode(b"%PDF-1.7 fake").decode()
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"total": {"type": "integer"}},
    "required": ["total"],
}


def _tool(name: str, output_schema: dict[str, Any] | None = None) -> types.Tool:
    return types.Tool(
        name=name,
        input_schema={"type": "object"},
        output_schema=output_schema,
        annotations=types.ToolAnnotations(read_only_hint=True),
    )


def _answer(name: str) -> types.CallToolResult:
    if name == "everything":
        return types.CallToolResult(
            content=[
                types.TextContent(type="text", text="hello"),
                types.ImageContent(type="image", data=PNG, mime_type="image/png"),
                types.AudioContent(type="audio", data=WAV, mime_type="audio/wav"),
                types.EmbeddedResource(
                    type="resource",
                    resource=types.TextResourceContents(
                        uri="notes://a", mime_type="text/plain", text="note a"
                    ),
                ),
                types.EmbeddedResource(
                    type="resource",
                    resource=types.BlobResourceContents(
                        uri="files://report.pdf", mime_type="application/pdf", blob=PDF
                    ),
                ),
                types.ResourceLink(
                    type="resource_link",
                    uri="files://big.csv",
                    name="big.csv",
                    mime_type="text/csv",
                    description="A large table",
                ),
            ]
        )
    if name == "totals":
        return types.CallToolResult(
            content=[types.TextContent(type="text", text='{"total": 3}')],
            structured_content={"total": 3},
        )
    if name == "wrong_totals":
        return types.CallToolResult(content=[], structured_content={"total": "three"})
    if name == "no_totals":
        return types.CallToolResult(content=[types.TextContent(type="text", text="oops")])
    if name == "bad_base64":
        return types.CallToolResult(
            content=[types.ImageContent(type="image", data="%%%not-base64", mime_type="image/png")]
        )
    if name == "refuse":
        raise MCPError(types.INVALID_PARAMS, "refused: token=abcdef123456 not allowed")
    raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {name}")


def _server() -> Server[Any]:
    tools = [
        _tool("everything"),
        _tool("totals", SCHEMA),
        _tool("wrong_totals", SCHEMA),
        _tool("no_totals", SCHEMA),
        _tool("bad_base64"),
        _tool("refuse"),
    ]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return _answer(params.name)

    return Server("lowlevel", on_list_tools=list_tools, on_call_tool=call_tool)


@pytest.fixture(params=["auto", "legacy"])
async def server(request: pytest.FixtureRequest) -> AsyncIterator[McpServer]:
    async with McpServer.in_process(_server(), mode=request.param) as server:
        yield server


async def test_every_content_kind_maps_to_a_canonical_item(server: McpServer) -> None:
    result = await server.call_tool("everything")
    text, image, audio, note, document, link = result.items
    assert text == TextItem(role="user", text="hello")
    assert isinstance(image, ImageItem) and image.source.data == PNG  # type: ignore[union-attr]
    assert isinstance(audio, AudioItem) and audio.source.media_type == "audio/wav"  # type: ignore[union-attr]
    assert isinstance(note, TextItem) and note.text == "note a"
    assert note.metadata == {
        "mcp": {
            "kind": "resource",
            "server": "lowlevel",
            "uri": "notes://a",
            "mimeType": "text/plain",
        }
    }
    assert isinstance(document, DocumentItem) and document.name == "report.pdf"
    assert document.media_type == "application/pdf"
    assert link == ArtifactRefItem(
        artifact_id="files://big.csv",
        name="big.csv",
        media_type="text/csv",
        description="A large table",
        metadata={"mcp": {"kind": "resource_link", "server": "lowlevel"}},
    )
    value = result.value()
    assert isinstance(value, list) and len(value) == 6
    assert value[0] == {"type": "text", "role": "user", "text": "hello"}


async def test_structured_content_is_validated_against_the_output_schema(
    server: McpServer,
) -> None:
    good = await server.call_tool("totals")
    assert good.structured == {"total": 3} and good.value() == {"total": 3}
    for name in ("wrong_totals", "no_totals"):
        with pytest.raises(McpResultError) as caught:
            await server.call_tool(name)
        assert caught.value.code == "MCP_RESULT_INVALID"
        assert "outputSchema" in str(caught.value)
    with pytest.raises(McpResultError, match="base64"):
        await server.call_tool("bad_base64")


async def test_protocol_errors_are_typed_and_redacted(server: McpServer) -> None:
    with pytest.raises(McpCallError) as caught:
        await server.call_tool("refuse")
    assert caught.value.details is not None
    assert caught.value.details["mcpCode"] == types.INVALID_PARAMS
    assert "abcdef123456" not in str(caught.value)
    with pytest.raises(McpCallError):
        await server.call_tool("nope")


async def test_bad_results_become_error_tool_results_in_a_run(server: McpServer) -> None:
    provider = scripted(
        tool_turn(call("c1", "wrong_totals"), call("c2", "refuse"), call("c3", "totals")), "done"
    )
    toolset = await mcp_tools(server)
    async with runtime_with(provider, tools=toolset) as runtime:
        result = await runtime.run(agent(toolset.names()), "go")
    outputs = {i.call_id: i for i in result.items if isinstance(i, ToolResultItem)}
    assert outputs["c1"].status == "error"
    assert outputs["c1"].output["kind"] == "validation"  # type: ignore[index,call-overload]
    assert outputs["c2"].output["kind"] == "execution"  # type: ignore[index,call-overload]
    assert outputs["c3"].output == {"total": 3}


async def test_resources_and_prompts_as_canonical_items(tmp_path: Path) -> None:
    async with toolbox(tmp_path / "ledger.jsonl") as server:
        (note,) = await read_resource(server, "notes://today")
        assert isinstance(note, TextItem) and note.text.startswith("# Today")
        assert note.metadata is not None
        assert note.metadata["mcp"]["uri"] == "notes://today"  # type: ignore[index,call-overload]
        (message,) = await get_prompt(server, "summarise", {"topic": "MCP"})
        assert message == TextItem(role="user", text="Summarise MCP in one line.")
        with pytest.raises(McpCallError):
            await read_resource(server, "notes://missing")
        with pytest.raises(McpCallError):
            await get_prompt(server, "summarise", {})
    with pytest.raises(McpConfigurationError):
        await read_resource(server, "")
    with pytest.raises(McpConfigurationError):
        await get_prompt(server, "x", {"a": 1})  # type: ignore[dict-item]
