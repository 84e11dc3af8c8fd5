"""``OutputSchema``: what structured output an agent must produce, and how it is parsed.

Built from a type (attrs class, dataclass, TypedDict, pydantic model, any type hint) with
:meth:`OutputSchema.from_type`, or from a JSON Schema with :meth:`OutputSchema.from_json_schema`;
``AgentSpec(output=...)`` accepts all three forms.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from typing import Any, Final, Generic, cast

import attrs
from typing_extensions import TypeVar

from actoviq.core.errors import AgentSpecError
from actoviq.core.json import (
    JsonLike,
    JsonObject,
    JsonValue,
    clone_json_value,
    find_json_violation,
)
from actoviq.core.type_schema import SchemaDefinitionError, type_schema

__all__ = ["OutputSchema", "output_schema_of"]

TOutput = TypeVar("TOutput", default=str)
_O = TypeVar("_O")

_SCHEMA_NAME: Final = re.compile(r"[^a-zA-Z0-9_-]+")
_WRAPPER_KEY: Final = "response"


@attrs.frozen(kw_only=True, slots=True)
class OutputSchema(Generic[TOutput]):
    """A JSON Schema for structured output, with an optional ``parse`` into a Python value.

    Build one from a type with :meth:`from_type` (or pass the type as ``AgentSpec(output=...)``)
    or from a JSON Schema with :meth:`from_json_schema`. The runtime always validates the model's
    output against ``schema`` (jsonschema) before ``parse`` builds the typed value.

    Attributes:
        name: the schema name the provider sees (letters, digits, ``_`` and ``-``).
        schema: the JSON Schema (Draft 2020-12) of the JSON the model must produce.
        description: what the output is, for the model.
        strict: ask the provider for strict schema adherence (None: the adapter's default).
        parse: turns the validated JSON into the output value (None: the JSON itself).
    """

    name: str
    schema: JsonObject
    description: str | None = None
    strict: bool | None = None
    parse: Callable[[JsonValue], TOutput] | None = None

    @staticmethod
    def from_type(
        output_type: type[_O],
        *,
        name: str | None = None,
        description: str | None = None,
        strict: bool | None = None,
        localns: Mapping[str, object] | None = None,
    ) -> OutputSchema[_O]:
        """The schema of ``output_type`` (attrs class, dataclass, TypedDict, pydantic model ...).

        A type whose schema is not a JSON object (``int``, ``list[City]``, a union) is wrapped as
        ``{"response": ...}`` (providers require an object at the top); ``parse`` unwraps it.
        ``strict`` defaults to True when the schema allows it (every property required, no
        additional properties), else False.

        Raises:
            AgentSpecError: the type cannot be expressed as JSON Schema.
        """
        if localns is None:
            schema = _cached_from_type(output_type, name, description, strict)
        else:
            schema = _from_type(output_type, name, description, strict, localns)
        return cast("OutputSchema[_O]", schema)

    @staticmethod
    def from_json_schema(
        schema: Mapping[str, JsonLike],
        *,
        name: str | None = None,
        description: str | None = None,
        strict: bool | None = None,
    ) -> OutputSchema[Any]:
        """An output given by a JSON Schema; the output is the validated JSON value.

        ``name`` defaults to the schema's ``title`` (else ``"output"``). The output is typed
        ``Any``: a JSON Schema tells the type checker nothing about the value.

        Raises:
            AgentSpecError: ``schema`` is not a JSON object.
        """
        if not isinstance(schema, Mapping) or find_json_violation(dict(schema)) is not None:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise AgentSpecError("output schema must be a JSON object.", field="output")
        document = cast(JsonObject, clone_json_value(dict(schema)))
        title = document.get("title")
        label = name if name is not None else (title if isinstance(title, str) else "output")
        return OutputSchema(
            name=_SCHEMA_NAME.sub("_", label)[:64] or "output",
            schema=document,
            description=description,
            strict=strict,
        )


def _from_type(
    output_type: Any,
    name: str | None,
    description: str | None,
    strict: bool | None,
    localns: Mapping[str, object] | None,
) -> OutputSchema[Any]:
    try:
        schema, convert = type_schema(output_type, localns=localns)
    except SchemaDefinitionError as error:
        raise AgentSpecError(f"output type: {error}", field="output") from None
    if schema.get("type") != "object":
        defs = _pop_defs(schema)
        inner = dict(schema)
        wrapped: JsonObject = {
            "type": "object",
            "properties": {_WRAPPER_KEY: inner},
            "required": [_WRAPPER_KEY],
            "additionalProperties": False,
        }
        if defs is not None:
            wrapped["$defs"] = defs
        schema = wrapped
        unwrap = convert

        def unwrap_response(value: Any) -> Any:
            return unwrap(value[_WRAPPER_KEY])

        convert = unwrap_response

    label = name if name is not None else getattr(output_type, "__name__", "output")
    return OutputSchema(
        name=_SCHEMA_NAME.sub("_", label)[:64] or "output",
        schema=schema,
        description=description,
        strict=strict if strict is not None else _strict_compatible(schema),
        parse=cast("Callable[[JsonValue], Any]", convert),
    )


@functools.lru_cache(maxsize=512)
def _cached_from_type(
    output_type: Any, name: str | None, description: str | None, strict: bool | None
) -> OutputSchema[Any]:
    # One schema per type: two specs declaring the same output type compare equal.
    return _from_type(output_type, name, description, strict, None)


def _pop_defs(schema: JsonObject) -> JsonValue | None:
    """Pop the ``$defs`` of ``schema`` (they stay at the root when the schema is wrapped)."""
    return schema.pop("$defs", None) if "$defs" in schema else None


def _strict_compatible(schema: JsonValue) -> bool:
    """True when every object in ``schema`` requires all its properties and allows no others."""
    stack: list[JsonValue] = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        properties = node.get("properties")
        if isinstance(properties, dict):
            required = node.get("required", [])
            if node.get("additionalProperties") is not False or not isinstance(required, list):
                return False
            if set(properties) != {name for name in required if isinstance(name, str)}:
                return False
        elif node.get("type") == "object" and node.get("additionalProperties") is not False:
            return False
        stack.extend(node.values())
    return True


def output_schema_of(value: object, agent_id: str) -> OutputSchema[Any] | None:
    """``AgentSpec(output=...)`` as an :class:`OutputSchema`: a type, a schema or the schema.

    Raises:
        AgentSpecError: anything else, or a type that has no JSON Schema.
    """
    if value is None or isinstance(value, OutputSchema):
        return cast("OutputSchema[Any] | None", value)
    if isinstance(value, Mapping):
        return OutputSchema.from_json_schema(cast(Mapping[str, JsonLike], value))
    if isinstance(value, type) or _typing_alias(value):
        return OutputSchema.from_type(cast(type[Any], value))
    raise AgentSpecError(
        f'Agent "{agent_id}" output must be a type, an OutputSchema or a JSON Schema object, '
        f"got {type(value).__name__}.",
        field="output",
    )


def _typing_alias(value: object) -> bool:
    """True for parametrised hints such as ``list[City]`` or ``int | None``."""
    import typing

    return typing.get_origin(value) is not None
