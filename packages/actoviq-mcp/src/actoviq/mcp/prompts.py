"""Host helpers for MCP resources and prompts, answered as canonical items.

Example:
    >>> # items = await read_resource(server, "file:///notes/today.md")
    >>> # messages = await get_prompt(server, "summarise", {"topic": "MCP"})
    >>> # result = await runtime.run(agent, [*messages])
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from actoviq.core import AudioItem, CanonicalItem, DocumentItem, ImageItem, TextItem
from actoviq.mcp.errors import McpConfigurationError
from actoviq.mcp.results import content_to_items, resource_to_item
from actoviq.mcp.server import McpServer

__all__ = ["get_prompt", "read_resource"]


async def read_resource(server: McpServer, uri: str) -> tuple[CanonicalItem, ...]:
    """``resources/read`` as canonical items (``metadata.mcp.uri`` names the resource).

    Text contents become text items; blobs become image, audio or document items.

    Raises:
        McpConfigurationError: an empty URI.
        McpCallError: the server refused (unknown resource, ...).
        McpResultError: a blob that is not base64.
    """
    if not isinstance(uri, str) or not uri.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
        raise McpConfigurationError("read_resource() needs a non-empty resource URI.")
    result = await server.read_resource_raw(uri)
    return tuple(resource_to_item(contents, server=server.name) for contents in result.contents)


async def get_prompt(
    server: McpServer, name: str, arguments: Mapping[str, str] | None = None
) -> tuple[CanonicalItem, ...]:
    """``prompts/get``: each prompt message as a canonical item with the message's role.

    Raises:
        McpConfigurationError: an empty name or non-string arguments.
        McpCallError: the server refused (unknown prompt, missing argument, ...).
    """
    if not isinstance(name, str) or not name.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
        raise McpConfigurationError("get_prompt() needs a non-empty prompt name.")
    for key, value in dict(arguments or {}).items():
        if not isinstance(key, str) or not isinstance(value, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise McpConfigurationError("get_prompt() arguments must map strings to strings.")
    result = await server.get_prompt_raw(name, arguments)
    items: list[CanonicalItem] = []
    for message in result.messages:
        for item in content_to_items([message.content], server=server.name):
            items.append(_with_role(item, message.role))
    return tuple(items)


def _with_role(item: CanonicalItem, role: Any) -> CanonicalItem:
    if isinstance(item, TextItem | ImageItem | AudioItem | DocumentItem) and role in (
        "user",
        "assistant",
    ):
        return attrs.evolve(item, role=role)
    return item
