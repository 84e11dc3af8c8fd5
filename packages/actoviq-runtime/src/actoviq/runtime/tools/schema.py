"""Tool input schemas: JSON Schema validation (``jsonschema``) and schemas derived from type hints.

``json_schema_input`` compiles one validator per schema, once. ``schema_from_type`` derives a
JSON Schema *and* a parser from a type hint: primitives, ``Optional``/unions, ``Literal``, lists,
tuples, ``dict[str, X]``, ``TypedDict``, attrs classes, dataclasses, enums and (when installed)
pydantic models. The parser first validates with the compiled JSON Schema, then builds the typed
value (attrs instance, enum member, pydantic model ...).

Example:
    >>> schema = json_schema_input({"type": "object", "required": ["q"]})
    >>> schema.parse({"q": 1})
    {'q': 1}
"""

from __future__ import annotations

import dataclasses
import enum
import sys
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import attrs

from actoviq.core import JsonObject, JsonValue, clone_json_value
from actoviq.runtime.tools.descriptor import ToolSchema
from actoviq.runtime.tools.errors import ToolDefinitionError

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

__all__ = [
    "ToolInputInvalidError",
    "compile_json_schema",
    "json_schema_input",
    "schema_from_type",
]

Converter = Callable[[Any], Any]  # values are whatever the hint describes


class ToolInputInvalidError(ValueError):
    """A value does not match a tool schema; ``errors`` lists ``"<path>: <message>"`` strings."""

    def __init__(self, errors: Sequence[str]) -> None:
        super().__init__("; ".join(errors) if errors else "invalid value")
        self.errors = tuple(errors)


def compile_json_schema(schema: Mapping[str, object]) -> Callable[[object], None]:
    """Check ``schema`` (Draft 2020-12) once and return a validating function.

    Raises:
        ToolDefinitionError: the schema itself is invalid.
    """
    # Imported here: jsonschema costs ~60 ms to import and `import actoviq.runtime` stays fast.
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    document = cast(JsonObject, clone_json_value(dict(schema), "Tool JSON Schema"))
    try:
        Draft202012Validator.check_schema(document)
    except SchemaError as error:
        raise ToolDefinitionError(f"Invalid tool JSON Schema: {error.message}") from None
    validator: Validator = Draft202012Validator(document)
    fast = _fast_object_check(document)

    def validate(value: object) -> None:
        if fast is not None and fast(value):
            return  # certainly valid: skip the (slow) general validator
        found: list[ValidationError] = list(validator.iter_errors(cast(Any, value)))  # pyright: ignore[reportUnknownMemberType]
        errors = sorted(found, key=_error_key)
        if errors:
            raise ToolInputInvalidError([_describe(error) for error in errors[:5]])

    return validate


_JSON_TYPES: dict[str, Callable[[object], bool]] = {
    "string": lambda v: type(v) is str,
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
    "integer": lambda v: type(v) is int or (type(v) is float and v.is_integer()),
    "number": lambda v: type(v) in (int, float),
}
_SIMPLE_OBJECT_KEYS = frozenset(
    {"type", "properties", "required", "additionalProperties", "title", "description", "$schema"}
)
_SIMPLE_PROPERTY_KEYS = frozenset({"type", "title", "description"})


def _fast_object_check(schema: Mapping[str, object]) -> Callable[[object], bool] | None:
    """A quick *sufficient* check for flat object schemas of primitive properties, or None.

    It returns True only when the value is certainly valid; anything else (including every
    invalid value) goes to the full validator, which reports the errors.
    """
    if schema.get("type") != "object" or not set(schema) <= _SIMPLE_OBJECT_KEYS:
        return None
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if (
        not isinstance(properties, dict)
        or not isinstance(required, list)
        or type(extra) is not bool
    ):
        return None
    checks: dict[str, Callable[[object], bool]] = {}
    for name, spec in cast(dict[str, object], properties).items():
        if (
            not isinstance(spec, dict)
            or not set(cast(dict[str, object], spec)) <= _SIMPLE_PROPERTY_KEYS
        ):
            return None
        kind = cast(dict[str, object], spec).get("type")
        tester = _JSON_TYPES.get(kind) if isinstance(kind, str) else None
        if tester is None:
            return None
        checks[name] = tester
    needed = tuple(cast(list[object], required))
    if not all(isinstance(name, str) for name in needed):
        return None

    def check(value: object) -> bool:
        if type(value) is not dict:
            return False
        data = cast(dict[str, object], value)
        for name in needed:
            if name not in data:
                return False
        for key, item in data.items():
            test = checks.get(key)
            if test is None:
                if not extra:
                    return False
            elif not test(item):
                return False
        return True

    return check


def _error_key(error: ValidationError) -> str:
    return "/".join(str(part) for part in error.absolute_path)


