"""mcp_tools over the real toolbox server (stdio): effects from annotations, filters, overrides."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp_testkit import toolbox

from actoviq.mcp import (
    McpConfigurationError,
    McpServer,
    McpToolNameError,
    McpToolset,
    annotation_effect,
    mcp_tools,
)
from actoviq.runtime import ToolDefinitionError, ToolRegistry, ToolRegistryError


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[McpServer]:
    server = toolbox(tmp_path / "ledger.jsonl")
    try:
        yield server
    finally:
        await server.aclose()


def _behaviour(toolset: McpToolset, name: str) -> tuple[str, bool]:
    tool = toolset.get(name)
    assert tool is not None, name
    return tool.descriptor.effect, tool.descriptor.requires_approval


async def test_annotations_map_to_effects_and_approval(server: McpServer) -> None:
    toolset = await mcp_tools(server)
    assert _behaviour(toolset, "lookup") == ("read", False)
    assert _behaviour(toolset, "put") == ("idempotent-write", False)
    assert _behaviour(toolset, "append_line") == ("side-effect", True)
    assert _behaviour(toolset, "touch") == ("side-effect", True)  # no hint at all
    assert _behaviour(toolset, "charge") == ("side-effect", True)


async def test_schema_description_and_metadata_come_from_the_server(server: McpServer) -> None:
    toolset = await mcp_tools(server, include=["put"])
    descriptor = toolset[0].descriptor
    assert descriptor.description == "Store a value (idempotent)."
    schema = descriptor.input.json_schema
    assert schema["required"] == ["key", "value"]
    assert descriptor.metadata == {
        "mcp": {
            "server": server.name,
            "tool": "put",
            "annotations": {"idempotentHint": True, "destructiveHint": False},
        }
    }
    with pytest.raises(Exception, match="value"):
        descriptor.input.parse({"key": "k"})  # validated before anything is sent


async def test_include_exclude_patterns_and_prefix(server: McpServer) -> None:
    toolset = await mcp_tools(
        server, include=["na*", "lookup"], exclude=["nap_outcome"], prefix="box_"
    )
    assert toolset.names() == ("box_lookup", "box_nap")
    assert toolset.mcp_name("box_nap") == "nap"
    only_reads = await mcp_tools(
        server, include=lambda tool: bool(tool.annotations and tool.annotations.read_only_hint)
    )
    assert "append_line" not in only_reads.names() and "lookup" in only_reads.names()


async def test_overrides_per_tool_and_untrusted_annotations(server: McpServer) -> None:
    toolset = await mcp_tools(
        server,
        effects={"touch": "idempotent-write"},
        approval={"append_line": False, "lookup": True},
    )
    assert _behaviour(toolset, "touch") == ("idempotent-write", False)
    assert _behaviour(toolset, "append_line") == ("side-effect", False)
    assert _behaviour(toolset, "lookup") == ("read", True)
    distrust = await mcp_tools(server, trust_annotations=False)
    assert {_behaviour(distrust, name) for name in distrust.names()} == {("side-effect", True)}
    everything = await mcp_tools(server, approval=True, timeout_ms=1500)
    assert all(tool.descriptor.requires_approval for tool in everything)
    assert {tool.descriptor.timeout_ms for tool in everything} == {1500}


async def test_registry_registration_and_name_clash(server: McpServer) -> None:
    registry = ToolRegistry()
    toolset = await mcp_tools(server, include=["lookup"], registry=registry)
    assert registry.resolve("lookup") is toolset[0]
    toolset.register(registry)  # idempotent for the same tools
    with pytest.raises(ToolRegistryError):
        await mcp_tools(server, include=["lookup"], registry=registry)


async def test_names_are_made_provider_safe_and_clashes_are_typed(server: McpServer) -> None:
    toolset = await mcp_tools(server, include=["lookup"], prefix="my box.")
    assert toolset.names() == ("my_box_lookup",)
    with pytest.raises(McpToolNameError, match="both map to"):
        await mcp_tools(server, include=["na*"], prefix="a" * 70)  # both cut to 64 characters


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"include": "lookup"}, McpConfigurationError),
        ({"exclude": [""]}, McpConfigurationError),
        ({"effects": {"lookup": "write"}}, McpConfigurationError),
        ({"approval": {"lookup": "yes"}}, McpConfigurationError),
        ({"prefix": 3}, McpConfigurationError),
        ({"timeout_ms": -1}, ToolDefinitionError),
    ],
)
async def test_bad_options_are_typed_before_any_connection(
    tmp_path: Path, options: dict[str, object], error: type[Exception]
) -> None:
    ledger = tmp_path / "ledger.jsonl"
    server = toolbox(ledger)
    with pytest.raises(error):
        await mcp_tools(server, **options)  # type: ignore[arg-type]
    assert not ledger.exists()  # nothing was started
    await server.aclose()


def test_annotation_effect_table() -> None:
    from mcp.types import Tool, ToolAnnotations

    def tool(
        *,
        read_only_hint: bool | None = None,
        idempotent_hint: bool | None = None,
        destructive_hint: bool | None = None,
    ) -> Tool:
        hints = ToolAnnotations(
            read_only_hint=read_only_hint,
            idempotent_hint=idempotent_hint,
            destructive_hint=destructive_hint,
        )
        return Tool(name="t", input_schema={"type": "object"}, annotations=hints)

    assert annotation_effect(tool(read_only_hint=True, destructive_hint=True)) == ("read", False)
    assert annotation_effect(tool(idempotent_hint=True)) == ("idempotent-write", False)
    assert annotation_effect(tool(idempotent_hint=True, destructive_hint=True)) == (
        "idempotent-write",
        True,
    )
    assert annotation_effect(tool(destructive_hint=False)) == ("side-effect", True)
    assert annotation_effect(Tool(name="t", input_schema={"type": "object"})) == (
        "side-effect",
        True,
    )
