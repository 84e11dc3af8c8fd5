"""``ToolRunner``: one tool invocation, never retried (spec 03 §4.4, ADR-010, D5).

The runner is split in two so the runtime can persist ``started`` at the right moment (Q2):

* :meth:`ToolRunner.prepare` resolves the tool (only among the agent's tools, Q7), parses the
  input, asks the policy and applies the ``requires_approval`` gate (Q8). Nothing has run yet.
* :meth:`ToolRunner.invoke` executes the prepared call under ``asyncio.timeout`` and the run's
  cancel signal. A cancelled run never starts a tool (Q9). The output parser runs exactly once and
  non-JSON values become ``validation`` failures (Q10).

``run_in_call_order`` runs parallel-safe read calls in a ``TaskGroup`` and returns the results in
call order.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Collection, Sequence
from concurrent.futures import Executor
from typing import Any, Final, cast

import attrs

from actoviq.core import AbortController
from actoviq.events import Redactor
from actoviq.runtime.tools.call_deadlines import CallDeadline, CallDeadlines
from actoviq.runtime.tools.descriptor import (
    RuntimeTool,
    ToolEffect,
    ToolExecutionContext,
    ToolOutput,
)
from actoviq.runtime.tools.errors import (
    ToolErrorFormatter,
    ToolExecutionError,
    ToolFailure,
    ToolInterruptionRequiredError,
    ToolRetry,
    ToolSuspension,
    format_failure,
)
from actoviq.runtime.tools.policy import (
    AllowDecision,
    DenyDecision,
    InterruptDecision,
    ToolAuthorizationRequest,
    ToolDecision,
    ToolPolicy,
    approval_interruption_id,
    idempotency_key_for,
)
from actoviq.runtime.tools.registry import ToolRegistry
from actoviq.runtime.tools.runner_support import (
    abort_cause,
    approved,
    check_output_size,
    error_text,
    run_in_thread,
    runs_on_loop,
    tool_error,
    unknown_tool,
    with_signal,
)
from actoviq.runtime.tools.schema import ToolInputInvalidError
from actoviq.runtime.tools.thread_batch import (
    EXPIRED,
    GIVEN_UP,
    Raised,
    ThreadBatch,
    await_slot,
    due_slot,
    stop_slot,
)
from actoviq.runtime.tools.tool_json import to_tool_json

__all__ = [
    "LOGGER",
    "MAX_DETAIL_CHARS",
    "PreparedToolCall",
    "ToolRunner",
    "epoch_ms",
    "runs_on_loop",
    "to_tool_json",
]

LOGGER: Final = logging.getLogger("actoviq.runtime.tools")
"""Tool failures are logged here (run id, tool, call id, exception type; arguments redacted)."""

MAX_DETAIL_CHARS: Final = 1000
"""The longest detail (validation errors, an exception's text) a failure message carries."""


def epoch_ms() -> float:
    """The current Unix time in milliseconds (the unit of ``deadline`` values)."""
    return time.time() * 1000.0


@attrs.frozen(kw_only=True, slots=True)
class PreparedToolCall:
    """A call that passed resolution, parsing, policy and approval; ready to :meth:`invoke`."""

    tool: RuntimeTool
    input: Any  # the parsed input: whatever the tool's schema produces
    context: ToolExecutionContext
    arguments: object = None  # the raw JSON arguments (logged only through the redactor)

    @property
    def name(self) -> str:
        """The tool name."""
        return self.tool.name

    @property
    def effect(self) -> ToolEffect:
        """The tool's effect (side-effect when undeclared)."""
        return self.tool.descriptor.effect


class ToolRunner:
    """Executes single tool invocations against a registry and an optional policy.

    Args:
        registry: the tools.
        policy: an optional policy; it can only tighten (``requires_approval`` still applies).
        error_formatter: formats failures for the model (default ``"<kind>: <message>"``).
        clock: epoch-milliseconds clock used for deadlines (tests inject one).
        executor: the worker threads plain (non-``async``) tools run in (default: the event
            loop's default executor). ``AgentRuntime`` passes its own bounded pool.
        redactor: cleans what failure messages and logs carry (an exception's text, the call's
            arguments); default: the default redaction policy. ``AgentRuntime`` passes one
            built from its ``redaction`` policy.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        policy: ToolPolicy | None = None,
        error_formatter: ToolErrorFormatter | None = None,
        clock: Callable[[], float] = epoch_ms,
        executor: Executor | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        self.registry = registry
        self.policy = policy
        self.error_formatter = error_formatter
        self._clock = clock
        self._executor = executor
        self.redactor = redactor if redactor is not None else Redactor()
        self._deadlines: CallDeadlines | None = None  # the calls' deadlines on the running loop
        self._on_loop: dict[object, bool] = {}  # runs_on_loop() per execute callable

    @property
    def executor(self) -> Executor | None:
        """The executor plain tools run in (None: the event loop's default one)."""
        return self._executor

    def format_failure(self, error: ToolExecutionError | ToolFailure) -> str:
        """Format ``error`` with the configured formatter (or the default)."""
        return format_failure(error, self.error_formatter)

    async def execute(
        self,
        name: str,
        raw_input: object,
        ctx: ToolExecutionContext,
        *,
        allowed_tools: Collection[str] | None = None,
    ) -> ToolOutput:
        """:meth:`prepare` then :meth:`invoke`; one invocation, never retried."""
        prepared = await self.prepare(name, raw_input, ctx, allowed_tools=allowed_tools)
        return await self.invoke(prepared)

    async def prepare(
        self,
        name: str,
        raw_input: object,
        ctx: ToolExecutionContext,
        *,
        allowed_tools: Collection[str] | None = None,
    ) -> PreparedToolCall:
        """Resolve, parse, authorise and gate a call without running it.

        Raises:
            ToolExecutionError: ``not_found`` (unknown, or not in ``allowed_tools``),
                ``validation`` (bad input), ``denied`` (policy) or ``execution`` (policy raised).
            ToolInterruptionRequiredError: the policy asked, or the tool requires an approval
                that ``ctx.approval`` does not carry.
        """
        tool = self.registry.resolve(name)
        if tool is None or (allowed_tools is not None and name not in allowed_tools):
            available = sorted(
                allowed_tools if allowed_tools is not None else self.registry.names()
            )
            raise tool_error("not_found", name, ctx, unknown_tool(name, available))
        descriptor = tool.descriptor
        try:
            parsed = descriptor.input.parse(raw_input)
        except (ToolExecutionError, ToolInterruptionRequiredError):
            raise
        except ToolRetry as retry:  # a parse hook may ask for a retry too
            raise tool_error("retry", name, ctx, self.detail_text(retry.message), retry) from retry
        except Exception as error:
            raise tool_error(
                "validation",
                name,
                ctx,
                f'Invalid input for tool "{name}". {self._validation_detail(error)}',
                error,
            ) from error
        if ctx.idempotency_key is None:
            key = idempotency_key_for(ctx.run_id, ctx.call_id, descriptor.effect)
            if key is not None:
                ctx = attrs.evolve(ctx, idempotency_key=key)
        if ctx.resumption is not None:
            # A suspended call continues: it passed the policy and the approval gate when it
            # first started, and the host has just decided what it was waiting for.
            return PreparedToolCall(tool=tool, input=parsed, context=ctx)
        if self.policy is not None:
            decision = await self._authorize(
                ToolAuthorizationRequest(tool=descriptor, input=parsed, context=ctx), name, ctx
            )
            if isinstance(decision, DenyDecision):
                raise tool_error("denied", name, ctx, decision.reason)
            if isinstance(decision, InterruptDecision) and not approved(ctx, decision):
                raise ToolInterruptionRequiredError(decision, name, ctx.call_id)
        if descriptor.requires_approval and ctx.approval is None:
            decision = InterruptDecision(
                interruption_id=approval_interruption_id(ctx.run_id, ctx.call_id),
                reason=f'Tool "{name}" requires approval.',
            )
            raise ToolInterruptionRequiredError(decision, name, ctx.call_id)
        return PreparedToolCall(tool=tool, input=parsed, context=ctx, arguments=raw_input)

    def detail_text(self, text: str) -> str:
        """``text`` redacted (secret shapes) and bounded for the model."""
        text = self.redactor.redact_text(text)
        if len(text) > MAX_DETAIL_CHARS:
            text = text[: MAX_DETAIL_CHARS - 1] + "…"
        return text

    def _validation_detail(self, error: Exception) -> str:
        if isinstance(error, ToolInputInvalidError) and error.errors:
            detail = "; ".join(error.errors)
        else:
            detail = f"$: {type(error).__name__}: {error_text(error)}"
        return self.detail_text(detail) + " Fix the arguments and call the tool again."

    def _log_failure(self, prepared: PreparedToolCall, error: BaseException) -> str:
        """Log a tool that raised; returns the redacted, bounded text the model sees."""
        ctx = prepared.context
        kind = type(error).__name__
        text = self.detail_text(error_text(error))
        try:
            arguments: object = self.redactor.redact(prepared.arguments)
        except Exception:
            arguments = "[unavailable]"  # fail closed: nothing unredacted reaches the log
        LOGGER.warning(
            'Tool "%s" raised %s (run %s, call %s): %s',
            prepared.name,
            kind,
            ctx.run_id,
            ctx.call_id,
            text,
            extra={
                "actoviq_run_id": ctx.run_id,
                "actoviq_tool": prepared.name,
                "actoviq_call_id": ctx.call_id,
                "actoviq_exception_type": kind,
                "actoviq_arguments": arguments,
            },
        )
        return f"{kind}: {text}" if text else kind

    async def _authorize(
        self, request: ToolAuthorizationRequest, name: str, ctx: ToolExecutionContext
    ) -> ToolDecision:
        assert self.policy is not None
        try:
            decision = self.policy.authorize(request)
            if inspect.isawaitable(decision):
                decision = await decision
        except (ToolExecutionError, ToolInterruptionRequiredError):
            raise
        except Exception as error:
            raise tool_error(
                "execution", name, ctx, f'Tool "{name}" policy failed.', error
            ) from error
        if not isinstance(decision, AllowDecision | DenyDecision | InterruptDecision):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise tool_error(
                "execution",
                name,
                ctx,
                f'Tool "{name}" policy returned an invalid decision.',
                TypeError(f"{type(decision).__name__} is not a ToolDecision"),
            )
        return decision

    async def invoke(self, prepared: PreparedToolCall) -> ToolOutput:
        """Run a prepared call once.

        Raises:
            ToolExecutionError: ``cancelled`` (signal aborted before or during the call),
                ``timeout``, ``execution`` (the tool raised) or ``validation`` (bad output).
            ToolInterruptionRequiredError: the tool itself raised it.
            ToolSuspension: the tool suspended itself until the host decides.
        """
        ctx = prepared.context
        name = prepared.name
        signal = ctx.signal
        if signal.aborted:
            raise tool_error("cancelled", name, ctx, f'Tool "{name}" was cancelled.')
        expires = self._expiry(prepared)
        now = self._clock()
        if expires is not None and expires <= now:
            raise tool_error("timeout", name, ctx, f'Tool "{name}" exceeded its deadline.')
        loop = asyncio.get_running_loop()
        when = None if expires is None else loop.time() + (expires - now) / 1000.0
        boundary = AbortController()
        task = asyncio.current_task()
        aborted_by_parent = False

        def on_parent_abort(reason: object) -> None:
            nonlocal aborted_by_parent
            boundary.abort(reason)
            if not aborted_by_parent and task is not None:
                aborted_by_parent = True
                task.cancel()

        remove = signal.add_listener(on_parent_abort)
        call_ctx = with_signal(ctx, boundary.signal)
        # The runner's one timer keeps the call's deadline (call_deadlines), with
        # asyncio.timeout_at's semantics. Without a deadline nothing is kept: a TimeoutError can
        # then only come from the tool itself (an execution failure either way).
        keeper = self._keeper(loop)
        deadline = None if when is None or task is None else keeper.enter(when, task)
        try:
            result = await self._call(prepared, call_ctx)
        except asyncio.CancelledError as error:
            if (
                deadline is not None
                and keeper.leave(deadline)
                and task is not None
                and task.cancelling() <= deadline.pending
            ):  # the deadline's cancellation and nobody else's: the call timed out
                timeout = TimeoutError()
                timeout.__cause__ = error
                raise self._timed_out(boundary, name, ctx, timeout) from timeout
            if aborted_by_parent and task is not None and task.uncancel() == 0:
                raise tool_error(
                    "cancelled",
                    name,
                    ctx,
                    f'Tool "{name}" was cancelled.',
                    abort_cause(signal.reason),
                ) from error
            if task is not None and task.cancelling() == 0:  # nobody cancelled us: the tool's own
                raise self._failure(prepared, error) from error
            raise
        except BaseException as error:
            if isinstance(error, TimeoutError) and deadline is not None and deadline.expired:
                raise self._timed_out(boundary, name, ctx, error) from error
            failure = self._failure(prepared, error)
            if failure is error:
                raise
            raise failure from error
        finally:
            if deadline is not None:
                keeper.leave(deadline)
            remove()
        return self._normalize(prepared, result)

    def _failure(self, prepared: PreparedToolCall, error: BaseException) -> BaseException:
        """What a call that raised ``error`` raises: a typed failure, or ``error`` itself.

        Tool errors, approvals and suspensions the tool raised are its own; a retry request is
        a ``retry`` failure; any other ``Exception`` is logged (arguments redacted) and is an
        ``execution`` failure; anything else (``KeyboardInterrupt``, ...) is re-raised.
        """
        if isinstance(error, ToolExecutionError | ToolInterruptionRequiredError | ToolSuspension):
            return error
        ctx = prepared.context
        name = prepared.name
        if isinstance(error, ToolRetry):
            failure = tool_error("retry", name, ctx, self.detail_text(error.message), error)
        elif isinstance(error, Exception | asyncio.CancelledError):  # not a cancellation of ours
            detail = self._log_failure(prepared, error)
            failure = tool_error("execution", name, ctx, f'Tool "{name}" failed. {detail}', error)
        else:
            return error
        failure.__cause__ = error
        return failure

    def _keeper(self, loop: asyncio.AbstractEventLoop) -> CallDeadlines:
        keeper = self._deadlines
        if keeper is None or keeper.loop is not loop:
            keeper = self._deadlines = CallDeadlines(loop)
        return keeper

    def _timed_out(
        self, boundary: AbortController, name: str, ctx: ToolExecutionContext, error: TimeoutError
    ) -> ToolExecutionError:
        boundary.abort(TimeoutError("Tool deadline exceeded."))
        return tool_error("timeout", name, ctx, f'Tool "{name}" exceeded its deadline.', error)

    async def _call(self, prepared: PreparedToolCall, ctx: ToolExecutionContext) -> object:
        """Run ``execute``: a coroutine function on the loop, anything else in a worker thread.

        The thread runs in a copy of the caller's context (context variables, the trace). If the
        await is abandoned (timeout, cancellation) the thread finishes on its own and its result
        is discarded; the tool's ``ctx.signal`` is aborted so a cooperative tool can stop early.
        """
        execute = prepared.tool.execute
        on_loop = self._runs_on_loop(execute)
        if on_loop:
            result = execute(ctx, prepared.input)
        else:
            result = await run_in_thread(self._executor, execute, ctx, prepared.input)
        if inspect.isawaitable(result):
            result = await cast(Awaitable[object], result)
        return result

    def _runs_on_loop(self, execute: Callable[..., object]) -> bool:
        try:
            on_loop = self._on_loop.get(execute)
            if on_loop is None:
                on_loop = runs_on_loop(execute)
                if len(self._on_loop) >= _ON_LOOP_LIMIT:
                    self._on_loop.clear()
                self._on_loop[execute] = on_loop
        except TypeError:  # an unhashable callable object: asked every time
            on_loop = runs_on_loop(execute)
        return on_loop

    def runs_in_thread(self, prepared: PreparedToolCall) -> bool:
        """Whether the call's tool is plain (not ``async``): it runs in a worker thread."""
        return not self._runs_on_loop(prepared.tool.execute)

    async def invoke_batch(
        self, calls: Sequence[PreparedToolCall]
    ) -> list[ToolOutput | ToolExecutionError | ToolSuspension]:
        """Run prepared calls of plain tools at once in worker threads, without a task per call.

        Each call gets what :meth:`invoke` gives it (its deadline, the run signal, the same typed
        failures) as its outcome, in call order: its output, or the ``ToolExecutionError`` or
        ``ToolSuspension`` it raised. The awaiting task is woken once, when every call settled
        (``actoviq.runtime.tools.thread_batch``); the loop settles a call past its deadline as
        ``timeout`` and, when the signal aborts, every open call as ``cancelled``, while their
        threads may still run (their late outcomes are dropped).

        Raises:
            ToolInterruptionRequiredError: a tool itself required an approval (at once).
            asyncio.CancelledError: the awaiting task was cancelled.
        """
        loop = asyncio.get_running_loop()
        batch = ThreadBatch(loop, len(calls))
        keeper = self._keeper(loop)
        boundaries: list[AbortController] = []
        whens: list[float | None] = []
        early: dict[int, BaseException] = {}  # calls that never started
        entries: list[CallDeadline] = []
        removers: list[Callable[[], None]] = []
        awaiting: dict[int, asyncio.Task[None]] = {}
        try:
            for index, prepared in enumerate(calls):
                ctx = prepared.context
                name = prepared.name
                boundary = AbortController()
                boundaries.append(boundary)
                whens.append(None)
                expires = None if ctx.signal.aborted else self._expiry(prepared)
                now = self._clock()
                if ctx.signal.aborted:
                    early[index] = tool_error(
                        "cancelled", name, ctx, f'Tool "{name}" was cancelled.'
                    )
                elif expires is not None and expires <= now:
                    early[index] = tool_error(
                        "timeout", name, ctx, f'Tool "{name}" exceeded its deadline.'
                    )
                else:
                    if expires is not None:
                        whens[index] = when = loop.time() + (expires - now) / 1000.0
                        due = functools.partial(due_slot, batch, index, boundary)
                        entries.append(keeper.enter_callback(when, due))
                    stop = functools.partial(stop_slot, batch, index, boundary, awaiting)
                    removers.append(ctx.signal.add_listener(stop))
                    call_ctx = with_signal(ctx, boundary.signal)
                    try:
                        batch.start(
                            self._executor, index, prepared.tool.execute, call_ctx, prepared.input
                        )
                    except Exception as error:  # the pool was shut down
                        early[index] = error
                    else:
                        continue
                batch.expire(index)  # settled before it started
            while not batch.settled:
                await batch.wait()
                for index in batch.take_urgent():
                    slot = batch.slots[index]
                    if isinstance(slot, Raised):
                        raise self._failure(calls[index], slot.error)
                    if calls[index].context.signal.aborted:  # stopped before it was awaited
                        _drop(slot)
                        batch.resolve(index, GIVEN_UP)
                        continue
                    task = loop.create_task(await_slot(batch, index, slot, whens[index], keeper))
                    # A task cancelled before it first ran never enters await_slot: given up.
                    task.add_done_callback(functools.partial(_given_up, batch, index, slot))
                    awaiting[index] = task
        finally:
            for entry in entries:
                keeper.leave(entry)
            for remove in removers:
                remove()
            batch.close()
            tasks = [task for task in awaiting.values() if not task.done()]
            for task in tasks:
                task.cancel()
            if tasks:
                await asyncio.wait(tasks)
        return [
            self._slot_outcome(prepared, early.get(index, batch.slots[index]), boundaries[index])
            for index, prepared in enumerate(calls)
        ]

    def _slot_outcome(
        self, prepared: PreparedToolCall, slot: object, boundary: AbortController
    ) -> ToolOutput | ToolExecutionError | ToolSuspension:
        ctx = prepared.context
        name = prepared.name
        if slot is EXPIRED:
            return self._timed_out(boundary, name, ctx, TimeoutError())
        if slot is GIVEN_UP:
            cause = abort_cause(ctx.signal.reason)
            return tool_error("cancelled", name, ctx, f'Tool "{name}" was cancelled.', cause)
        if isinstance(slot, Raised | BaseException):
            error = slot.error if isinstance(slot, Raised) else slot
            if isinstance(error, StopIteration):  # what a future holding it would raise
                error = RuntimeError("A tool raised StopIteration.")
            failure = self._failure(prepared, error)
            if isinstance(failure, ToolExecutionError | ToolSuspension):
                return failure
            raise failure  # an approval or a BaseException: handled as urgent before
        try:
            return self._normalize(prepared, slot)
        except ToolExecutionError as error:
            return error

    def _expiry(self, prepared: PreparedToolCall) -> float | None:
        candidates: list[float] = []
        if prepared.context.deadline is not None:
            candidates.append(prepared.context.deadline)
        timeout_ms = prepared.tool.descriptor.timeout_ms
        if timeout_ms is not None:
            candidates.append(self._clock() + timeout_ms)
        return min(candidates) if candidates else None

    def _normalize(self, prepared: PreparedToolCall, result: object) -> ToolOutput:
        name = prepared.name
        ctx = prepared.context
        output_schema = prepared.tool.descriptor.output
        envelope = result if isinstance(result, ToolOutput) else None
        try:
            value: object = to_tool_json(envelope.json_value() if envelope else result)
            if output_schema is not None:
                value = to_tool_json(output_schema.parse(value))
            model_text = envelope.model_text if envelope else None
            check_output_size(prepared.tool.descriptor, ctx, value, model_text)
            return ToolOutput(
                value=value,
                artifacts=envelope.artifacts if envelope else (),
                model_text=model_text,
            )
        except ToolExecutionError:
            raise
        except Exception as error:
            raise tool_error(
                "validation", name, ctx, f'Invalid output from tool "{name}".', error
            ) from error


_ON_LOOP_LIMIT: Final = 1024  # distinct execute callables remembered by one runner


def _given_up(batch: ThreadBatch, index: int, awaitable: object, task: asyncio.Task[None]) -> None:
    if task.cancelled():  # cancelled before it first ran: the awaitable was never awaited
        _drop(awaitable)
    batch.resolve(index, GIVEN_UP)  # a no-op once await_slot resolved the slot


def _drop(awaitable: object) -> None:
    """An awaitable a plain tool returned that will not be awaited (the run was stopped)."""
    if inspect.iscoroutine(awaitable):
        awaitable.close()
