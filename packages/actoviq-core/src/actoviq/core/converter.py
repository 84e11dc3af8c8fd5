"""One converter for every wire value (decision D2).

A single :class:`cattrs.Converter` holds the hooks for every attrs class that crosses a process
boundary. Attributes are snake_case in Python and camelCase on the wire; a field whose value is
``None`` with a ``None`` default, or :data:`~actoviq.core.UNSET`, is *absent* from the JSON, while a
``None`` in a field without such default (tool output, structured value, reasoning opaque) is a real
JSON ``null``.

Higher packages register their own classes with :func:`register_wire_class`, so events, run states
and store records all serialise through the same rules.

Example:
    >>> from actoviq.core import TextItem
    >>> to_json(TextItem(role="user", text="hi"))
    {'type': 'text', 'role': 'user', 'text': 'hi'}
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, TypeVar, cast, get_origin

import attrs
import cattrs

from actoviq.core._fast_items import FAST_DECODERS, fast_item, fast_items
from actoviq.core._unset import UNSET
from actoviq.core._validate import camel
from actoviq.core.errors import (
    ActoviqError,
    ItemValidationError,
    JsonValueError,
    UnknownItemTypeError,
)
from actoviq.core.items import (
    ITEM_TYPES,
    Base64Source,
    CanonicalItem,
    FileSource,
    PreservedItem,
    UrlSource,
)
from actoviq.core.json import (
    MAX_WIRE_DEPTH,
    JsonObject,
    JsonValue,
    dumps_compact,
    loads_strict,
)
from actoviq.core.usage import Usage, normalize_usage_delta

__all__ = [
    "converter",
    "dumps",
    "from_json",
    "item_from_json",
    "item_to_json",
    "items_from_json",
    "items_to_json",
    "loads",
    "register_wire_class",
    "source_from_json",
    "to_json",
]

_T = TypeVar("_T")
Decoder = Callable[[Any], Any]

converter = cattrs.Converter(detailed_validation=False)
"""The one converter. Prefer :func:`to_json` / :func:`from_json`."""

_SOURCES: dict[str, type[UrlSource | Base64Source | FileSource]] = {
    "url": UrlSource,
    "base64": Base64Source,
    "file": FileSource,
}


_PLAIN: Final = frozenset({str, int, float, bool, type(None)})
_NESTED: Final = frozenset({dict, list, tuple})


def _encode(value: Any) -> Any:
    """Unstructure any value by its runtime type (attrs instances through their hooks).

    Dicts, lists and tuples are copied with an explicit stack (never Python recursion), at most
    :data:`~actoviq.core.json.MAX_WIRE_DEPTH` levels deep, so a deep or cyclic value ends in
    :class:`JsonValueError`, never ``RecursionError`` or an endless loop.
    """
    kind: type[Any] = type(cast(object, value))
    if kind in _PLAIN:
        return value
    if kind not in _NESTED:
        return converter.unstructure(value)
    plain = _PLAIN
    nested = _NESTED
    unstructure = converter.unstructure
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any, int]] = [(value, root, 0, 1)]
    pop = stack.pop
    push = stack.append
    while stack:
        source, target, slot, depth = pop()
        if depth > MAX_WIRE_DEPTH:
            raise JsonValueError(
                "value",
                "$",
                expected=f"a JSON value nested at most {MAX_WIRE_DEPTH} levels deep",
                reason="too-deep",
            )
        deeper = depth + 1
        if type(source) is dict:
            mapping: dict[str, Any] = {}
            for key, child in cast(dict[str, object], source).items():
                child_kind = type(child)
                if child_kind in plain:
                    mapping[key] = child
                elif child_kind in nested:
                    mapping[key] = None
                    push((child, mapping, key, deeper))
                else:
                    mapping[key] = unstructure(child)
            target[slot] = mapping
        else:
            copy: list[object] = list(cast(list[object], source))
            for index, child in enumerate(copy):
                child_kind = type(child)
                if child_kind in plain:
                    continue
                if child_kind in nested:
                    push((child, copy, index, deeper))
                else:
                    copy[index] = unstructure(child)
            target[slot] = copy
    return root[0]


def register_wire_class(
    cls: type[Any],
    *,
    type_tag: tuple[str, str] | None = None,
    decoders: Mapping[str, Decoder] | None = None,
    rename: Mapping[str, str] | None = None,
) -> None:
    """Register an attrs class with the converter.

    Args:
        cls: the frozen attrs class.
        type_tag: ``(key, value)`` written first and required on load (e.g. ``("type", "text")``).
        decoders: per-attribute functions that turn the wire value into the attribute value
            (nested classes, tuples). Attributes without one are passed through and checked by
            the class's own validators.
        rename: explicit wire keys for attributes whose camelCase name is not the wire key.
    """
    fields = attrs.fields(cls)
    names = rename or {}
    plan: list[tuple[str, str, bool, bool]] = []  # (attr, wire, omit_none, omit_unset)
    for field in fields:
        if not field.init:
            continue
        wire = names.get(field.name, camel(field.name))
        plan.append((field.name, wire, field.default is None, field.default is UNSET))
    tag_key, tag_value = type_tag if type_tag else (None, None)
    owner = tag_value if tag_value is not None else cls.__name__

    def unstructure(instance: Any) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if tag_key is not None:
            data[tag_key] = tag_value
        for attr, wire, omit_none, _omit_unset in plan:
            value = getattr(instance, attr)
            if value is UNSET or (omit_none and value is None):
                continue
            data[wire] = _encode(value)
        return data

    decode = dict(decoders or {})
    wire_to_attr = {wire: attr for attr, wire, _, _ in plan}
    required = [
        wire
        for (_, wire, _, _), field in zip(plan, [f for f in fields if f.init], strict=True)
        if field.default is attrs.NOTHING
    ]
    allowed = set(wire_to_attr)
    if tag_key is not None:
        allowed.add(tag_key)

    def structure(data: Any, _: Any = None) -> Any:
        if type(data) is not dict:
            raise ItemValidationError(
                f"{owner} must be a JSON object, got {type(data).__name__}.", item_type=owner
            )
        mapping = cast(dict[str, Any], data)
        for wire in required:
            if wire not in mapping:
                raise ItemValidationError(
                    f"{owner}.{wire} is required.", field=wire, item_type=owner
                )
        kwargs: dict[str, Any] = {}
        for key, value in mapping.items():
            attr = wire_to_attr.get(key)
            if attr is None:
                if key in allowed:
                    continue
                raise ItemValidationError(
                    f"{owner} has an unknown field {key!r}.", field=key, item_type=owner
                )
            fn = decode.get(attr)
            kwargs[attr] = fn(value) if fn is not None else value
        return cls(**kwargs)

    # The *_func forms match by identity (a parametrised generic by its origin) and skip
    # cattrs' type-hint resolution.
    def matches(candidate: Any) -> bool:
        return candidate is cls or get_origin(candidate) is cls

    converter.register_unstructure_hook_func(matches, unstructure)
    converter.register_structure_hook_func(matches, structure)


def source_from_json(data: Any) -> UrlSource | Base64Source | FileSource:
    """Structure an image/audio/document source from its ``kind``-tagged mapping."""
    if type(data) is not dict:
        raise ItemValidationError(
            f"source must be a JSON object, got {type(data).__name__}.", field="source"
        )
    kind = cast(dict[str, Any], data).get("kind")
    cls = _SOURCES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ItemValidationError(
            f"source.kind must be one of 'url' | 'base64' | 'file', got {kind!r}.",
            field="source.kind",
        )
    source: UrlSource | Base64Source | FileSource = converter.structure(data, cls)
    return source


for _kind, _source_cls in _SOURCES.items():
    register_wire_class(_source_cls, type_tag=("kind", _kind))

for _type, _item_cls in ITEM_TYPES.items():
    _decoders: dict[str, Decoder] = {}
    if _type in ("image", "audio", "document"):
        _decoders["source"] = source_from_json
    register_wire_class(_item_cls, type_tag=("type", _type), decoders=_decoders)

converter.register_unstructure_hook(PreservedItem, lambda item: dict(item.data))
converter.register_unstructure_hook(Usage, lambda usage: usage.to_json())
converter.register_structure_hook(Usage, lambda data, _: normalize_usage_delta(data))


def item_to_json(item: CanonicalItem | PreservedItem) -> JsonObject:
    """Unstructure one canonical item to its wire mapping."""
    return cast(JsonObject, converter.unstructure(item))


def item_from_json(data: Any, *, preserve_unknown: bool = False) -> CanonicalItem:
    """Structure one canonical item from its wire mapping.

    Raises:
        UnknownItemTypeError: ``type`` is not one of the 14 (unless ``preserve_unknown``, which
            returns a :class:`PreservedItem` instead: typed as CanonicalItem for callers' sake).
        ItemValidationError: a field is missing, unknown or of the wrong type.
    """
    if type(data) is not dict:
        raise ItemValidationError(
            f"A canonical item must be a JSON object, got {type(data).__name__}.", field="$"
        )
    mapping = cast(dict[str, Any], data)
    fast = fast_item(mapping)
    if fast is not None:
        return fast
    item_type = mapping.get("type")
    cls = ITEM_TYPES.get(item_type) if isinstance(item_type, str) else None
    if cls is None:
        if preserve_unknown:
            return cast(CanonicalItem, PreservedItem(data=mapping))
        raise UnknownItemTypeError(item_type, mapping)
    item: CanonicalItem = converter.structure(mapping, cls)
    return item


def items_to_json(items: Iterable[CanonicalItem]) -> list[JsonObject]:
    """Unstructure a transcript."""
    return [item_to_json(item) for item in items]


def items_from_json(data: Iterable[Any], *, preserve_unknown: bool = False) -> list[CanonicalItem]:
    """Structure a transcript; see :func:`item_from_json` (the same result, item by item)."""
    if type(data) is list or type(data) is tuple:
        bulk = fast_items(cast(Sequence[object], data))
        if bulk is not None:
            return bulk
    items: list[CanonicalItem] = []
    append = items.append
    decoders = FAST_DECODERS
    for entry in cast(Iterable[object], data):
        if type(entry) is dict:
            kind = cast(dict[str, Any], entry).get("type")
            decoder = decoders.get(kind) if type(kind) is str else None
            if decoder is not None:
                item = decoder(cast(dict[str, Any], entry))
                if item is not None:
                    append(item)
                    continue
        append(item_from_json(entry, preserve_unknown=preserve_unknown))
    return items


converter.register_structure_hook_func(
    lambda cls: cls == CanonicalItem, lambda data, _: item_from_json(data)
)


def to_json(value: Any) -> Any:
    """Unstructure any registered value (or JSON value) to plain JSON data."""
    return _encode(value)


_STRUCTURE_FAILURES: Final = (
    NameError,
    TypeError,
    ValueError,
    KeyError,
    AttributeError,
    RecursionError,
    cattrs.BaseValidationError,
)


def from_json(cls: type[_T], data: Any) -> _T:
    """Structure ``data`` into ``cls`` with the registered hooks.

    The canonical types raise their own typed errors (``ItemValidationError``,
    ``UsageValueError``, ``AgentSpecError``...). Anything else that cannot be structured fails
    typed too, never with the converter's bare exception: a field of the wrong type, a class
    whose annotations cannot be resolved from JSON alone, or data that is not a JSON object for
    an attrs class (the converter would give that class its defaults).

    Raises:
        JsonValueError: ``data`` cannot be structured into ``cls`` (the message names ``cls``
            and the kind of failure, never the value).
    """
    try:
        value = converter.structure(data, cls)
    except ActoviqError:
        raise
    except _STRUCTURE_FAILURES as error:
        label = _label(cls)
        raise JsonValueError(
            f"{label} data", expected=f"structurable as {label} ({type(error).__name__})"
        ) from None
    if not isinstance(data, Mapping):
        target = get_origin(cls) or cls
        if isinstance(target, type) and attrs.has(target):
            # cattrs builds an attrs class from anything its field lookups accept (a string
            # gives every default): refuse it rather than return defaults the data never held.
            raise JsonValueError(f"{_label(cls)} data", expected="a JSON object")
    return value


def _label(cls: object) -> str:
    return getattr(cls, "__name__", None) or repr(cls)


def dumps(value: Any) -> str:
    """Unstructure and serialise compactly (key order kept; strict JSON, see ``actoviq.core.json``).

    The value is a document (an item, an event, a state): it may nest up to
    :data:`~actoviq.core.json.MAX_WIRE_DEPTH` levels, room for values at the value limit inside.

    Raises:
        JsonValueError: the unstructured value is not strict JSON.
    """
    return dumps_compact(cast(JsonValue, to_json(value)), max_depth=MAX_WIRE_DEPTH)


def loads(cls: type[_T], text: str | bytes) -> _T:
    """Parse strict JSON text (a document, up to ``MAX_WIRE_DEPTH`` deep) into ``cls``.

    Raises:
        JsonValueError: the text is JSON but not strict JSON.
        json.JSONDecodeError: the text is not JSON.
    """
    return from_json(cls, loads_strict(text, max_depth=MAX_WIRE_DEPTH))