def _describe(error: ValidationError) -> str:
    path = "$" + "".join(f"[{part!r}]" for part in error.absolute_path)
    return f"{path}: {error.message}"


def json_schema_input(
    schema: Mapping[str, object], parse: Callable[[object], object] | None = None
) -> ToolSchema:
    """A :class:`ToolSchema` that validates with ``schema`` and then applies ``parse``.

    Args:
        schema: a JSON Schema (Draft 2020-12); it is also what the model sees.
        parse: an optional conversion run on valid input (default: the value itself).
    """
    validate = compile_json_schema(schema)

    def parse_input(value: object) -> object:
        validate(value)
        return parse(value) if parse is not None else value

    return ToolSchema(parse=parse_input, json_schema=cast(JsonObject, dict(schema)))


def schema_from_type(hint: object, *, localns: Mapping[str, object] | None = None) -> ToolSchema:
    """Derive a validating :class:`ToolSchema` from a type hint.

    Args:
        hint: the type (TypedDict, attrs class, pydantic model, ``list[int]`` ...).
        localns: names for resolving string annotations of locally defined classes.

    Raises:
        ToolDefinitionError: the hint cannot be expressed as JSON Schema.
    """
    builder = SchemaBuilder(localns)
    schema, convert = builder.build(hint)
    document = builder.finish(schema)
    validate = compile_json_schema(document)

    def parse_input(value: object) -> object:
        validate(value)
        try:
            return convert(value)
        except ToolInputInvalidError:
            raise
        except Exception as error:
            raise ToolInputInvalidError([f"$: {error}"]) from error

    return ToolSchema(parse=parse_input, json_schema=document)


def _same(value: Any) -> Any:
    return value


class SchemaBuilder:
    """Builds JSON Schema fragments and converters for type hints; shared ``$defs`` at the root."""

    def __init__(self, localns: Mapping[str, object] | None = None) -> None:
        self.defs: dict[str, JsonValue] = {}
        self._building: set[object] = set()
        self._localns = dict(localns) if localns is not None else None

    def hints(self, owner: object) -> dict[str, Any]:
        """Resolved type hints of a class or function (locals of the defining frame included)."""
        try:
            return typing.get_type_hints(owner, localns=self._localns, include_extras=True)
        except Exception as error:
            name = getattr(owner, "__qualname__", repr(owner))
            raise ToolDefinitionError(f"Cannot resolve the type hints of {name}: {error}") from None

    def finish(self, schema: JsonObject) -> JsonObject:
        """Attach collected ``$defs`` to the root schema."""
        if self.defs:
            schema = {**schema, "$defs": dict(self.defs)}
        return schema

    def build(self, hint: object) -> tuple[JsonObject, Converter]:
        """The JSON Schema fragment and the converter for ``hint``."""
        if hint in self._building:
            raise ToolDefinitionError(f"Recursive tool input types are not supported: {hint!r}.")
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
            return _literal(args)
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
        raise ToolDefinitionError(f"Unsupported tool input type: {hint!r}.")

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
            raise ToolInputInvalidError(problems)

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
            raise ToolDefinitionError("Tool input mappings must have str keys.")
        value_schema, value_convert = self.build(args[1] if len(args) == 2 else Any)
        schema: JsonObject = {"type": "object", "additionalProperties": value_schema}
        return schema, lambda value: {key: value_convert(item) for key, item in value.items()}

    def _class(self, cls: type[Any]) -> tuple[JsonObject, Converter]:
        if issubclass(cls, enum.Enum):
            return _enum(cls)
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
        raise ToolDefinitionError(f"Unsupported tool input type: {cls.__qualname__}.")

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


def _literal(args: tuple[object, ...]) -> tuple[JsonObject, Converter]:
    values: list[JsonValue] = []
    for arg in args:
        if arg is not None and not isinstance(arg, str | int | float | bool):
            raise ToolDefinitionError(f"Unsupported Literal value: {arg!r}.")
        values.append(arg)
    schema: JsonObject = {"enum": values}
    if all(isinstance(value, str) for value in values):
        schema["type"] = "string"

    def convert(value: Any) -> Any:
        if value not in values:
            raise ValueError(f"expected one of {values!r}")
        return value

    return schema, convert


def _enum(cls: type[enum.Enum]) -> tuple[JsonObject, Converter]:
    values: list[JsonValue] = []
    for member in cls:
        if not isinstance(member.value, str | int) or isinstance(member.value, bool):
            raise ToolDefinitionError(f"Enum {cls.__qualname__} must have str or int values.")
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
                raise ToolDefinitionError(f'Two pydantic models share the schema name "{name}".')
            builder.defs[name] = definition
    validate_model = cast(Converter, cls.model_validate)
    return schema, validate_model
