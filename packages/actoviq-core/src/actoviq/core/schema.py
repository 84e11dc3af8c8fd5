"""JSON Schema (draft 2020-12) of the canonical item wire format, derived from the item classes.

The schema is generated from the same field declarations and validators that the converter uses,
so it cannot drift from the code; ``make docs`` writes it to ``docs/schemas/items.schema.json``.
"""

from __future__ import annotations

from typing import Any, cast

import attrs

from actoviq.core import _validate as v
from actoviq.core._unset import UNSET
from actoviq.core.items import ITEM_TYPES
from actoviq.core.json import JsonObject

__all__ = ["items_json_schema"]

_SOURCE_REF = {"$ref": "#/$defs/source"}


def _field_schema(field: attrs.Attribute[Any]) -> dict[str, Any]:
    validator: Any = field.validator
    allowed = getattr(validator, "allowed", None)
    if allowed is not None:
        return {"enum": list(allowed)}
    if validator in (v.check_str, v.check_opt_str):
        return {"type": "string"}
    if validator is v.check_bool:
        return {"type": "boolean"}
    if validator in (v.check_json_object, v.check_opt_json_object):
        return {"type": "object"}
    if validator is v.check_json:
        return {}
    if field.name == "source":
        return dict(_SOURCE_REF)
    raise TypeError(f"no schema rule for field {field.name!r} (validator {validator!r})")


def _source_defs() -> dict[str, Any]:
    def closed(kind: str, props: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"kind": {"const": kind}, **props},
            "required": ["kind", *props],
            "additionalProperties": False,
        }

    return {
        "oneOf": [
            closed("url", {"url": {"type": "string"}}),
            closed("base64", {"mediaType": {"type": "string"}, "data": {"type": "string"}}),
            closed("file", {"fileId": {"type": "string"}}),
        ]
    }


def items_json_schema() -> JsonObject:
    """The schema of one canonical item: a ``oneOf`` over the 14 types, tagged by ``type``."""
    defs: dict[str, Any] = {"source": _source_defs()}
    refs: list[dict[str, Any]] = []
    for type_name, cls in ITEM_TYPES.items():
        properties: dict[str, Any] = {"type": {"const": type_name}}
        required: list[str] = ["type"]
        for field in attrs.fields(cls):
            wire = v.camel(field.name)
            properties[wire] = _field_schema(field)
            if field.default is attrs.NOTHING:
                required.append(wire)
            elif field.default is not None and field.default is not UNSET:
                properties[wire] = {**properties[wire], "default": field.default}
        defs[type_name] = {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        }
        refs.append({"$ref": f"#/$defs/{type_name}"})
    schema: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:actoviq:schema:canonical-item",
        "title": "Actoviq canonical item",
        "oneOf": refs,
        "$defs": defs,
    }
    return cast(JsonObject, schema)
