"""``MiddlewareRegistry``: AgentSpec middleware references → definitions (spec 03 §3.8).

Example:
    >>> from actoviq.runtime.middleware import define_middleware
    >>> audit = define_middleware("audit", "afterRun", lambda ctx, next: next())
    >>> MiddlewareRegistry({"audit": audit}).resolve(["audit"])[0].name
    'audit'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Self

from actoviq.core import RefSpec
from actoviq.runtime.middleware.definition import MiddlewareDefinition, define_middleware
from actoviq.runtime.middleware.errors import MiddlewareRegistryError

__all__ = ["MiddlewareRef", "MiddlewareRegistry"]

MiddlewareRef = str | RefSpec | Mapping[str, Any]
"""A middleware named by id, a `RefSpec`, or a JSON mapping of one."""
Group = MiddlewareDefinition | Sequence[MiddlewareDefinition]


class MiddlewareRegistry:
    """Named groups of middleware definitions; resolution never initialises services."""

    __slots__ = ("_groups",)

    def __init__(self, groups: Mapping[str, Group] | None = None) -> None:
        self._groups: dict[str, tuple[MiddlewareDefinition, ...]] = {}
        for group_id, definitions in (groups or {}).items():
            self.register(group_id, definitions)

    def register(self, id: str, definitions: Group, *, replace: bool = False) -> Self:
        """Register ``definitions`` under ``id``; returns self.

        Raises:
            MiddlewareRegistryError: blank id, empty group, or an existing id without ``replace``.
            MiddlewareConfigurationError: an invalid definition.
        """
        if not isinstance(id, str) or not id.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise MiddlewareRegistryError("Middleware registry id must not be empty.")
        key = id.strip()
        items: Sequence[MiddlewareDefinition | Mapping[str, Any]]
        if isinstance(definitions, MiddlewareDefinition | Mapping):
            items = [definitions]
        else:
            items = definitions
        if not items:
            raise MiddlewareRegistryError(f'Middleware "{key}" must contain a definition.')
        if key in self._groups and not replace:
            raise MiddlewareRegistryError(f'Middleware "{key}" is already registered.')
        self._groups[key] = tuple(define_middleware(item) for item in items)
        return self

    def has(self, id: str) -> bool:
        """Whether ``id`` is registered."""
        return id in self._groups

    def resolve(self, refs: Iterable[MiddlewareRef] = ()) -> tuple[MiddlewareDefinition, ...]:
        """The definitions of ``refs``, groups concatenated in ref order (options are ignored).

        Raises:
            MiddlewareRegistryError: an unknown reference.
        """
        resolved: list[MiddlewareDefinition] = []
        for ref in refs:
            ref_id = _ref_id(ref)
            group = self._groups.get(ref_id)
            if group is None:
                raise MiddlewareRegistryError(f'Unknown middleware reference "{ref_id}".')
            resolved.extend(group)
        return tuple(resolved)

    def list(self) -> tuple[str, ...]:
        """The registered ids, sorted."""
        return tuple(sorted(self._groups))


def _ref_id(ref: MiddlewareRef) -> str:
    if isinstance(ref, str):
        return ref
    if isinstance(ref, RefSpec):
        return ref.id
    value = ref.get("id")
    if not isinstance(value, str):
        raise MiddlewareRegistryError("Middleware reference must be a string or {id, options}.")
    return value
