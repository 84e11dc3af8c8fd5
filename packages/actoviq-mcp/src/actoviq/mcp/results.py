"""MCP content → canonical items, and a tool result → the value the runtime records.

=====================================  =====================================================
MCP content block                      canonical item
=====================================  =====================================================
``text``                               ``TextItem(role="user")``
``image`` (base64)                     ``ImageItem(source=Base64Source)``
``audio`` (base64)                     ``AudioItem(source=Base64Source)``
embedded resource, text                ``TextItem`` with ``metadata.mcp = {uri, mimeType}``
embedded resource, blob                ``ImageItem`` / ``AudioItem`` by MIME type, else
                                       ``DocumentItem(source=Base64Source)``
``resource_link``                      ``ArtifactRefItem(artifact_id=uri)``
anything newer                         ``RawItem(provider="mcp")`` (kept, never coerced)
=====================================  =====================================================

The value a tool call records (``ToolResultItem.output``) is, in order of preference: the
``structuredContent`` (checked against the tool's ``outputSchema`` by the SDK), the text when
every block is text, else the list of canonical items as JSON.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Any, cast

import attrs

from actoviq.core import (
    UNSET,
    ArtifactRefItem,
    AudioItem,
    Base64Source,
    CanonicalItem,
    DocumentItem,
    ImageItem,
    JsonObject,
    JsonValue,
    RawItem,
    TextItem,
    Unset,
    clone_json_value,
    item_to_json,
)
from actoviq.mcp.errors import McpResultError

__all__ = ["McpToolResult", "content_to_items", "tool_result_value"]


@attrs.frozen(kw_only=True, slots=True)
class McpToolResult:
    """A ``tools/call`` answer as canonical values.

    Attributes:
        items: the content blocks as canonical items, in order.
        structured: the ``structuredContent`` object, or ``UNSET`` when the tool sent none.
        is_error: the tool reported an error (``isError``): the call ran and failed.
        server: the name of the server that answered.
        tool: the MCP tool name.
    """

    items: tuple[CanonicalItem, ...]
    structured: JsonObject | Unset = UNSET
    is_error: bool = False
    server: str = ""
    tool: str = ""

    def text(self) -> str:
        """The text blocks joined by blank lines (what a person would read)."""
        return "\n\n".join(item.text for item in self.items if isinstance(item, TextItem))

    def value(self) -> JsonValue:
        """What the runtime records as the tool output (see the module docstring)."""
        return tool_result_value(self)


def tool_result_value(result: McpToolResult) -> JsonValue:
    """``structured``, else the text when all blocks are text, else the items as JSON."""
    if not isinstance(result.structured, Unset):
        return clone_json_value(result.structured)
    if all(isinstance(item, TextItem) for item in result.items):
        texts = [cast(TextItem, item).text for item in result.items]
        return texts[0] if len(texts) == 1 else "\n\n".join(texts)
    return [cast(JsonValue, item_to_json(item)) for item in result.items]


def from_call_result(result: Any, *, server: str, tool: str) -> McpToolResult:
    """Map an SDK ``CallToolResult``.

    Raises:
        McpResultError: bad base64 data, or ``structuredContent`` that is not a strict JSON object.
    """
    structured: JsonObject | Unset = UNSET
    if result.structured_content is not None:
        structured = _json_object(result.structured_content, f'tool "{tool}" structuredContent')
    return McpToolResult(
        items=content_to_items(result.content, server=server),
        structured=structured,
        is_error=bool(result.is_error),
        server=server,
        tool=tool,
    )


def content_to_items(blocks: Sequence[Any], *, server: str = "") -> tuple[CanonicalItem, ...]:
    """Map SDK content blocks (tool results, prompt messages) to canonical items.

    Raises:
        McpResultError: a block carries data that is not valid base64.
    """
    return tuple(_item(block, server) for block in blocks)


def resource_to_item(contents: Any, *, server: str = "") -> CanonicalItem:
    """Map one ``TextResourceContents`` / ``BlobResourceContents`` (``resources/read``)."""
    meta = _meta(server, "resource", uri=str(contents.uri), mimeType=contents.mime_type)
    text = getattr(contents, "text", None)
    if isinstance(text, str):
        return TextItem(role="user", text=text, metadata=meta)
    mime = contents.mime_type or "application/octet-stream"
    data = _base64(str(getattr(contents, "blob", "")), f"resource {contents.uri}")
    name = str(contents.uri).rstrip("/").rsplit("/", 1)[-1] or None
    return _media(mime, data, meta, name=name)


def _item(block: Any, server: str) -> CanonicalItem:
    kind = getattr(block, "type", None)
    if kind == "text":
        return TextItem(role="user", text=str(block.text))
    if kind == "image":
        source = Base64Source(media_type=block.mime_type, data=_base64(block.data, "image"))
        return ImageItem(source=source, role="user")
    if kind == "audio":
        source = Base64Source(media_type=block.mime_type, data=_base64(block.data, "audio"))
        return AudioItem(source=source, role="user")
    if kind == "resource":
        return resource_to_item(block.resource, server=server)
    if kind == "resource_link":
        return ArtifactRefItem(
            artifact_id=str(block.uri),
            name=block.name,
            media_type=block.mime_type,
            description=block.description,
            metadata=_meta(server, "resource_link"),
        )
    dumped = block.model_dump(mode="json", by_alias=True, exclude_none=True)
    return RawItem(provider="mcp", value=_json_object(dumped, "MCP content block"))


def _media(mime: str, data: str, meta: JsonObject, *, name: str | None) -> CanonicalItem:
    source = Base64Source(media_type=mime, data=data)
    if mime.startswith("image/"):
        return ImageItem(source=source, role="user", metadata=meta)
    if mime.startswith("audio/"):
        return AudioItem(source=source, role="user", metadata=meta)
    return DocumentItem(source=source, role="user", name=name, media_type=mime, metadata=meta)


def _meta(server: str, kind: str, **fields: str | None) -> JsonObject:
    mcp: JsonObject = {"kind": kind}
    if server:
        mcp["server"] = server
    for key, value in fields.items():
        if value is not None:
            mcp[key] = value
    return {"mcp": mcp}


def _base64(data: str, what: str) -> str:
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as error:
        raise McpResultError(f"MCP {what} data is not valid base64.") from error
    return data


def _json_object(value: object, what: str) -> JsonObject:
    if not isinstance(value, dict):
        raise McpResultError(f"MCP {what} must be a JSON object.")
    mapping = cast(dict[str, Any], value)
    try:
        return cast(JsonObject, clone_json_value(mapping, what))
    except Exception as error:
        raise McpResultError(f"MCP {what} is not strict JSON: {error}") from error
