"""A ``$ref`` that resolves nowhere is refused when the schema is defined, not at each call.

Before: ``check_schema`` passed such a schema, and the validator raised a referencing error on
the first value it checked. A tool then answered every call with a validation error blaming the
model's input; a structured output was retried until the attempts ran out. Nothing is fetched:
a URL reference never resolves.
"""

from __future__ import annotations

from typing import Any

import pytest

from actoviq.core import AgentSpec, AgentSpecError, OutputSchema
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider
from actoviq.runtime import AgentRuntime, ToolDefinitionError, compile_json_schema

GOOD: dict[str, dict[str, Any]] = {
    "local $defs": {
        "$defs": {"A": {"type": "integer"}},
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/A"}},
    },
    "nested $id": {
        "$defs": {
            "x": {
                "$id": "https://example.org/x",
                "$defs": {"y": {"type": "string"}},
                "$ref": "#/$defs/y",
            }
        },
        "$ref": "https://example.org/x",
    },
    "anchor": {"$defs": {"a": {"$anchor": "name", "type": "string"}}, "$ref": "#name"},
    "recursive root": {"type": "object", "properties": {"next": {"$ref": "#"}}},
    "a $ref key inside data": {"enum": [{"$ref": "#/nowhere"}], "default": {"$ref": "x"}},
}
BAD: dict[str, dict[str, Any]] = {
    "missing pointer": {"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}}},
    "remote URL": {"$ref": "https://example.com/schema.json"},
    "missing anchor": {"$ref": "#nowhere"},
    "deep in items": {"type": "array", "items": {"anyOf": [{"$ref": "#/$defs/Gone"}]}},
}


@pytest.mark.parametrize("name", sorted(GOOD))
def test_resolvable_references_compile_and_validate(name: str) -> None:
    validate = compile_json_schema(GOOD[name])
    assert validate is not None


def test_a_nested_id_reference_still_validates_values() -> None:
    validate = compile_json_schema(GOOD["nested $id"])
    validate("text")
    with pytest.raises(Exception, match="string"):
        validate(1)


@pytest.mark.parametrize("name", sorted(BAD))
def test_unresolvable_references_are_refused_at_definition(name: str) -> None:
    with pytest.raises(ToolDefinitionError) as caught:
        compile_json_schema(BAD[name])
    assert "does not resolve" in caught.value.message


async def test_an_output_schema_with_a_dangling_reference_fails_before_any_model_call() -> None:
    provider = ScriptedProvider(['{"a": 1}'], id="s")
    agent = AgentSpec(
        id="typed",
        name="Typed",
        instructions="x",
        model="s:m",
        output=OutputSchema.from_json_schema(BAD["missing pointer"]),
    )
    async with AgentRuntime(models=ModelRegistry([provider])) as runtime:
        with pytest.raises(AgentSpecError) as caught:
            await runtime.run(agent, "go")
    assert caught.value.code == "AGENT_SPEC_INVALID"
    assert "$defs/Missing" in caught.value.message
    assert provider.calls == []
