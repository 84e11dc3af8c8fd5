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
import contextlib
import contextvars
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Collection, Sequence
from concurrent.futures import Executor
from typing import Any, Final, cast

import attrs

from actoviq.core import AbortController, AbortError
from actoviq.events import Redactor
from actoviq.runtime.tools.call_deadlines import CallDeadlines
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
    ToolFailureKind,
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
from actoviq.runtime.tools.schema import ToolInputInvalidError
from actoviq.runtime.tools.threads import ToolThreads
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
_MAX_LISTED_TOOLS: Final = 40


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
            raise _error("not_found", name, ctx, _unknown_tool(name, available))
        descriptor = tool.descriptor
        try:
            parsed = descriptor.input.parse(raw_input)
        except (ToolExecutionError, ToolInterruptionRequiredError):
            raise
        except ToolRetry as retry:  # a parse hook may ask for a retry too
            raise _error("retry", name, ctx, self._text(retry.message), retry) from retry
        except Exception as error:
            raise _error(
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
                raise _error("denied", name, ctx, decision.reason)
            if isinstance(decision, InterruptDecision) and not _approved(ctx, decision):
                raise ToolInterruptionRequiredError(decision, name, ctx.call_id)
        if descriptor.requires_approval and ctx.approval is None:
            decision = InterruptDecision(
                interruption_id=approval_interruption_id(ctx.run_id, ctx.call_id),
                reason=f'Tool "{name}" requires approval.',
            )
            raise ToolInterruptionRequiredError(decision, name, ctx.call_id)
        return PreparedToolCall(tool=tool, input=parsed, context=ctx, arguments=raw_input)

    def _text(self, text: str) -> str:
        """``text`` redacted (secret shapes) and bounded for the model."""
        text = self.redactor.redact_text(text)
        if len(text) > MAX_DETAIL_CHARS:
            text = text[: MAX_DETAIL_CHARS - 1] + "…"
        return text

    def _validation_detail(self, error: Exception) -> str:
        if isinstance(error, ToolInputInvalidError) and error.errors:
            detail = "; ".join(error.errors)
        else:
            detail = f"$: {type(error).__name__}: {error}"
        return self._text(detail) + " Fix the arguments and call the tool again."

    def _log_failure(self, prepared: PreparedToolCall, error: BaseException) -> str:
        """Log a tool that raised; returns the redacted, bounded text the model sees."""
        ctx = prepared.context
        kind = type(error).__name__
        text = self._text(str(error))
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
            raise _error("execution", name, ctx, f'Tool "{name}" policy failed.', error) from error
        if not isinstance(decision, AllowDecision | DenyDecision | InterruptDecision):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise _error(
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
            raise _error("cancelled", name, ctx, f'Tool "{name}" was cancelled.')
        expires = self._expiry(prepared)
        now = self._clock()
        if expires is not None and expires <= now:
            raise _error("timeout", name, ctx, f'Tool "{name}" exceeded its deadline.')
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
        call_ctx = _with_signal(ctx, boundary.signal)
        # The runner's one timer keeps the call's deadline (call_deadlines), with
        # asyncio.timeout_at's semantics. Without a deadline nothing is kept: a TimeoutError can
        # then only come from the tool itself (an execution failure either way).
        keeper = self._deadlines
        if keeper is None or keeper.loop is not loop:
            keeper = self._deadlines = CallDeadlines(loop)
        deadline = None if when is None or task is None else keeper.enter(when, task)
        try:
            result = await self._call(prepared, call_ctx)
        except (ToolExecutionError, ToolInterruptionRequiredError, ToolSuspension):
            raise
        except ToolRetry as retry:
            raise _error("retry", name, ctx, self._text(retry.message), retry) from retry
        except TimeoutError as error:
            if deadline is not None and deadline.expired:
                raise self._timed_out(boundary, name, ctx, error) from error
            detail = self._log_failure(prepared, error)
            raise _error(
                "execution", name, ctx, f'Tool "{name}" failed. {detail}', error
            ) from error
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
                raise _error(
                    "cancelled",
                    name,
                    ctx,
                    f'Tool "{name}" was cancelled.',
                    _abort_cause(signal.reason),
                ) from error
            raise
        except Exception as error:
            detail = self._log_failure(prepared, error)
            raise _error(
                "execution", name, ctx, f'Tool "{name}" failed. {detail}', error
            ) from error
        finally:
            if deadline is not None:
                keeper.leave(deadline)
            remove()
        return self._normalize(prepared, result)

    def _timed_out(
        self, boundary: AbortController, name: str, ctx: ToolExecutionContext, error: TimeoutError
    ) -> ToolExecutionError:
        boundary.abort(TimeoutError("Tool deadline exceeded."))
        return _error("timeout", name, ctx, f'Tool "{name}" exceeded its deadline.', error)

    async def _call(self, prepared: PreparedToolCall, ctx: ToolExecutionContext) -> object:
        """Run ``execute``: a coroutine function on the loop, anything else in a worker thread.

        The thread runs in a copy of the caller's context (context variables, the trace). If the
        await is abandoned (timeout, cancellation) the thread finishes on its own and its result
        is discarded; the tool's ``ctx.signal`` is aborted so a cooperative tool can stop early.
        """
        execute = prepared.tool.execute
        try:
            on_loop = self._on_loop.get(execute)
            if on_loop is None:
                on_loop = runs_on_loop(execute)
                if len(self._on_loop) >= _ON_LOOP_LIMIT:
                    self._on_loop.clear()
                self._on_loop[execute] = on_loop
        except TypeError:  # an unhashable callable object: asked every time
            on_loop = runs_on_loop(execute)
        if on_loop:
            result = execute(ctx, prepared.input)
        else:
            result = await self._in_thread(execute, ctx, prepared.input)
        if inspect.isawaitable(result):
            result = await cast(Awaitable[object], result)
        return result

    async def _in_thread(
        self, execute: Callable[[ToolExecutionContext, Any], object], ctx: Any, arguments: Any
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
                _hand_back(loop, future, None, error)
            else:
                _hand_back(loop, future, outcome, None)

        executor = self._executor
        if executor is None:
            loop.run_in_executor(None, work)  # the loop's default executor owns the job
        elif executor.__class__ is ToolThreads:
            cast(ToolThreads, executor).run_soon(work)  # no Future: work wakes the loop itself
        else:
            executor.submit(work)
        return await future

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
            return ToolOutput(
                value=value,
                artifacts=envelope.artifacts if envelope else (),
                model_text=envelope.model_text if envelope else None,
            )
        except Exception as error:
            raise _error(
                "validation", name, ctx, f'Invalid output from tool "{name}".', error
            ) from error


def _hand_back(
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


_ON_LOOP_LIMIT: Final = 1024  # distinct execute callables remembered by one runner
# ToolExecutionContext's slot descriptors: a context with only ``signal`` swapped is copied slot
# by slot (its fields carry no converters or validators) instead of through attrs.evolve.
_CTX_SLOTS: Final[tuple[Any, ...]] = tuple(
    ToolExecutionContext.__dict__[field.name] for field in attrs.fields(ToolExecutionContext)
)
_CTX_SIGNAL: Final[Any] = ToolExecutionContext.__dict__["signal"]


def _with_signal(ctx: ToolExecutionContext, signal: Any) -> ToolExecutionContext:
    if ctx.__class__ is not ToolExecutionContext:  # a subclass may add fields or checks
        return attrs.evolve(ctx, signal=signal)
    clone = object.__new__(ToolExecutionContext)
    for slot in _CTX_SLOTS:
        slot.__set__(clone, slot.__get__(ctx, ToolExecutionContext))
    _CTX_SIGNAL.__set__(clone, signal)
    return clone


def runs_on_loop(execute: Callable[..., object]) -> bool:
    """Whether ``execute`` is a coroutine function (it runs on the event loop, not in a thread).

    True for ``async def`` functions, partials of them and objects with an ``async def
    __call__``; everything else is a plain function and runs in a worker thread.
    """
    if inspect.iscoroutinefunction(execute):
        return True
    call = getattr(type(execute), "__call__", None)  # noqa: B004 - the class's own __call__
    return call is not None and inspect.iscoroutinefunction(call)


def _unknown_tool(name: str, available: Sequence[str]) -> str:
    if not available:
        return f'Unknown tool "{name}". No tools are available.'
    shown = list(available[:_MAX_LISTED_TOOLS])
    more = len(available) - len(shown)
    listed = ", ".join(shown) + (f" and {more} more" if more > 0 else "")
    return f'Unknown tool "{name}". Available tools: {listed}.'


def _approved(ctx: ToolExecutionContext, decision: InterruptDecision) -> bool:
    return ctx.approval is not None and ctx.approval.interruption_id == decision.interruption_id


def _abort_cause(reason: object) -> BaseException:
    if isinstance(reason, BaseException):
        return reason
    return AbortError(reason=reason)


def _error(
    kind: ToolFailureKind,
    name: str,
    ctx: ToolExecutionContext,
    message: str,
    cause: BaseException | None = None,
) -> ToolExecutionError:
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
