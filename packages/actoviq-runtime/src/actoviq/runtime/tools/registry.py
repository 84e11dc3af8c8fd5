"""``ToolRegistry``: the runtime's tools by name (spec 03 §4.2).

Example:
    >>> from actoviq.runtime.tools import tool
    >>> @tool
    ... def ping() -> str:
    ...     '''Answer pong.'''
    ...     return "pong"
    >>> ToolRegistry([ping]).names()
    ('ping',)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from actoviq.runtime.tools.descriptor import RuntimeTool, ToolDescriptor
from actoviq.runtime.tools.errors import ToolDefinitionError, ToolRegistryError

__all__ = ["ToolRegistry"]


class ToolRegistry:
    """Registered tools; resolution is by exact (stripped) name."""

    __slots__ = ("_tools",)

    def __init__(self, tools: Iterable[RuntimeTool] = ()) -> None:
        self._tools: dict[str, RuntimeTool] = {}
        for entry in tools:
            self.register(entry)

    def register(self, tool: RuntimeTool) -> RuntimeTool:
        """Add ``tool``; returns it.

        Raises:
            ToolDefinitionError: not a RuntimeTool, or it has no callable ``execute``.
            ToolRegistryError: a tool with that name is already registered.
        """
        if not isinstance(tool, RuntimeTool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ToolDefinitionError(
                "ToolRegistry.register() expects a RuntimeTool (use @tool or RuntimeTool(...))."
            )
        name = tool.descriptor.name
        if not callable(tool.execute):
            raise ToolDefinitionError(f'Tool "{name}" must provide execute().')
        if name in self._tools:
            raise ToolRegistryError(f'Tool "{name}" is already registered.')
        self._tools[name] = tool
        return tool

    def has(self, name: str) -> bool:
        """Whether ``name`` is registered."""
        return name in self._tools

    def resolve(self, name: str) -> RuntimeTool | None:
        """The tool called ``name``, or None."""
        return self._tools.get(name)

    def list(self) -> tuple[ToolDescriptor, ...]:
        """All descriptors, sorted by name (an immutable tuple)."""
        return tuple(self._tools[name].descriptor for name in sorted(self._tools))

    def names(self) -> tuple[str, ...]:
        """All tool names, sorted."""
        return tuple(sorted(self._tools))

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[RuntimeTool]:
        return iter([self._tools[name] for name in sorted(self._tools)])
