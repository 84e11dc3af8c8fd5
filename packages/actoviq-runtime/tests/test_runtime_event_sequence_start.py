"""A retried attempt of a run id continues the run's event sequence (``event_sequence_start``)."""

from __future__ import annotations

from typing import Any, cast

import pytest
from runtime_testkit import make_agent, scripted_runtime

from actoviq.core import RunError
from actoviq.events import InMemoryEventSink
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn


async def test_a_failed_run_reports_its_last_sequence_and_a_retry_continues_after_it() -> None:
    sink = InMemoryEventSink()
    provider = ScriptedProvider(turns=[ScriptedTurn(error=ValueError("down")), "up"])
    async with scripted_runtime(provider, event_sinks=[sink]) as runtime:
        with pytest.raises(RunError) as caught:
            await runtime.run(make_agent(), "hi", run_id="r1")
        failed = [event for event in sink.events if event.run_id == "r1"]
        assert failed[-1].type == "run.failed"
        assert caught.value.last_event_sequence == failed[-1].sequence
        assert "lastEventSequence" not in (caught.value.details or {})  # not on the wire
        result = await runtime.run(
            make_agent(), "hi", run_id="r1", event_sequence_start=caught.value.last_event_sequence
        )
        assert result.output == "up"
        events = [event for event in sink.events if event.run_id == "r1"]
        assert [event.sequence for event in events] == list(range(1, len(events) + 1))
        assert events[len(failed)].type == "run.started"


@pytest.mark.parametrize("start", [-1, 2**53, 1.5, "3"])
async def test_an_invalid_event_sequence_start_is_refused_before_the_run(start: Any) -> None:
    provider = ScriptedProvider(turns=["never"])
    async with scripted_runtime(provider) as runtime:
        with pytest.raises(RunError) as caught:
            await runtime.run(make_agent(), "hi", event_sequence_start=cast(int, start))
    assert caught.value.code == "RUN_OPTION_INVALID"
    assert provider.requests == []
