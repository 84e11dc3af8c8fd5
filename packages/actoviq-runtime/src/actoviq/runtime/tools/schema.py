"""Tool input schemas: JSON Schema validation (``jsonschema``) and schemas derived from type hints.

``json_schema_input`` compiles one validator per schema, once. ``schema_from_type`` derives a
JSON Schema *and* a parser from a type hint with core's :class:`~actoviq.core.SchemaBuilder`
(primitives, ``Optional``/unions, ``Literal``, lists, tuples, ``dict[str, X]``, ``TypedDict``,
attrs classes, dataclasses, enums and, when installed, pydantic models). The parser first
validates with the compiled JSON Schema, then builds the typed value.

Example:
    >>> schema = json_schema_input({"type": "object", "required": ["q"]})
    >>> schema.parse({"q": 1})
    {'q': 1}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, cast

from actoviq.core import JsonObject, SchemaBuilder, SchemaValueError, clone_json_value
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


ToolInputInvalidError = SchemaValueError
"""A value does not match a tool schema; ``errors`` lists ``"<path>: <message>"`` strings (the
:class:`~actoviq.core.SchemaValueError` of core, which derives the schemas)."""


def compile_json_schema(schema: Mapping[str, object]) -> Callable[[object], None]:
    """Check ``schema`` (Draft 2020-12) once and return a validating function.

    Raises:
        ToolDefinitionError: the schema itself is invalid.
    """
    # Imported here: jsonschema costs ~60 ms to import and `import actoviq.runtime` stays fast.
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError
    from referencing import Registry

    if not isinstance(schema, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ToolDefinitionError(f"A tool JSON Schema must be a mapping, got {schema!r:.80}.")
    document = cast(JsonObject, clone_json_value(dict(schema), "Tool JSON Schema"))
    try:
        Draft202012Validator.check_schema(document)
    except SchemaError as error:
        raise ToolDefinitionError(f"Invalid tool JSON Schema: {error.message}") from None
    _check_references(document)
    # An empty registry: a reference outside the document is unresolvable. Without it jsonschema
    # falls back to fetching unknown references with urllib, so a schema from an MCP server (or
    # any untrusted source) could make the host connect anywhere (SSRF) or read file: URLs,
    # blocking the event loop meanwhile ("$dynamicRef" is not covered by _check_references).
    validator: Validator = Draft202012Validator(document, registry=Registry())
    fast = _fast_object_check(document)

    def validate(value: object) -> None:
        if fast is not None and fast(value):
            return  # certainly valid: skip the (slow) general validator
        found: list[ValidationError] = list(validator.iter_errors(cast(Any, value)))  # pyright: ignore[reportUnknownMemberType]
        errors = sorted(found, key=_error_key)
        if errors:
            raise ToolInputInvalidError([_describe(error) for error in errors[:5]])

    return validate


_DATA_KEYWORDS: Final = frozenset({"const", "enum", "default", "examples"})
"""Keywords whose values are JSON data, not subschemas (a ``"$ref"`` key there is data)."""


def _check_references(document: JsonObject) -> None:
    """Refuse a schema with a ``$ref`` that does not resolve within it.

    The validator would otherwise fail on the first value it checks, and every model call
    would be blamed for the schema's mistake. Nothing is fetched: a reference outside the
    document (a URL) never resolves, here or when validating.
    """
    from referencing import Registry
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import DRAFT202012

    def walk(node: object, resolver: Any) -> None:
        if isinstance(node, dict):
            subschema = cast(dict[str, object], node)
            if node is not document and isinstance(subschema.get("$id"), str):
                resolver = resolver.in_subresource(DRAFT202012.create_resource(subschema))
            reference = subschema.get("$ref")
            if isinstance(reference, str):
                try:
                    resolver.lookup(reference)
                except Unresolvable:
                    raise ToolDefinitionError(
                        f"Invalid tool JSON Schema: $ref {reference!r} does not resolve within "
                        "the schema (references are never fetched)."
                    ) from None
            for key, value in subschema.items():
                if key not in _DATA_KEYWORDS:
                    walk(value, resolver)
        elif isinstance(node, list):
            for value in cast(list[object], node):
                walk(value, resolver)

    registry: Registry[Any] = Registry()
    walk(document, registry.resolver_with_root(DRAFT202012.create_resource(document)))


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
    """``"<path>: <message>"`` without the offending value (named by its type only).

    The message reaches events and the model, and the value may be a secret in the wrong field.
    """
    path = "$" + "".join(f"[{part!r}]" for part in error.absolute_path)
    message = error.message
    instance: object = error.instance
    if not isinstance(instance, bool | type(None)):
        shown = repr(instance)
        if shown in message:
            message = message.replace(shown, f"<{type(instance).__name__}>")
    return f"{path}: {message}"


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
    builder = SchemaBuilder(localns, error=ToolDefinitionError)
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
