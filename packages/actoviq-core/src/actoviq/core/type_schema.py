"""JSON Schema and a converter derived from a Python type hint (tool inputs, agent outputs).

:class:`SchemaBuilder` turns primitives, ``Optional``/unions, ``Literal``, lists, tuples,
``dict[str, X]``, ``TypedDict``, attrs classes, dataclasses, enums and (when the user imported it)
pydantic models into a Draft 2020-12 JSON Schema *and* a converter that builds the typed value from
JSON that matches the schema. It validates nothing itself: the runtime validates with
``jsonschema`` first (core stays free of I/O and validator libraries, decision D1).

Examples:
    >>> import attrs
    >>> @attrs.frozen
    ... class City:
    ...     name: str
    ...     population: int = 0
    >>> schema, convert = type_schema(City)
    >>> schema["required"]
    ['name']
    >>> convert({"name": "Oslo"})
    City(name='Oslo', population=0)
"""

from __future__ import annotations

import dataclasses
import enum
import sys
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import attrs

from actoviq.core.errors import ActoviqError
from actoviq.core.json import JsonObject, JsonValue, clone_json_value

__all__ = [
    "SchemaBuilder",
    "SchemaDefinitionError",
    "SchemaValueError",
    "object_schema",
    "type_schema",
]

Converter = Callable[[Any], Any]  # values are whatever the hint describes


class SchemaDefinitionError(ActoviqError, TypeError, ValueError):
    """A type cannot be expressed as JSON Schema (e.g. a recursive or unsupported type)."""

    default_code = "SCHEMA_DEFINITION_INVALID"


class SchemaValueError(ValueError):
    """A value does not match a schema; ``errors`` lists ``"<path>: <message>"`` strings."""

    def __init__(self, errors: Sequence[str]) -> None:
        super().__init__("; ".join(errors) if errors else "invalid value")
        self.errors = tuple(errors)


def type_schema(
    hint: object, *, localns: Mapping[str, object] | None = None
) -> tuple[JsonObject, Converter]:
    """The JSON Schema (with ``$defs``) and the converter for ``hint``.

    Raises:
        SchemaDefinitionError: the hint cannot be expressed as JSON Schema.
    """
    builder = SchemaBuilder(localns)
    schema, convert = builder.build(hint)
    return builder.finish(schema), convert


def _same(value: Any) -> Any:
    return value


