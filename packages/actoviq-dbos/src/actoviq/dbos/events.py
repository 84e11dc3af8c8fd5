"""Durable run events: a sink that writes every run event to the run's DBOS stream.

Inside a durable run's workflow each event is written to the DBOS stream ``actoviq.events``
(wire JSON, D2) as a recorded operation of the workflow. When DBOS replays the workflow after a
crash, the runtime emits the same events again with the same sequence numbers and DBOS skips
the writes it already recorded: a reader sees each sequence number once, across the crash.
Events emitted from inside a step (a tool's ``tool.progress``) are not durable and are left out,
as are events of runs outside a workflow.

:func:`read_events` reads the stream from any process (DBOS launched, or a ``DBOSClient``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Final

from actoviq.dbos.models import in_workflow
from actoviq.dbos.names import EVENTS_STREAM_KEY
from actoviq.events import RunEvent, run_event_from_json, run_event_to_json
from dbos import DBOS, DBOSClient

__all__ = ["DbosEventStream", "read_events"]

_SINK_ID: Final = "actoviq.dbos.events"


class DbosEventStream:
    """An event sink writing each run event of a durable run to its DBOS stream."""

    @property
    def id(self) -> str:
        """The sink id."""
        return _SINK_ID

    async def write(self, event: RunEvent) -> None:
        """Write ``event`` to the current workflow's stream (replays write nothing twice)."""
        if in_workflow():
            await DBOS.write_stream_async(EVENTS_STREAM_KEY, run_event_to_json(event))

    async def aclose(self) -> None:
        """Nothing to release."""


async def read_events(
    run_id: str,
    *,
    offset: int = 0,
    timeout_seconds: float | None = None,
    client: DBOSClient | None = None,
) -> AsyncIterator[RunEvent]:
    """The events of durable run ``run_id`` from ``offset``, live until the run ends.

    Args:
        run_id: the durable run (its DBOS workflow id).
        offset: how many events to skip (resume reading where a reader stopped).
        timeout_seconds: how long to wait for each next event (None: until the run ends).
        client: read through this ``DBOSClient`` instead of the launched DBOS.
    """
    if client is not None:
        values = client.read_stream_async(
            run_id, EVENTS_STREAM_KEY, offset=offset, timeout_seconds=timeout_seconds
        )
    else:
        values = DBOS.read_stream_async(
            run_id, EVENTS_STREAM_KEY, offset=offset, timeout_seconds=timeout_seconds
        )
    async for value in values:
        yield run_event_from_json(value)
