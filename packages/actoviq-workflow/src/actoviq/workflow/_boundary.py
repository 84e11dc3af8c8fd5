"""The wall-clock and abort boundary shared by every executor (spec 04 §2.5 step 5)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator

from actoviq.core import AbortSignal
from actoviq.workflow.errors import WorkflowAbortedError, WorkflowTimeoutError

__all__ = ["workflow_boundary"]


@contextlib.asynccontextmanager
async def workflow_boundary(*, timeout_ms: int, signal: AbortSignal | None) -> AsyncGenerator[None]:
    """Run the body under ``timeout_ms`` and ``signal``.

    Raises:
        WorkflowAbortedError: the signal was aborted before or during the body.
        WorkflowTimeoutError: the deadline passed (the body was cancelled).
    """
    if signal is not None and signal.aborted:
        raise WorkflowAbortedError(signal.reason)
    task = asyncio.current_task()
    if task is None:  # pragma: no cover - executors are always awaited from a task
        raise RuntimeError("workflow_boundary needs a running task")
    fired: list[object] = []

    def on_abort(reason: object) -> None:
        if not fired:
            fired.append(reason)
            task.cancel()

    remove = signal.add_listener(on_abort) if signal is not None else None
    scope = asyncio.timeout(timeout_ms / 1000)
    try:
        async with scope:
            yield
    except TimeoutError:
        if scope.expired():
            raise WorkflowTimeoutError(timeout_ms) from None
        raise
    except asyncio.CancelledError:
        if fired and task.uncancel() == 0:
            aborted = WorkflowAbortedError(fired[0])  # keeps the reason as __cause__
            aborted.__suppress_context__ = True
            raise aborted from aborted.__cause__
        raise
    finally:
        if remove is not None:
            remove()
