"""Builders of fresh plain JSON objects of one shape (for ``CheckedJsonTemplate.hand_off``).

Copying a checked object into plain ``dict``/``list`` containers walks it per copy (a loop
step, a type test and a store per container and per nested key). A template makes many objects
of one shape, so the shape is turned once into a function whose body is the object as a display
(``{"runId": a0, "trace": {"traceId": a7, "spanId": a1}, ...}``): CPython builds a dict display
with constant keys in a handful of instructions, with no Python-level loop. Every scalar is an
argument (the holes first, then the base's other scalars), so objects of the same shape (the
same keys, nesting and array lengths; the per-parent values differ) share one function.

The function is compiled from an AST whose only constants are the object's keys (strings the
template's checked base holds): no source text is assembled from data, and the function has
no globals or builtins. Shapes deeper than :data:`MAX_BUILDER_DEPTH` or larger than
:data:`MAX_BUILDER_NODES` get no builder (the caller copies instead): the compiler recurses
per nesting level.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any, Final, cast

from actoviq.core.checked_json import (
    CheckedJsonObject,
    _parts,  # pyright: ignore[reportPrivateUsage]
)

__all__ = ["MAX_BUILDER_DEPTH", "MAX_BUILDER_NODES", "Builder", "builder_for"]

MAX_BUILDER_DEPTH: Final = 48
MAX_BUILDER_NODES: Final = 4096
_CACHE_SIZE: Final = 256

Builder = Callable[..., dict[str, Any]]
"""Makes one fresh plain object: ``builder(*hole_values, *other_scalars)``."""

# A shape: an argument index (a scalar), or ("d", ((key, shape), ...)) / ("l", (shape, ...)).
_Shape = int | tuple[str, tuple[Any, ...]]

_builders: dict[_Shape, Builder] = {}


def builder_for(
    base: CheckedJsonObject, holes: tuple[tuple[str, ...], ...]
) -> tuple[Builder, tuple[object, ...]] | None:
    """The builder of ``base``'s shape and the base's other scalars (its last arguments).

    The holes' values are the builder's first arguments. None when the shape is too deep or
    too large. ``holes`` are paths to scalar fields through nested checked objects (as a
    template checked them).
    """
    hole_index = {path: index for index, path in enumerate(holes)}
    scalars: list[object] = []
    count = len(holes)
    nodes = 0
    # Iterative: (container, its path through checked objects or None, depth, shape items).
    root_items: list[Any] = []
    stack: list[tuple[object, tuple[str, ...] | None, int, list[Any]]] = [(base, (), 1, root_items)]
    pending: list[tuple[list[Any], int, str, list[Any]]] = []  # (parent items, slot, tag, own)
    while stack:
        node, path, depth, items = stack.pop()
        nodes += 1
        if depth > MAX_BUILDER_DEPTH or nodes > MAX_BUILDER_NODES:
            return None
        entries: Any
        if type(node) is CheckedJsonObject:
            entries = _parts(node)[0].items()
        elif type(node) is dict:
            entries = cast("dict[str, object]", node).items()
        else:
            entries = enumerate(cast("list[object]", node))
        for key, value in entries:
            kind: type[object] = type(cast(object, value))
            if kind is dict or kind is list or kind is CheckedJsonObject:
                inner: list[Any] = []
                inner_path = (
                    (*path, key) if path is not None and kind is CheckedJsonObject else None
                )
                items.append([key, None])
                pending.append((items, len(items) - 1, "l" if kind is list else "d", inner))
                stack.append((value, inner_path, depth + 1, inner))
                continue
            index = hole_index.get((*path, key)) if path is not None else None
            if index is None:
                index = count + len(scalars)
                scalars.append(value)
            items.append([key, index])
    # Containers were opened parent first: close them children first.
    for parent_items, slot, tag, own in reversed(pending):
        parent_items[slot][1] = _shape(tag, own)
    shape = _shape("d", root_items)
    builder = _builders.get(shape)
    if builder is None:
        if len(_builders) >= _CACHE_SIZE:
            _builders.clear()
        builder = _compile(shape, count + len(scalars))
        _builders[shape] = builder
    return builder, tuple(scalars)


def _shape(tag: str, items: list[Any]) -> _Shape:
    if tag == "d":
        return ("d", tuple((key, value) for key, value in items))
    return ("l", tuple(value for _, value in items))


def _compile(shape: _Shape, arguments: int) -> Builder:
    """``lambda a0, a1, ...: <shape as a display>`` (see the module doc)."""
    tree = ast.Expression(
        body=ast.Lambda(
            args=ast.arguments(
                posonlyargs=[ast.arg(arg=f"a{index}") for index in range(arguments)],
                args=[],
                vararg=None,
                kwonlyargs=[],
                kw_defaults=[],
                kwarg=None,
                defaults=[],
            ),
            body=_display(shape),
        )
    )
    code = compile(ast.fix_missing_locations(tree), "<json builder>", "eval")
    return cast(Builder, eval(code, {"__builtins__": {}}))  # an AST of displays and names only


def _display(shape: _Shape) -> ast.expr:
    if type(shape) is int:
        return ast.Name(id=f"a{shape}", ctx=ast.Load())
    tag, items = cast("tuple[str, tuple[Any, ...]]", shape)
    if tag == "d":
        return ast.Dict(
            keys=[ast.Constant(value=key) for key, _ in items],
            values=[_display(value) for _, value in items],
        )
    return ast.List(elts=[_display(value) for value in items], ctx=ast.Load())
