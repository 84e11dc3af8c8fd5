"""A server's input schema, made safe to validate in the host: its regular expressions removed.

A tool's ``inputSchema`` comes from the MCP server, and its ``pattern`` / ``patternProperties``
keywords are regular expressions the host would run (Python's backtracking ``re``, through
``jsonschema``) against arguments the model wrote. A pattern such as ``^(a+)+$`` against a long
argument takes exponential time and blocks the event loop, so every run on the host stalls
(ReDoS), and no timeout can fire while the loop is blocked. Telling safe patterns from
catastrophic ones needs a regex engine with linear-time guarantees, which the standard library
does not have (even ``a*a*b`` is polynomial under ``re.search``).

So the host never runs a server's regular expressions: the local validation copy drops them,
and the server, which validates its own input, still checks them. The model still sees the
whole schema. Dropping is conservative: it only ever accepts more locally, never refuses an
argument the server would accept. Where ``patternProperties`` is removed, the subschema's
``additionalProperties`` / ``unevaluatedProperties`` (which depend on which names the patterns
matched) are removed with it.
"""

from __future__ import annotations

from typing import Final, cast

from actoviq.core import JsonObject, JsonValue

__all__ = ["has_regex", "without_regex"]

# Keywords whose value is one subschema, a name → subschema map, or a list of subschemas.
_ONE: Final = frozenset(
    {
        "additionalProperties",
        "unevaluatedProperties",
        "items",
        "additionalItems",
        "unevaluatedItems",
        "contains",
        "propertyNames",
        "not",
        "if",
        "then",
        "else",
    }
)
_MAP: Final = frozenset({"properties", "$defs", "definitions", "dependentSchemas"})
_LIST: Final = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
_REGEX: Final = frozenset({"pattern", "patternProperties"})


def without_regex(schema: JsonValue) -> JsonValue:
    """A copy of ``schema`` without ``pattern`` / ``patternProperties`` (see the module doc).

    Only schema positions are rewritten: a property *named* ``"pattern"`` (under
    ``properties``) and data under ``const``/``enum``/``default``/``examples`` are kept as they
    are.

    Example:
        >>> without_regex({"type": "string", "pattern": "^(a+)+$"})
        {'type': 'string'}
    """
    if not isinstance(schema, dict):
        return schema  # a boolean schema (or anything a validator would refuse) is unchanged
    out: JsonObject = {}
    drops_names = "patternProperties" in schema
    for key, value in schema.items():
        if key in _REGEX:
            continue
        if drops_names and key in ("additionalProperties", "unevaluatedProperties"):
            continue
        if key in _MAP and isinstance(value, dict):
            out[key] = {name: without_regex(sub) for name, sub in value.items()}
        elif key in _LIST and isinstance(value, list):
            out[key] = [without_regex(sub) for sub in cast(list[JsonValue], value)]
        elif key in _ONE:
            out[key] = without_regex(value)
        else:
            out[key] = value
    return out


def has_regex(schema: JsonValue) -> bool:
    """True when :func:`without_regex` would change ``schema``."""
    return without_regex(schema) != schema
