"""Parallel read batches: which calls may join one, and running them in call order (03 §1.9.2)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar, cast

from actoviq.runtime.tools.descriptor import RuntimeTool

__all__ = ["is_parallel_safe", "run_in_call_order"]

T = TypeVar("T")
R = TypeVar("R")


def is_parallel_safe(
    tool: RuntimeTool | None, *, policy_configured: bool, max_parallel_tools: int
) -> bool:
    """Whether a call may join a parallel read batch (spec 03 §1.9.2, §4.7).

    True only for a registered ``read`` tool without ``requires_approval`` and not marked
    ``parallel_safe=False``, with no runtime policy and ``max_parallel_tools > 1``.
    """
    if tool is None or policy_configured or max_parallel_tools <= 1:
        return False
    behavior = tool.descriptor.behavior
    return (
        tool.descriptor.effect == "read"
        and not behavior.requires_approval
        and behavior.parallel_safe is not False
    )


async def run_in_call_order(
    calls: Sequence[T], worker: Callable[[T], Awaitable[R]], *, max_parallel: int
) -> tuple[R, ...]:
    """Run ``worker`` over ``calls`` concurrently (at most ``max_parallel``), results in call order.

    The worker should turn expected tool failures into results. Any exception it raises cancels
    the siblings (``TaskGroup``) and is re-raised; a lone error is re-raised as itself, several
    as the ``ExceptionGroup``.

    Raises:
        ValueError: ``max_parallel`` is not a positive integer.
    """
    if isinstance(max_parallel, bool) or not isinstance(max_parallel, int) or max_parallel < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError("max_parallel must be a positive integer.")
    if len(calls) == 1 or max_parallel == 1:
        return tuple([await worker(call) for call in calls])
    results: list[R] = []
    slots: list[tuple[bool, R | None]] = [(False, None)] * len(calls)
    # Every call runs at once when there are no more than max_parallel: no semaphore to pass.
    gate = asyncio.Semaphore(max_parallel) if len(calls) > max_parallel else None

    async def one(index: int, call: T) -> None:
        if gate is None:
            slots[index] = (True, await worker(call))
            return
        async with gate:
            slots[index] = (True, await worker(call))

    try:
        async with asyncio.TaskGroup() as group:
            for index, call in enumerate(calls):
                group.create_task(one(index, call))
    except BaseExceptionGroup as failures:
        if len(failures.exceptions) == 1:
            raise failures.exceptions[0] from failures.exceptions[0].__cause__
        raise
    for done, value in slots:
        assert done
        results.append(cast(R, value))
    return tuple(results)
