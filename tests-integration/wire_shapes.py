"""Where each field of a canonical item shows up in an adapter's request body.

An adapter registers, per item type it maps, a *shape*: for every field of the item's canonical
JSON (dotted paths into nested records such as ``source.url``) either the documented key path in
the provider body (a ``WireKey``) or why it is not sent (``Omitted``). The release gate then looks
for one node of the body that holds every documented key with the field's value, so a renamed,
dropped or misplaced key fails the gate, not only a canonical dict copied verbatim.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, cast


@dataclass(frozen=True)
class WireKey:
    """The documented place of one canonical field in the provider body.

    Attributes:
        path: dotted key path from the node that represents the item (list positions as numbers,
            e.g. ``content.0.text``).
        form: ``equal`` (the same JSON value), ``json`` (a JSON string holding the value) or
            ``contains`` (a string containing the value, e.g. a data URL).
        values: canonical value → provider value, for enumerations spelled differently.
    """

    path: str
    form: Literal["equal", "json", "contains"] = "equal"
    values: Mapping[Any, Any] | None = None


@dataclass(frozen=True)
class Omitted:
    """A canonical field the adapter documents it does not send, and why."""

    reason: str


WireShape: TypeAlias = Mapping[str, WireKey | Omitted]
"""Canonical field path → where it goes, for one item type."""

WireShapes: TypeAlias = Mapping[str, WireShape]
"""Item type (``"tool_call"``) → its shape, for one adapter."""


def _expected(item_json: Mapping[str, Any], shape: WireShape) -> tuple[dict[str, Any], list[str]]:
    """(field path → value for every documented key, problems with the shape's coverage)."""
    expected: dict[str, Any] = {}
    problems: list[str] = []
    seen: set[str] = set()

    def walk(record: Mapping[str, Any], prefix: str) -> None:
        for key, value in record.items():
            path = f"{prefix}{key}"
            if path == "type":
                continue
            entry = shape.get(path)
            if entry is None and isinstance(value, dict):
                walk(cast(Mapping[str, Any], value), f"{path}.")
            elif entry is None:
                problems.append(f"field {path!r} has no documented key (WireKey or Omitted)")
            else:
                seen.add(path)
                if isinstance(entry, WireKey):
                    expected[path] = value

    walk(item_json, "")
    problems.extend(
        f"shape names {p!r}, not a field of the item" for p in sorted(set(shape) - seen)
    )
    return expected, problems


def _resolve(node: Any, path: str) -> tuple[bool, Any]:
    for part in path.split("."):
        if isinstance(node, dict) and part in node:
            node = cast(dict[str, Any], node)[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(cast(list[Any], node)):
            node = cast(list[Any], node)[int(part)]
        else:
            return False, None
    return True, node


def _matches(actual: Any, key: WireKey, value: Any) -> bool:
    wanted = key.values.get(value, value) if key.values is not None else value
    if key.form == "equal":
        return type(actual) is type(wanted) and actual == wanted
    if not isinstance(actual, str):
        return False
    if key.form == "contains":
        return str(wanted) in actual
    try:
        return json.loads(actual) == wanted
    except ValueError:
        return False


def _nodes(body: Any) -> Iterator[dict[str, Any]]:
    stack = [body]
    while stack:
        current = stack.pop()
        if isinstance(current, dict):
            node = cast(dict[str, Any], current)
            yield node
            stack.extend(node.values())
        elif isinstance(current, list):
            stack.extend(cast(list[Any], current))


def shape_problems(body: Any, item_json: Mapping[str, Any], shape: WireShape) -> list[str]:
    """Why ``body`` does not carry ``item_json`` as ``shape`` documents (empty when it does)."""
    expected, problems = _expected(item_json, shape)
    if problems or not expected:
        return problems or ["the shape documents no key at all"]
    best: list[str] | None = None
    for node in _nodes(body):
        missing: list[str] = []
        for path, value in expected.items():
            key = cast(WireKey, shape[path])
            found, actual = _resolve(node, key.path)
            if not found or not _matches(actual, key, value):
                missing.append(f"{path} → {key.path} ({key.form} {value!r}; found {actual!r})")
        if not missing:
            return []
        if best is None or len(missing) < len(best):
            best = missing
    return [f"no node of the body carries the item; closest misses: {best}"]
