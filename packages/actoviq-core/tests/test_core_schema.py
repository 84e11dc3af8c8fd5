from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from actoviq.core import ITEM_TYPES, items_json_schema

Golden = Callable[[str], Any]


def _validator() -> Any:
    schema: Any = items_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


PUBLISHED = Path(__file__).resolve().parents[3] / "docs" / "schemas" / "items.schema.json"


def test_schema_covers_every_item_type() -> None:
    schema: Any = items_json_schema()
    assert _validator() is not None
    assert set(schema["$defs"]) - {"source"} == set(ITEM_TYPES)


def test_golden_items_validate_against_the_schema(golden: Golden) -> None:
    validator = _validator()
    for vector in golden("items.json")["valid"]:
        errors: list[Any] = list(validator.iter_errors(vector["value"]))
        assert not errors, (vector["name"], [e.message for e in errors])


@pytest.mark.parametrize(
    "bad",
    [
        {"type": "text", "role": "robot", "text": "x"},
        {"type": "text", "role": "user"},
        {"type": "tool_call", "id": "c", "name": "n", "input": []},
        {"type": "image", "source": {"kind": "url"}},
        {"type": "structured", "role": "user", "value": 1},
        {"type": "video"},
        {"type": "text", "role": "user", "text": "x", "extra": True},
    ],
)
def test_invalid_items_fail_the_schema(bad: dict[str, Any]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        _validator().validate(bad)


def test_published_schema_is_current() -> None:
    expected = json.dumps(items_json_schema(), indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    assert PUBLISHED.read_text("utf-8") == expected, "run `make docs`"