class SchemaBuilder:
    """Builds JSON Schema fragments and converters for type hints; shared ``$defs`` at the root."""

    def __init__(
        self,
        localns: Mapping[str, object] | None = None,
        *,
        error: Callable[[str], Exception] = SchemaDefinitionError,
    ) -> None:
        self.error = error
        self.defs: dict[str, JsonValue] = {}
        self._building: set[object] = set()
        self._localns = dict(localns) if localns is not None else None

    def hints(self, owner: object) -> dict[str, Any]:
        """Resolved type hints of a class or function (locals of the defining frame included)."""
        try:
            return typing.get_type_hints(owner, localns=self._localns, include_extras=True)
        except Exception as error:
            name = getattr(owner, "__qualname__", repr(owner))
            raise self.error(f"Cannot resolve the type hints of {name}: {error}") from None

    def finish(self, schema: JsonObject) -> JsonObject:
        """Attach collected ``$defs`` to the root schema."""
        if self.defs:
            schema = {**schema, "$defs": dict(self.defs)}
        return schema

    def build(self, hint: object) -> tuple[JsonObject, Converter]:
        """The JSON Schema fragment and the converter for ``hint``."""
        if hint in self._building:
            raise self.error(f"Recursive types are not supported: {hint!r}.")
        hint, description = _unwrap_annotated(hint)
        schema, convert = self._build(hint)
        if description is not None:
            schema = {**schema, "description": description}
        return schema, convert

    def _build(self, hint: object) -> tuple[JsonObject, Converter]:
        if hint is Any or hint is object:
            return {}, _same
        if hint is None or hint is type(None):
            return {"type": "null"}, _same
        if hint is bool:
            return {"type": "boolean"}, _same
        if hint is int:
            return {"type": "integer"}, _same
        if hint is float:
            return {"type": "number"}, _float
        if hint is str:
            return {"type": "string"}, _same
        origin = typing.get_origin(hint)
        args = typing.get_args(hint)
        if origin is typing.Literal:
            return _literal(args, self.error)
        if origin is typing.Union or origin is types.UnionType:
            return self._union(args)
        if origin in (list, Sequence) or hint is list or hint is Sequence:
            item_schema, item_convert = self.build(args[0] if args else Any)
            return {"type": "array", "items": item_schema}, _list_of(item_convert)
        if origin is tuple:
            return self._tuple(args)
        if hint is tuple:
            return {"type": "array"}, tuple
        if origin in (dict, Mapping) or hint is dict or hint is Mapping:
            return self._mapping(args)
        if isinstance(hint, type):
            return self._class(hint)
        raise self.error(f"Unsupported type: {hint!r}.")

    def _union(self, args: tuple[object, ...]) -> tuple[JsonObject, Converter]:
        branches = [self.build(arg) for arg in args]
        schema: JsonObject = {"anyOf": [branch for branch, _ in branches]}
        converters = [convert for _, convert in branches]
        nullable = any(arg is None or arg is type(None) for arg in args)

        def convert(value: Any) -> Any:
            if value is None and nullable:
                return None
            problems: list[str] = []
            for branch in converters:
                try:
                    return branch(value)
                except (TypeError, ValueError) as error:
                    problems.append(str(error))
            raise SchemaValueError(problems)

        return schema, convert

    def _tuple(self, args: tuple[object, ...]) -> tuple[JsonObject, Converter]:
        if len(args) == 2 and args[1] is Ellipsis:
            item_schema, item_convert = self.build(args[0])
            list_convert = _list_of(item_convert)
            return {"type": "array", "items": item_schema}, lambda value: tuple(list_convert(value))
        if not args or args == ((),):
            return {"type": "array", "maxItems": 0}, lambda value: ()
        parts = [self.build(arg) for arg in args]
        converters = [convert for _, convert in parts]
        schema: JsonObject = {
            "type": "array",
            "prefixItems": [part for part, _ in parts],
            "items": False,
            "minItems": len(parts),
        }
        return schema, lambda value: tuple(
            convert(item) for convert, item in zip(converters, value, strict=True)
        )

    def _mapping(self, args: tuple[object, ...]) -> tuple[JsonObject, Converter]:
        if args and args[0] is not str:
            raise self.error("Mappings must have str keys.")
        value_schema, value_convert = self.build(args[1] if len(args) == 2 else Any)
        schema: JsonObject = {"type": "object", "additionalProperties": value_schema}
        return schema, lambda value: {key: value_convert(item) for key, item in value.items()}

    def _class(self, cls: type[Any]) -> tuple[JsonObject, Converter]:
        if issubclass(cls, enum.Enum):
            return _enum(cls, self.error)
        if _is_typed_dict(cls):
            hints = self.hints(cls)
            return self._record(cls, hints, _typed_dict_required(cls, hints), dict)
        if attrs.has(cls):
            return self._attrs(cls)
        if dataclasses.is_dataclass(cls):
            return self._dataclass(cls)
        pydantic_schema = _pydantic(cls, self)
        if pydantic_schema is not None:
            return pydantic_schema
        raise self.error(f"Unsupported type: {cls.__qualname__}.")

    def _attrs(self, cls: type[Any]) -> tuple[JsonObject, Converter]:
        hints = self.hints(cls)
        fields = [field for field in attrs.fields(cls) if field.init]
        properties = {field.alias or field.name: hints.get(field.name, Any) for field in fields}
        required = {field.alias or field.name for field in fields if field.default is attrs.NOTHING}
        return self._record(cls, properties, required, lambda data: cls(**data))

    def _dataclass(self, cls: type[Any]) -> tuple[JsonObject, Converter]:
        hints = self.hints(cls)
        fields = [field for field in dataclasses.fields(cls) if field.init]
        properties = {field.name: hints.get(field.name, Any) for field in fields}
        required = {
            field.name
            for field in fields
            if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
        }
        return self._record(cls, properties, required, lambda data: cls(**data))

    def _record(
        self,
        owner: object,
        properties: Mapping[str, object],
        required: set[str] | frozenset[str],
        make: Callable[[dict[str, Any]], Any],
    ) -> tuple[JsonObject, Converter]:
        self._building.add(owner)
        try:
            built = {name: self.build(hint) for name, hint in properties.items()}
        finally:
            self._building.discard(owner)
        schema = object_schema({name: part for name, (part, _) in built.items()}, required)
        converters = {name: convert for name, (_, convert) in built.items()}

        def convert(value: Any) -> Any:
            data = {name: converters[name](item) for name, item in value.items()}
            return make(data)

        return schema, convert


