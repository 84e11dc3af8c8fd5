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

The same holds for a tool's ``outputSchema``: the SDK checks a result's ``structuredContent``
against it in the host, so :func:`guard_output_validation` makes a connection's session check
the schema without its regexes (the server's own output against the server's own patterns is
the server's business; everything else is still checked).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final, cast

from actoviq.core import JsonObject, JsonValue

__all__ = ["guard_output_validation", "has_regex", "without_regex"]

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


def guard_output_validation(session: Any) -> None:
    """Make ``session`` (the SDK's ``ClientSession``) validate tool results without regexes.

    The SDK's ``validate_tool_result`` runs the cached ``outputSchema`` as given; for a schema
    with a ``pattern`` or ``patternProperties`` this replacement validates against
    :func:`without_regex` of it instead, with the SDK's messages (its ``RuntimeError`` texts),
    so a hostile server cannot stall the host's event loop through its own output. Schemas
    without regexes, and an SDK whose schema cache this cannot read, keep the SDK's own check.
    """
    original: Callable[[str, Any], Awaitable[None]] = session.validate_tool_result
    compiled: dict[str, tuple[object, Any]] = {}

    async def validate_tool_result(name: str, result: Any) -> None:
        schemas = getattr(session, "_tool_output_schemas", None)
        if not isinstance(schemas, dict):
            return await original(name, result)
        if name not in schemas:
            await session.list_tools()  # as the SDK does: refresh the cache for an unseen tool
        schema = cast(dict[str, Any], schemas).get(name)
        if not isinstance(schema, dict) or not has_regex(cast(JsonValue, schema)):
            return await original(name, result)
        if (
            result.structured_content is None
            and "structured_content" not in result.model_fields_set
        ):
            raise RuntimeError(
                f"Tool {name} has an output schema but did not return structured content"
            )
        validator = _validator(name, cast(JsonObject, schema), compiled)
        from jsonschema import exceptions

        best: Any = exceptions.best_match  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        error: object = best(validator.iter_errors(result.structured_content))
        if error is not None:
            raise RuntimeError(f"Invalid structured content returned by tool {name}: {error}")

    session.validate_tool_result = validate_tool_result


def _validator(name: str, schema: JsonObject, compiled: dict[str, tuple[object, Any]]) -> Any:
    """The compiled validator of ``schema`` minus its regexes (cached per tool and schema)."""
    cached = compiled.get(name)
    if cached is not None and cached[0] is schema:
        return cached[1]
    from jsonschema import SchemaError
    from jsonschema.validators import validator_for
    from referencing import Registry

    stripped = cast(dict[str, Any], without_regex(schema))
    validator_cls: Any = validator_for(stripped)
    try:
        validator_cls.check_schema(stripped)
    except SchemaError as error:
        raise RuntimeError(f"Invalid schema for tool {name}: {error}") from None
    registry: Registry[Any] = Registry()
    validator = validator_cls(stripped, registry=registry)
    compiled[name] = (schema, validator)
    return validator
