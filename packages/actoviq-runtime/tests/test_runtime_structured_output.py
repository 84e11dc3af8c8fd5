"""Typed, validated and retried structured output (issue 14 §2)."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal, NotRequired, TypedDict, assert_type

import attrs
import pytest
from runtime_testkit import scripted_runtime

from actoviq.core import (
    AgentSpec,
    AgentSpecError,
    JsonValue,
    OutputSchema,
    RunError,
    RunResult,
    TextItem,
)
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn


@attrs.frozen
class City:
    name: str
    population: int


@dataclasses.dataclass(frozen=True)
class Forecast:
    city: str
    sky: Literal["sunny", "cloudy"]
    high_c: float


class Answer(TypedDict):
    answer: int
    note: NotRequired[str]


def agent_for(output: Any, **options: Any) -> AgentSpec[Any, Any]:
    return AgentSpec(
        id="typed",
        name="Typed",
        instructions="Answer.",
        model="scripted:m",
        output=output,
        **options,
    )


async def test_attrs_output_is_typed_validated_and_parsed() -> None:
    provider = ScriptedProvider([ScriptedTurn(structured_output={"name": "Oslo", "population": 7})])
    agent = AgentSpec(id="city", name="City", instructions="x", model="scripted:m", output=City)
    assert_type(agent, AgentSpec[Any, City])
    async with scripted_runtime(provider) as runtime:
        result = await runtime.run(agent, "Which city?")
    assert_type(result, RunResult[City])
    assert result.output == City(name="Oslo", population=7)
    schema = provider.requests[0].output_schema
    assert schema is not None
    assert schema.name == "City"
    assert schema.strict is True  # every property required, nothing else allowed
    assert schema.schema["required"] == ["name", "population"]


async def test_text_agent_is_typed_str_and_schema_dict_is_any() -> None:
    text_agent = AgentSpec(id="t", name="T", instructions="x", model="scripted:m")
    assert_type(text_agent, AgentSpec[Any, str])
    schema_agent = AgentSpec(
        id="s",
        name="S",
        instructions="x",
        model="scripted:m",
        output={"title": "Pair", "type": "array", "items": {"type": "integer"}},
    )
    assert_type(schema_agent, AgentSpec[Any, Any])
    provider = ScriptedProvider(["hello", ScriptedTurn(structured_output=[1, 2])])
    async with scripted_runtime(provider) as runtime:
        text = await runtime.run(text_agent, "hi")
        pair = await runtime.run(schema_agent, "hi")
    assert_type(text.output, str)
    assert text.output == "hello"
    assert pair.output == [1, 2]
    assert provider.requests[1].output_schema is not None
    assert provider.requests[1].output_schema.name == "Pair"


@pytest.mark.parametrize(
    ("output_type", "value", "expected"),
    [
        (Forecast, {"city": "Rome", "sky": "sunny", "high_c": 31}, Forecast("Rome", "sunny", 31.0)),
        (Answer, {"answer": 42}, {"answer": 42}),
        (
            list[City],
            {"response": [{"name": "A", "population": 1}]},
            [City(name="A", population=1)],
        ),
        (int, {"response": 3}, 3),
    ],
)
async def test_dataclass_typeddict_and_wrapped_outputs(
    output_type: Any, value: JsonValue, expected: object
) -> None:
    provider = ScriptedProvider([ScriptedTurn(structured_output=value)])
    async with scripted_runtime(provider) as runtime:
        result = await runtime.run(agent_for(output_type), "q")
    assert result.output == expected
    schema = provider.requests[0].output_schema
    assert schema is not None
    assert schema.schema["type"] == "object"  # providers want an object at the top


async def test_pydantic_model_output() -> None:
    pydantic = pytest.importorskip("pydantic")

    class Person(pydantic.BaseModel):
        name: str
        age: int

    provider = ScriptedProvider(
        [
            ScriptedTurn(structured_output={"name": "Ada", "age": "old"}),
            ScriptedTurn(structured_output={"name": "Ada", "age": 36}),
        ]
    )
    async with scripted_runtime(provider) as runtime:
        result = await runtime.run(agent_for(Person), "who?")
    assert result.output.name == "Ada"
    assert result.output.age == 36
    assert len(provider.requests) == 2


async def test_invalid_output_is_sent_back_with_the_errors_then_accepted() -> None:
    secret = "sk-live-0123456789abcdef"
    provider = ScriptedProvider(
        [
            ScriptedTurn(structured_output={"name": secret, "population": "many"}),
            ScriptedTurn(structured_output={"name": "Oslo", "population": 700000}),
        ]
    )
    async with scripted_runtime(provider) as runtime:
        result = await runtime.run(agent_for(City), "q")
    assert result.status == "completed"
    assert result.output == City(name="Oslo", population=700000)
    assert result.usage.requests == 2  # the retry is a model call like any other
    retry = provider.requests[1].input[-1]
    assert isinstance(retry, TextItem)
    assert retry.role == "user"
    assert "population" in retry.text
    assert "integer" in retry.text
    assert '"City"' in retry.text
    assert "many" not in retry.text  # paths and messages, never the values
    assert secret not in retry.text
    assert retry in result.items  # the correction is part of the run's history


async def test_retries_are_bounded_then_structured_output_invalid() -> None:
    bad = ScriptedTurn(structured_output={"name": "Oslo"})
    provider = ScriptedProvider([bad, bad, bad, "never asked"])
    async with scripted_runtime(provider) as runtime:
        with pytest.raises(RunError) as caught:
            await runtime.run(agent_for(City, output_retries=2), "q")
    error = caught.value
    assert error.code == "STRUCTURED_OUTPUT_INVALID"
    assert error.phase == "finalize_output"
    assert not isinstance(error, ValueError)  # not a ToolInputInvalidError
    details: dict[str, Any] = dict(error.details or {})
    assert details["retries"] == 2
    assert any("population" in message for message in details["errors"])
    assert len(provider.requests) == 3


async def test_a_schema_without_parse_still_validates() -> None:
    schema = OutputSchema[Any](
        name="pair", schema={"type": "object", "required": ["a"], "properties": {"a": {}}}
    )
    provider = ScriptedProvider([ScriptedTurn(structured_output={"b": 1})])
    async with scripted_runtime(provider) as runtime:
        with pytest.raises(RunError) as caught:
            await runtime.run(agent_for(schema, output_retries=0), "q")
    assert caught.value.code == "STRUCTURED_OUTPUT_INVALID"


async def test_missing_output_is_retried_then_missing() -> None:
    provider = ScriptedProvider(["not json", ScriptedTurn(structured_output={"answer": 1})])
    async with scripted_runtime(provider) as runtime:
        result = await runtime.run(agent_for(Answer), "q")
    assert result.output == {"answer": 1}
    again = ScriptedProvider(["not json", "still not"])
    async with scripted_runtime(again) as runtime:
        with pytest.raises(RunError) as caught:
            await runtime.run(agent_for(Answer), "q")
    assert caught.value.code == "STRUCTURED_OUTPUT_MISSING"


async def test_parse_failure_is_retried() -> None:
    @attrs.frozen
    class Positive:
        value: int = attrs.field(validator=attrs.validators.gt(0))

    provider = ScriptedProvider(
        [
            ScriptedTurn(structured_output={"value": -1}),
            ScriptedTurn(structured_output={"value": 2}),
        ]
    )
    async with scripted_runtime(provider) as runtime:
        result = await runtime.run(agent_for(Positive), "q")
    assert result.output == Positive(value=2)
    retry = provider.requests[1].input[-1]
    assert isinstance(retry, TextItem)
    assert "ValueError" in retry.text


async def test_retries_count_against_max_turns() -> None:
    from actoviq.core import RunLimitsPatch

    bad = ScriptedTurn(structured_output={"name": "x"})
    provider = ScriptedProvider([bad, bad, bad])
    async with scripted_runtime(provider) as runtime:
        with pytest.raises(RunError) as caught:
            await runtime.run(
                agent_for(City, output_retries=5, limits=RunLimitsPatch(max_turns=2)), "q"
            )
    assert caught.value.code == "STRUCTURED_OUTPUT_INVALID"
    assert len(provider.requests) == 2


def test_bad_output_declarations_are_agent_spec_errors() -> None:
    with pytest.raises(AgentSpecError, match="output"):
        agent_for(object())
    with pytest.raises(AgentSpecError, match="output type"):
        agent_for(complex)
    with pytest.raises(AgentSpecError, match="output_retries"):
        agent_for(City, output_retries=-1)


async def test_an_invalid_json_schema_fails_at_registration() -> None:
    provider = ScriptedProvider(["x"])
    async with scripted_runtime(provider) as runtime:
        with pytest.raises(AgentSpecError, match="not a valid JSON Schema"):
            await runtime.run(agent_for({"type": "nonsense"}), "q")
    assert provider.requests == []


def test_same_output_type_gives_equal_specs() -> None:
    assert agent_for(City) == agent_for(City)
    assert agent_for(City).digest() == agent_for(City).digest()
