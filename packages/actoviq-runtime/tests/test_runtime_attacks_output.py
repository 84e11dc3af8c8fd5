"""Structured output attacked by the model (issue 14 §2), through the public API.

Bug found by the adversarial review of resolved promises: a model answer nested deeper than the
JSON parser's stack (``[[[[...]]]]`` a few thousand levels) made the provider's structured-output
parse raise a bare ``RecursionError``, so the run failed ``RUN_FAILED`` at once: no retry, and
not the documented ``STRUCTURED_OUTPUT_*`` code.
"""

from __future__ import annotations

import attrs
import pytest

from actoviq.core import AgentSpec, RunError, RunResult
from actoviq.events import InMemoryEventSink
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import AgentRuntime


@attrs.frozen
class City:
    """The answer's shape."""

    city: str
    temp: float


DEEP = "[" * 5_000 + "]" * 5_000
DEEP_FIELD = '{"city": "Paris", "temp": 1, "more": ' + DEEP + "}"
# Past the depth limit (512) but within every Python's parser stack: the same verdict as DEEP,
# which Python 3.13 parses while 3.11 and 3.12 give up (so the rule cannot be the parser's).
PAST_LIMIT = '{"city": "Paris", "temp": 1, "more": ' + "[" * 600 + "]" * 600 + "}"


async def _run(*answers: str) -> tuple[RunResult[City], InMemoryEventSink]:
    agent = AgentSpec(id="a", name="A", instructions="Answer.", model="scripted:m", output=City)
    sink = InMemoryEventSink()
    model = ScriptedProvider([ScriptedTurn(text=text) for text in answers])
    async with AgentRuntime(models=ModelRegistry([model]), event_sinks=[sink]) as runtime:
        return await runtime.run(agent, "Weather?"), sink


@pytest.mark.parametrize(
    "answer", [DEEP, DEEP_FIELD, PAST_LIMIT], ids=["deep-root", "deep-field", "past-limit"]
)
async def test_a_too_deep_answer_is_retried_then_fails_typed(answer: str) -> None:
    with pytest.raises(RunError) as caught:
        await _run(answer, answer)
    assert caught.value.code == "STRUCTURED_OUTPUT_MISSING"


async def test_a_too_deep_answer_then_a_good_one_completes() -> None:
    result, sink = await _run(DEEP_FIELD, '{"city": "Paris", "temp": 18.5}')
    assert result.output == City(city="Paris", temp=18.5)
    assert [event.type for event in sink.events][-1] == "run.completed"
