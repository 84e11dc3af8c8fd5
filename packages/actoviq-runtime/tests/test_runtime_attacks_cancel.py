"""A ``CancelledError`` nobody asked for, through the public API (issue 11 §2: a run ends typed).

Bug found by the adversarial review of resolved promises: a provider (or any code inside the run)
raising ``asyncio.CancelledError`` itself, while nobody cancelled the run, made a streamed run's
``handle.result()`` raise a bare ``CancelledError`` with no terminal event; ``run()`` already
ended it ``cancelled`` with ``run.cancelled``. Both now end the same way.
"""

from __future__ import annotations

import asyncio

import pytest

from actoviq.core import AgentSpec
from actoviq.events import InMemoryEventSink
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import AgentRuntime

AGENT = AgentSpec(id="a", name="A", instructions="Answer.", model="scripted:m")


@pytest.mark.parametrize("streaming", [False, True], ids=["run", "stream"])
async def test_a_provider_raising_cancelled_error_ends_the_run_cancelled(streaming: bool) -> None:
    sink = InMemoryEventSink()
    model = ScriptedProvider([ScriptedTurn(error=asyncio.CancelledError())])
    async with AgentRuntime(models=ModelRegistry([model]), event_sinks=[sink]) as runtime:
        if streaming:
            handle = runtime.stream(AGENT, "hi")
            types = [event.type async for event in handle]
            result = await handle.result()
            assert types[-1] == "run.cancelled"
        else:
            result = await runtime.run(AGENT, "hi")
    assert result.status == "cancelled"
    assert [event.type for event in sink.events][-1] == "run.cancelled"
