"""Adversarial probes of the runtime's public constructors (review): each failed before its fix."""

from __future__ import annotations

from typing import Any

import pytest

from actoviq.core import AgentSpec
from actoviq.events import RedactionPolicy
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider
from actoviq.runtime import (
    AgentRuntime,
    AgentSpecTypeError,
    RuleToolPolicy,
    RuntimeConfigurationError,
    RuntimeServices,
    ToolDefinitionError,
    json_schema_input,
    tool,
)


def _models() -> ModelRegistry:
    return ModelRegistry([ScriptedProvider(["hi"])])


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("redaction", "scan"),  # before: AttributeError ('str' has no 'default_keys')
        ("redaction", {"scan_text": True}),
        ("tool_policy", 1),  # before: accepted, and never asked: every tool ran unchecked
        ("tool_policy", RuleToolPolicy),  # the class, not an instance
        ("tool_policy", print),
        ("services", 1),  # before: AttributeError on close()
        ("services", RuntimeServices),
    ],
)
def test_a_misplaced_runtime_object_is_a_typed_configuration_error(
    option: str, value: object
) -> None:
    options: dict[str, Any] = {option: value}
    with pytest.raises(RuntimeConfigurationError) as caught:
        AgentRuntime(models=_models(), **options)
    assert caught.value.code == "RUNTIME_CONFIGURATION_INVALID"
    assert option in caught.value.message


async def test_the_right_objects_are_still_accepted() -> None:
    policy = RuleToolPolicy(allow=["*"])
    async with AgentRuntime(
        models=_models(),
        redaction=RedactionPolicy(scan_text=True),
        tool_policy=policy,
        services=RuntimeServices(),
    ) as runtime:
        assert runtime.tool_policy is policy


@pytest.mark.parametrize("agent", [None, "a", {"id": "a"}, AgentSpec])
async def test_running_something_that_is_not_an_agent_spec_is_typed(agent: Any) -> None:
    async with AgentRuntime(models=_models()) as runtime:
        with pytest.raises(AgentSpecTypeError) as caught:
            await runtime.run(agent, "hi")
        with pytest.raises(TypeError):  # still a TypeError for callers that caught that
            runtime.register_agent(agent)
    assert caught.value.code == "AGENT_SPEC_EXPECTED"


@pytest.mark.parametrize("schema", [None, "object", ["type"], 5])
def test_a_tool_schema_that_is_not_a_mapping_is_a_definition_error(schema: Any) -> None:
    # Before: TypeError ('NoneType' object is not iterable) from dict(schema).
    with pytest.raises(ToolDefinitionError):
        json_schema_input(schema)


@pytest.mark.parametrize("target", [int, dict, bytes])
def test_tool_on_a_callable_without_a_signature_is_a_definition_error(target: Any) -> None:
    # Before: inspect.signature's bare ValueError escaped @tool.
    with pytest.raises(ToolDefinitionError):
        tool(target)
