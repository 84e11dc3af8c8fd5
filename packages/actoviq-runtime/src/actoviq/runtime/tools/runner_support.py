"""What :class:`~actoviq.runtime.tools.runner.ToolRunner` shares with its helpers (internal).

Typed failures (``tool_error``), the hand-back of a worker thread's outcome to the loop, the copy
of a call's context with another signal, and the test whether a tool runs on the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from typing import Any, Final, cast

from actoviq.core import AbortError, JsonObject, field_replacer
from actoviq.runtime.tools.descriptor import ToolDescriptor, ToolExecutionContext
from actoviq.runtime.tools.errors import (
    ToolExecutionError,
    ToolFailure,
    ToolFailureKind,
    ToolOutputTooLargeError,
)
from actoviq.runtime.tools.policy import InterruptDecision
from actoviq.runtime.tools.threads import ToolThreads
from actoviq.runtime.tools.tool_json import json_size_over

__all__ = [
    "abort_cause",
    "approved",
    "check_output_size",
    "error_text",
    "failure_json",
    "hand_back",
    "run_in_thread",
    "runs_on_loop",
    "tool_error",
    "unknown_tool",
    "with_signal",
]

_MAX_LISTED_TOOLS: Final = 40
_MAX_SHOWN_NAME: Final = 128


def hand_back(
    loop: asyncio.AbstractEventLoop,
    future: asyncio.Future[object],
    outcome: object,
    error: BaseException | None,
) -> None:
    """From a worker thread: settle ``future`` on its loop (dropped if the loop is gone)."""

    def settle() -> None:
        if future.done():
            return  # the await was abandoned (timeout, cancel): the late outcome is dropped
        if error is None:
            future.set_result(outcome)
        elif isinstance(error, StopIteration):  # a future refuses it: raise what a call would
            future.set_exception(RuntimeError("A tool raised StopIteration."))
        else:
            future.set_exception(error)

    with contextlib.suppress(RuntimeError):  # the loop closed: nobody is waiting any more
        loop.call_soon_threadsafe(settle)


with_signal: Final[Callable[[ToolExecutionContext, Any], ToolExecutionContext]] = field_replacer(
    ToolExecutionContext, "signal"
)
"""``with_signal(ctx, signal)``: ``ctx`` with ``signal`` instead of its own (a slot copy)."""


def runs_on_loop(execute: Callable[..., object]) -> bool:
    """Whether ``execute`` is a coroutine function (it runs on the event loop, not in a thread).

    True for ``async def`` functions, partials of them and objects with an ``async def
    __call__``; everything else is a plain function and runs in a worker thread.
    """
    if inspect.iscoroutinefunction(execute):
        return True
    call = getattr(type(execute), "__call__", None)  # noqa: B004 - the class's own __call__
    return call is not None and inspect.iscoroutinefunction(call)


def unknown_tool(name: str, available: Sequence[str]) -> str:
    """The message of a ``not_found`` failure (at most 40 tool names listed).

    The name comes from the model: a long one is cut so the message stays bounded.
    """
    if len(name) > _MAX_SHOWN_NAME:
        name = name[: _MAX_SHOWN_NAME - 1] + "…"
    if not available:
        return f'Unknown tool "{name}". No tools are available.'
    shown = list(available[:_MAX_LISTED_TOOLS])
    more = len(available) - len(shown)
    listed = ", ".join(shown) + (f" and {more} more" if more > 0 else "")
    return f'Unknown tool "{name}". Available tools: {listed}.'


def approved(ctx: ToolExecutionContext, decision: InterruptDecision) -> bool:
    """Whether ``ctx`` carries the approval of ``decision``'s interruption."""
    return ctx.approval is not None and ctx.approval.interruption_id == decision.interruption_id


def error_text(error: BaseException) -> str:
    """``str(error)``, or ``<unprintable Type>`` when the exception's ``__str__`` raises."""
    try:
        return str(error)
    except Exception:
        return f"<unprintable {type(error).__name__}>"


def failure_json(failure: ToolFailure, clean: Callable[[str], str]) -> JsonObject:
    """The ``tool.failed`` payload of ``failure``, its texts passed through ``clean``.

    The cause's message is the exception's own text: the default (key-based) event redaction
    cannot see a secret in it, so it is cleaned here as the model-facing message is.
    """
    data = failure.to_json()
    data["message"] = clean(failure.message)
    cause = data.get("cause")
    if isinstance(cause, dict):
        cause["message"] = clean(str(cause.get("message", "")))
    return data


def abort_cause(reason: object) -> BaseException:
    """The cause a ``cancelled`` failure carries for an abort ``reason``."""
    if isinstance(reason, BaseException):
        return reason
    return AbortError(reason=reason)


def tool_error(
    kind: ToolFailureKind,
    name: str,
    ctx: ToolExecutionContext,
    message: str,
    cause: BaseException | None = None,
) -> ToolExecutionError:
    """A typed tool failure of ``kind`` for the call of ``ctx``."""
    return ToolExecutionError(
        ToolFailure(
            kind=kind,
            tool_name=name,
            call_id=ctx.call_id,
            message=message,
            cause=cause,
            retryable=kind == "retry",
        )
    )


def check_output_size(
    descriptor: ToolDescriptor, ctx: ToolExecutionContext, value: object, model_text: str | None
) -> None:
    """Refuse a result over the tool's ``max_output_chars`` (JSON text plus ``model_text``).

    Raises:
        ToolExecutionError: kind ``validation``, cause :class:`ToolOutputTooLargeError`.
    """
    limit = descriptor.behavior.output_limit
    text_size = len(model_text) if model_text else 0
    size = json_size_over(value, limit - text_size)
    if size is not None:
        too_large = ToolOutputTooLargeError(descriptor.name, size + text_size, limit)
        raise tool_error("validation", descriptor.name, ctx, too_large.message, too_large)


async def run_in_thread(
    executor: Executor | None,
    execute: Callable[[ToolExecutionContext, Any], object],
    ctx: Any,
    arguments: Any,
) -> object:
    """Run ``execute`` in a worker thread and await its result on the loop.

    One ``call_soon_threadsafe`` hands the outcome back (lighter than ``run_in_executor``'s
    future chaining, which matters when many plain tools run at once). An abandoned await
    (timeout, cancellation) leaves the future done: the late outcome is dropped.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[object] = loop.create_future()
    context = contextvars.copy_context()

    def work() -> None:
        try:
            outcome = context.run(execute, ctx, arguments)
        except BaseException as error:  # handed to the awaiting task, as the loop would
            hand_back(loop, future, None, error)
        else:
            hand_back(loop, future, outcome, None)

    if executor is None:
        loop.run_in_executor(None, work)  # the loop's default executor owns the job
    elif executor.__class__ is ToolThreads:
        cast(ToolThreads, executor).run_soon(work)  # no Future: work wakes the loop itself
    else:
        executor.submit(work)
    return await future
