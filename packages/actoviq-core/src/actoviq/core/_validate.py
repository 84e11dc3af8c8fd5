"""Field validators shared by the frozen attrs classes of core (internal)."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any, cast

import attrs

from actoviq.core._json_rules import INVALID, MAX_JSON_DEPTH, has_surrogate, scan
from actoviq.core._unset import UNSET
from actoviq.core.errors import ItemValidationError
from actoviq.core.json import json_value_error

__all__ = [
    "camel",
    "check_bool",
    "check_json",
    "check_json_object",
    "check_literal",
    "check_opt_json_object",
    "check_opt_literal",
    "check_opt_str",
    "check_str",
]

Validator = Callable[[Any, "attrs.Attribute[Any]", Any], None]


def camel(name: str) -> str:
    """snake_case attribute name → camelCase wire key."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _owner(instance: object) -> str:
    item_type = getattr(type(instance), "type", None)
    return item_type if isinstance(item_type, str) else type(instance).__name__


def _fail(instance: object, attribute: attrs.Attribute[Any], expected: str, got: object) -> None:
    owner = _owner(instance)
    wire = camel(attribute.name)
    raise ItemValidationError(
        f"{owner}.{wire} must be {expected}, got {type(got).__name__}.",
        field=wire,
        item_type=owner,
    )


def _surrogate(instance: object, attribute: attrs.Attribute[Any]) -> None:
    owner = _owner(instance)
    wire = camel(attribute.name)
    raise ItemValidationError(
        f"{owner}.{wire} must be a string without lone UTF-16 surrogates (strict JSON).",
        field=wire,
        item_type=owner,
        reason="lone-surrogate",
    )


def check_str(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if type(value) is not str:
        _fail(instance, attribute, "a string", value)
    elif not value.isascii() and has_surrogate(value):
        _surrogate(instance, attribute)


def check_opt_str(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    if type(value) is not str:
        _fail(instance, attribute, "a string or absent", value)
    elif not value.isascii() and has_surrogate(value):
        _surrogate(instance, attribute)


def check_bool(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if type(value) is not bool:
        _fail(instance, attribute, "a boolean", value)


def check_json(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is UNSET or scan(value, MAX_JSON_DEPTH) != INVALID:
        return
    owner = _owner(instance)
    wire = camel(attribute.name)
    error = json_value_error(value, f"{owner}.{wire}")
    assert error is not None
    expected = error.expected or "a finite, acyclic JSON value"
    raise ItemValidationError(
        f"{owner}.{wire} must be {expected} (invalid at {_short(error.path)}).",
        field=wire,
        item_type=owner,
        path=error.path,
        reason=error.reason,
    )


def _short(path: str) -> str:
    return path if len(path) <= 120 else f"{path[:60]}...{path[-40:]}"


def check_json_object(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if type(value) is not dict:
        _fail(instance, attribute, "a JSON object", value)
    check_json(instance, attribute, cast(object, value))


def check_opt_json_object(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None:
        check_json_object(instance, attribute, value)


def check_literal(allowed: Collection[str]) -> Validator:
    options = tuple(allowed)
    choices = " | ".join(repr(choice) for choice in options)

    def validate(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if type(value) is not str or value not in options:
            owner = _owner(instance)
            wire = camel(attribute.name)
            raise ItemValidationError(
                f"{owner}.{wire} must be one of {choices}, got {value!r}.",
                field=wire,
                item_type=owner,
            )

    validate.allowed = options  # type: ignore[attr-defined]  # read by actoviq.core.schema
    return validate


def check_opt_literal(allowed: Collection[str]) -> Validator:
    inner = check_literal(allowed)

    def validate(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if value is not None:
            inner(instance, attribute, value)

    validate.allowed = tuple(allowed)  # type: ignore[attr-defined]
    return validate