def object_schema(
    properties: Mapping[str, JsonObject], required: set[str] | frozenset[str]
) -> JsonObject:
    """An object schema: properties, ``required`` in property order, no additional properties."""
    schema: JsonObject = {
        "type": "object",
        "properties": dict(properties),
        "additionalProperties": False,
    }
    ordered: list[JsonValue] = [name for name in properties if name in required]
    if ordered:
        schema["required"] = ordered
    return schema


def _unwrap_annotated(hint: object) -> tuple[object, str | None]:
    while typing.get_origin(hint) in (typing.NotRequired, typing.Required):
        hint = typing.get_args(hint)[0]
    if typing.get_origin(hint) is typing.Annotated:
        args = typing.get_args(hint)
        description = next((meta for meta in args[1:] if isinstance(meta, str)), None)
        return args[0], description
    return hint, None


def _float(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"expected a number, got {type(value).__name__}")
    return float(value)


def _list_of(convert: Converter) -> Converter:
    if convert is _same:
        return lambda value: list(value)
    return lambda value: [convert(item) for item in value]


def _literal(
    args: tuple[object, ...], error: Callable[[str], Exception]
) -> tuple[JsonObject, Converter]:
    values: list[JsonValue] = []
    for arg in args:
        if arg is not None and not isinstance(arg, str | int | float | bool):
            raise error(f"Unsupported Literal value: {arg!r}.")
        values.append(arg)
    schema: JsonObject = {"enum": values}
    if all(isinstance(value, str) for value in values):
        schema["type"] = "string"

    def convert(value: Any) -> Any:
        if value not in values:
            raise ValueError(f"expected one of {values!r}")
        return value

    return schema, convert


def _enum(cls: type[enum.Enum], error: Callable[[str], Exception]) -> tuple[JsonObject, Converter]:
    values: list[JsonValue] = []
    for member in cls:
        if not isinstance(member.value, str | int) or isinstance(member.value, bool):
            raise error(f"Enum {cls.__qualname__} must have str or int values.")
        values.append(member.value)
    schema: JsonObject = {"enum": values}
    if all(isinstance(value, str) for value in values):
        schema["type"] = "string"
    return schema, cls


def _is_typed_dict(cls: type[Any]) -> bool:
    return typing.is_typeddict(cls)


def _typed_dict_required(cls: type[Any], hints: Mapping[str, object]) -> frozenset[str]:
    # Read NotRequired/Required from the resolved hints: with string annotations Python 3.11
    # cannot see them and reports every key of a total TypedDict as required.
    declared = cast(frozenset[str], cls.__required_keys__)
    required: set[str] = set()
    for key, hint in hints.items():
        origin = typing.get_origin(hint)
        if origin is typing.NotRequired:
            continue
        if origin is typing.Required or key in declared:
            required.add(key)
    return frozenset(required)


def _pydantic(cls: type[Any], builder: SchemaBuilder) -> tuple[JsonObject, Converter] | None:
    """A pydantic model's schema; pydantic is only looked up if the user imported it."""
    pydantic = sys.modules.get("pydantic")
    if pydantic is None:
        return None
    base_model = cast(type[Any], pydantic.BaseModel)
    if not issubclass(cls, base_model):
        return None
    raw = cast(dict[str, Any], cls.model_json_schema(ref_template="#/$defs/{model}"))
    schema = cast(JsonObject, clone_json_value(raw, "pydantic JSON Schema"))
    nested = schema.pop("$defs", None)
    if isinstance(nested, dict):
        for name, definition in nested.items():
            existing = builder.defs.get(name)
            if existing is not None and existing != definition:
                raise builder.error(f'Two pydantic models share the schema name "{name}".')
            builder.defs[name] = definition
    validate_model = cast(Converter, cls.model_validate)
    return schema, validate_model
