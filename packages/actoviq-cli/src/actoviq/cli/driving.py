"""Drive one run through its pauses: stream semantic events, ask for decisions, resume.

A run streams through an :class:`~actoviq.surfaces.AgentRuntimeBridgeAdapter` (the ``cli`` or
``gui`` copy of a shared projection); when it pauses, the :class:`Approver` decides and the run
is resumed in the same process (exactly-once claims apply as for any resume), keeping one
projection so event sequences continue. Ctrl-C (SIGINT) while a run streams cancels that run
only: it ends ``cancelled`` with its state saved, and the caller decides what comes next.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable, Generator
from contextlib import contextmanager
from typing import Any

from actoviq.cli.approvals import Approver
from actoviq.cli.render import EventSink
from actoviq.core import RunResult
from actoviq.surfaces import AgentRuntimeBridgeAdapter, BridgeStream

__all__ = ["cancel_on_interrupt", "drive"]


@contextmanager
def cancel_on_interrupt(cancel: Callable[[], None]) -> Generator[None]:
    """While the block runs, SIGINT calls ``cancel`` instead of interrupting the program.

    Outside the main thread, or where the loop cannot take signals, it does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    loop = asyncio.get_running_loop()
    previous = signal.getsignal(signal.SIGINT)
    try:
        loop.add_signal_handler(signal.SIGINT, cancel)
    except (NotImplementedError, RuntimeError, ValueError):
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        signal.signal(signal.SIGINT, previous)


async def _stream_to(stream: BridgeStream, sink: EventSink) -> RunResult[Any]:
    async with stream:
        with cancel_on_interrupt(lambda: stream.cancel("Cancelled with Ctrl-C.")):
            async for event in stream:
                sink.feed(event)
        return await stream.result()


async def drive(
    bridge: AgentRuntimeBridgeAdapter,
    stream: BridgeStream,
    sink: EventSink,
    approver: Approver,
) -> RunResult[Any]:
    """Stream ``stream`` into ``sink``; resume after each pause the approver decides.

    Returns the final result: ``completed``, ``cancelled``, or ``interrupted`` when the approver
    left the run paused (its state is in the checkpoint store). A failed run raises its error.
    """
    while True:
        try:
            result = await _stream_to(stream, sink)
        finally:
            sink.finish()
        if result.status != "interrupted" or result.state is None:
            return result
        decisions = await approver.decide(result.interruptions)
        if decisions is None:
            return result
        stream = bridge.resume(result.state, decisions, projector=stream.projector)
