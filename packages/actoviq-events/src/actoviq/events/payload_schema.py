"""JSON Schemas of the typed event payloads, derived from the catalogue's ``TypedDict``s.

The run-event schema (:func:`actoviq.events.schema.run_event_json_schema`) gives every catalogued
type its ``data`` schema, generated here from the same ``TypedDict``s the type checker sees, so
documentation and code cannot drift. Payload objects allow additional properties: consumers must
ignore additive fields (spec 03 §5.1).
"""

from __future__ import annotations

import types
import typing
from typing import Any, cast, get_args, get_origin

from actoviq.core import JsonObject, JsonValue
from actoviq.events.catalogue import EVENT_PAYLOADS

__all__ = ["event_payload_schemas", "payload_json_schema"]


def _schema(hint: object, defs: dict[str, Any]) -> dict[str, Any]:
    if hint == JsonValue or hint is Any or hint is object:
        return {}
    if hint == JsonObject:
        return {"type": "object"}
    if hint is str:
        return {"type": "string"}
    if hint is bool:
        return {"type": "boolean"}
    if hint is int:
        return {"type": "integer"}
    if hint is float:
        return {"type": "number"}
    if hint is None or hint is type(None):
        return {"type": "null"}
    origin = get_origin(hint)
    if origin in (typing.NotRequired, typing.Required):
        return _schema(get_args(hint)[0], defs)
    if origin is typing.Literal:
        return {"enum": list(get_args(hint))}
    if origin is typing.Union or origin is types.UnionType:
        args = get_args(hint)
        if {str, int, float, bool}.issubset(args):
            return {}  # JsonValue (expanded by get_type_hints)
        return {"anyOf": [_schema(arg, defs) for arg in args]}
    if origin is dict:
        return {"type": "object"}  # JsonObject (values are any JSON)
    if origin is list:
        (item,) = get_args(hint) or (Any,)
        return {"type": "array", "items": _schema(item, defs)}
    if isinstance(hint, type) and typing.is_typeddict(hint):
        name = hint.__name__
        if name not in defs:
            defs[name] = {}  # reserve (recursion guard)
            defs[name] = payload_json_schema(hint, defs)
        return {"$ref": f"#/$defs/{name}"}
    raise TypeError(f"no schema rule for {hint!r}")


def payload_json_schema(payload: type[Any], defs: dict[str, Any]) -> dict[str, Any]:
    """The object schema of one payload ``TypedDict`` (nested payloads go to ``defs``)."""
    hints = typing.get_type_hints(payload, include_extras=True)
    required = [
        key
        for key, hint in hints.items()
        if get_origin(hint) is not typing.NotRequired and key in payload.__required_keys__
    ]
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {key: _schema(hint, defs) for key, hint in hints.items()},
    }
    if required:
        schema["required"] = required
    doc = (payload.__doc__ or "").strip().split("\n")[0]
    if doc:
        schema["description"] = doc
    return schema


def event_payload_schemas() -> tuple[dict[str, JsonObject], dict[str, Any]]:
    """``({event type: data schema}, $defs)`` for every catalogued event type."""
    defs: dict[str, Any] = {}
    schemas = {
        name: cast(JsonObject, _schema(payload, defs)) for name, payload in EVENT_PAYLOADS.items()
    }
    return schemas, defs
