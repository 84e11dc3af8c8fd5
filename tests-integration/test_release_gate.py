"""ADR-001 release gate: every canonical type, every registered adapter, store and redactor.

Packages plug in through ``plugins/``; a package that is installed must have registered its
checks (so a gate can not pass by forgetting a plugin).
"""

from __future__ import annotations

import importlib.util
import json
from typing import Any, cast

import pytest
from harness import REGISTRY, load_plugins
from strategies import CANONICAL_TYPES, context_for, examples
from wire_shapes import WireKey, shape_problems

from actoviq.core import CanonicalItem, CapabilityError, item_to_json

load_plugins()
SECRET = "sk-test-CANARY-0123456789abcdefghij"
TYPES = sorted(CANONICAL_TYPES, key=lambda cls: cls.type)


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


@pytest.mark.parametrize(
    ("module", "table", "minimum"),
    [
        ("actoviq.providers.openai", "provider_mappers", 3),
        ("actoviq.storage.sqlite", "persistence", 1),
        ("actoviq.events", "redaction", 1),
        ("actoviq.surfaces", "redaction", 2),
    ],
)
def test_installed_packages_registered_their_gate_checks(
    module: str, table: str, minimum: int
) -> None:
    if not _installed(module):
        pytest.skip(f"{module} is not part of the workspace yet")
    assert len(getattr(REGISTRY, table)) >= minimum, f"{module} must register {table} checks"


def _contains(haystack: Any, needle: dict[str, Any]) -> bool:
    stack = [haystack]
    while stack:
        current = stack.pop()
        if current == needle:
            return True
        if isinstance(current, dict):
            stack.extend(current.values())  # pyright: ignore[reportUnknownArgumentType]
        elif isinstance(current, list):
            stack.extend(current)  # pyright: ignore[reportUnknownArgumentType]
    return False


def _params(table: dict[str, Any]) -> list[Any]:
    return [
        pytest.param(name, cls, id=f"{name}-{cls.type}") for name in sorted(table) for cls in TYPES
    ]


@pytest.mark.parametrize(("adapter", "item_type"), _params(REGISTRY.provider_mappers))
async def test_every_item_is_mapped_or_refused_by_every_adapter(
    adapter: str, item_type: type[Any]
) -> None:
    item: CanonicalItem = examples()[item_type]
    refused: CapabilityError | None = None
    body: Any = None
    try:
        body = await REGISTRY.provider_mappers[adapter](context_for(item))
    except CapabilityError as error:  # includes UnsupportedItemError
        refused = error
    shapes = REGISTRY.provider_shapes[adapter]
    if refused is not None:
        assert refused.code in {"CAPABILITY_ERROR", "UNSUPPORTED_ITEM"}
        assert item.type not in shapes, f"{adapter} refuses {item.type} but documents its shape"
        return
    json.dumps(body, allow_nan=False)
    assert not _contains(body, dict(item_to_json(item))), "canonical dict sent verbatim"
    assert item.type in shapes, f"{adapter} maps {item.type}: document where its fields go"
    assert shape_problems(body, item_to_json(item), shapes[item.type]) == []


def _rename(value: Any, key: str) -> Any:
    """``value`` with every dict key ``key`` renamed (as a mapper that misspells it would)."""
    if isinstance(value, dict):
        entries = cast(dict[str, Any], value).items()
        return {(f"{key}_renamed" if k == key else k): _rename(v, key) for k, v in entries}
    if isinstance(value, list):
        return [_rename(v, key) for v in cast(list[Any], value)]
    return value


@pytest.mark.parametrize("adapter", sorted(REGISTRY.provider_mappers))
async def test_a_renamed_key_fails_the_gate(adapter: str) -> None:
    """Mutation check: each documented key, renamed in the real body, is caught by the shape
    check, although the verbatim-copy check alone would still pass."""
    renamed = 0
    for item_type, shape in REGISTRY.provider_shapes[adapter].items():
        item = next(i for i in examples().values() if i.type == item_type)
        body = await REGISTRY.provider_mappers[adapter](context_for(item))
        item_json = item_to_json(item)
        assert shape_problems(body, item_json, shape) == []
        for key in {k.path.split(".")[-1] for k in shape.values() if isinstance(k, WireKey)}:
            if key.isdigit():
                continue
            mutated = _rename(body, key)
            assert not _contains(mutated, dict(item_json))
            assert shape_problems(mutated, item_json, shape), f"{adapter} {item_type}: {key}"
            renamed += 1
    assert renamed >= 15


@pytest.mark.parametrize(("store", "item_type"), _params(REGISTRY.persistence))
async def test_every_item_survives_every_store(store: str, item_type: type[Any]) -> None:
    transcript = context_for(examples({"tenant": "t1", "n": [1, None]})[item_type])
    assert list(await REGISTRY.persistence[store](transcript)) == transcript


@pytest.mark.parametrize(("path", "item_type"), _params(REGISTRY.redaction))
async def test_secrets_in_sensitive_keys_never_survive_redaction(
    path: str, item_type: type[Any]
) -> None:
    item = examples({"api_key": SECRET, "nested": {"Authorization": f"Bearer {SECRET}"}})[item_type]
    delivered = await REGISTRY.redaction[path](item, SECRET)
    text = json.dumps(delivered)
    assert SECRET not in text
    assert item.type in text  # the item itself was delivered, not dropped
