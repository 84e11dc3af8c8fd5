"""``MiddlewarePipeline``: ordered onion execution of middleware (spec 03 §3.2-§3.5, §3.7).

Handlers are sorted by (stage order, priority, registration index); a duplicate
``(stage, priority)`` is an error at build time. Before each handler and the terminal the pipeline
checks the cancel signal and the deadline. Each handler runs under ``asyncio.timeout`` of the
context's ``hook_timeout_ms`` (bounded by the deadline); the clock is paused while the handler
awaits ``next()``, so a handler is only charged for its own time.

Example:
    >>> import asyncio
    >>> from actoviq.core import AbortController
    >>> async def shout(ctx, next):
    ...     return (await next()).upper()
    >>> pipeline = MiddlewarePipeline([define_middleware("shout", "finalizeOutput", shout)])
    >>> ctx = MiddlewareContext(signal=AbortController().signal)
    >>> asyncio.run(pipeline.run("finalizeOutput", ctx, lambda ctx: "done"))
    'DONE'
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Final, TypeVar, cast

import attrs

from actoviq.core import AbortError, JsonObject
from actoviq.runtime.middleware.context import MiddlewareContext, MiddlewareErrorContext
from actoviq.runtime.middleware.definition import MiddlewareDefinition, define_middleware
from actoviq.runtime.middleware.errors import (
    MiddlewareConfigurationError,
    MiddlewareContextError,
    MiddlewareDeadlineExceededError,
    MiddlewareInvariantViolationError,
    MiddlewareNextCalledTwiceError,
    MiddlewarePriorityConflictError,
    MiddlewareTimeoutError,
)
from actoviq.runtime.middleware.stages import (
    MIDDLEWARE_STAGE_ORDER,
    MiddlewareStage,
    as_middleware_stage,
    middleware_stage_index,
)

__all__ = [
    "MiddlewareEntryDescription",
    "MiddlewarePipeline",
    "MiddlewarePipelineBuilder",
    "build_middleware_pipeline",
    "create_middleware_pipeline_builder",
]

C = TypeVar("C", bound=MiddlewareContext)
T = TypeVar("T")
Terminal = Callable[[C], "T | Awaitable[T]"]

_NOT_SET: Final = object()


def _epoch_ms() -> float:
    return time.time() * 1000.0


@attrs.frozen(kw_only=True, slots=True)
class MiddlewareEntryDescription:
    """One handler's place in the pipeline (no handler reference)."""

    name: str
    stage: MiddlewareStage
    priority: int
    stage_index: int
    chain_index: int

    def to_json(self) -> JsonObject:
        """``{name, stage, priority, stageIndex, chainIndex}``."""
        return {
            "name": self.name,
            "stage": self.stage.value,
            "priority": self.priority,
            "stageIndex": self.stage_index,
            "chainIndex": self.chain_index,
        }


class MiddlewarePipeline:
    """An immutable, ordered set of middleware definitions.

    Args:
        definitions: definitions (or anything :func:`define_middleware` accepts).
        clock: epoch-milliseconds clock for deadline checks (tests inject one).

    Raises:
        MiddlewareConfigurationError: an invalid definition.
        MiddlewarePriorityConflictError: two definitions share one stage and priority.
    """

    __slots__ = ("_by_stage", "_clock", "_definitions")

    def __init__(
        self,
        definitions: Iterable[MiddlewareDefinition | Mapping[str, Any]] = (),
        *,
        clock: Callable[[], float] = _epoch_ms,
    ) -> None:
        checked = [define_middleware(definition) for definition in definitions]
        ordered = [
            definition
            for _, definition in sorted(
                enumerate(checked),
                key=lambda pair: (
                    middleware_stage_index(pair[1].stage),
                    pair[1].priority,
                    pair[0],
                ),
            )
        ]
        for previous, current in itertools.pairwise(ordered):
            if (previous.stage, previous.priority) == (current.stage, current.priority):
                names = [
                    definition.name
                    for definition in ordered
                    if (definition.stage, definition.priority) == (current.stage, current.priority)
                ]
                raise MiddlewarePriorityConflictError(current.stage, current.priority, names)
        self._definitions = tuple(ordered)
        by_stage: dict[MiddlewareStage, list[MiddlewareDefinition]] = {}
        for definition in ordered:
            by_stage.setdefault(definition.stage, []).append(definition)
        self._by_stage = {stage: tuple(handlers) for stage, handlers in by_stage.items()}
        self._clock = clock

    # -- inspection -----------------------------------------------------------------------------

    def definitions(self) -> tuple[MiddlewareDefinition, ...]:
        """The frozen definitions in execution order."""
        return self._definitions

    def has(self, stage: MiddlewareStage | str) -> bool:
        """Whether any handler is registered at ``stage``."""
        if stage.__class__ is MiddlewareStage:  # the runtime's own calls: no conversion
            return stage in self._by_stage
        return as_middleware_stage(stage) in self._by_stage

    def compose(
        self, extra: Iterable[MiddlewareDefinition | Mapping[str, Any]]
    ) -> MiddlewarePipeline:
        """A new pipeline with ``extra`` added (e.g. agent middleware over runtime middleware).

        Raises:
            MiddlewarePriorityConflictError: an added definition clashes with an existing one.
        """
        added = tuple(extra)
        if not added:
            return self
        return MiddlewarePipeline((*self._definitions, *added), clock=self._clock)

    def inspect(
        self, stage: MiddlewareStage | str | None = None
    ) -> tuple[MiddlewareEntryDescription, ...]:
        """Describe the handlers (optionally of one stage) in execution order."""
        stages = MIDDLEWARE_STAGE_ORDER if stage is None else (as_middleware_stage(stage),)
        return tuple(
            MiddlewareEntryDescription(
                name=definition.name,
                stage=definition.stage,
                priority=definition.priority,
                stage_index=middleware_stage_index(definition.stage),
                chain_index=chain_index,
            )
            for current in stages
            for chain_index, definition in enumerate(self._by_stage.get(current, ()))
        )

    def format(self, stage: MiddlewareStage | str | None = None) -> str:
        """Lines ``"<stage>[<chainIndex>] @<priority> <name>"``; ``""`` when empty."""
        return "\n".join(
            f"{entry.stage.value}[{entry.chain_index}] @{entry.priority} {entry.name}"
            for entry in self.inspect(stage)
        )

    def __len__(self) -> int:
        return len(self._definitions)

    def __repr__(self) -> str:
        return f"MiddlewarePipeline({len(self._definitions)} definitions)"

    # -- execution ------------------------------------------------------------------------------

    async def run(
        self,
        stage: MiddlewareStage | str,
        ctx: C,
        terminal: Callable[[C], T | Awaitable[T]],
    ) -> T:
        """Run ``stage``: the handlers in order around ``terminal``.

        Raises:
            UnknownMiddlewareStageError: ``stage`` is not a stage.
            MiddlewareContextError: ``ctx`` is not a :class:`MiddlewareContext`.
            MiddlewareDeadlineExceededError: the deadline passed before a handler or the terminal.
            MiddlewareNextCalledTwiceError: a handler called ``next()`` twice.
            MiddlewareTimeoutError: a handler exceeded ``ctx.hook_timeout_ms``.
            BaseException: the abort reason of ``ctx.signal`` (the same object), or whatever a
                handler or the terminal raised.
        """
        current = as_middleware_stage(stage)
        staged = self._stage_context(current, ctx)
        return await self._dispatch(current, staged, terminal)

    async def run_with_error_stage(
        self,
        stage: MiddlewareStage | str,
        ctx: C,
        terminal: Callable[[C], T | Awaitable[T]],
    ) -> T:
        """:meth:`run`, and on failure the onError stage (which may recover with a value).

        An onError handler that returns without calling ``next()`` recovers: its value becomes
        the stage result. Calling ``next()`` re-raises the original error (the same object).
        Cancellation (``BaseException``) is never routed to onError.

        Raises:
            MiddlewareConfigurationError: ``stage`` is onError itself.
        """
        current = as_middleware_stage(stage)
        if current is MiddlewareStage.ON_ERROR:
            raise MiddlewareConfigurationError("run_with_error_stage cannot run the onError stage.")
        staged = self._stage_context(current, ctx)
        try:
            return await self._dispatch(current, staged, terminal)
        except Exception as error:
            if MiddlewareStage.ON_ERROR not in self._by_stage:
                raise
            failure = error
            error_ctx = MiddlewareErrorContext(
                signal=ctx.signal,
                deadline=ctx.deadline,
                hook_timeout_ms=ctx.hook_timeout_ms,
                stage=MiddlewareStage.ON_ERROR,
                failed_stage=current,
                error=error,
                source_context=ctx,
            )

            def reraise(_: MiddlewareErrorContext) -> T:
                raise failure

            return await self._dispatch(MiddlewareStage.ON_ERROR, error_ctx, reraise)

    async def run_wrap(
        self,
        stage: MiddlewareStage | str,
        ctx: C,
        terminal: Callable[[C], T | Awaitable[T]],
        *,
        require_identity: bool,
        error_stage: bool = True,
    ) -> T:
        """Run a wrap stage (wrapModelCall / wrapToolCall) and enforce its invariants (§3.7).

        The terminal must have completed successfully (no skipped ``next()``, no onError
        "recovery" of a terminal failure); with ``require_identity`` the stage must return the
        very object the terminal returned.

        Raises:
            MiddlewareInvariantViolationError: an invariant was broken.
        """
        current = as_middleware_stage(stage)
        produced: object = _NOT_SET

        async def guarded(staged: C) -> T:
            nonlocal produced
            value = terminal(staged)
            if inspect.isawaitable(value):
                value = await cast(Awaitable[T], value)
            produced = value
            return cast(T, value)

        if error_stage:
            result = await self.run_with_error_stage(current, ctx, guarded)
        else:
            result = await self.run(current, ctx, guarded)
        if produced is _NOT_SET:
            raise MiddlewareInvariantViolationError(current, _skipped_message(current))
        if require_identity and result is not produced:
            raise MiddlewareInvariantViolationError(current, _identity_message(current))
        return result

    # -- internals ------------------------------------------------------------------------------

    def _stage_context(self, stage: MiddlewareStage, ctx: C) -> C:
        if not isinstance(ctx, MiddlewareContext):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise MiddlewareContextError(
                f"Middleware context must be a MiddlewareContext; got {type(ctx).__name__}."
            )
        if ctx.stage is stage:
            return ctx
        return attrs.evolve(ctx, stage=stage)

    def _check(self, stage: MiddlewareStage, ctx: MiddlewareContext) -> None:
        signal = ctx.signal
        if signal.aborted:
            reason = signal.reason
            if isinstance(reason, BaseException):
                raise reason
            raise AbortError(reason=reason)
        deadline = ctx.deadline
        if deadline is not None and self._clock() >= deadline.expires_at:
            raise MiddlewareDeadlineExceededError(stage, deadline.expires_at, deadline.scope)

    async def _dispatch(
        self, stage: MiddlewareStage, ctx: C, terminal: Callable[[C], T | Awaitable[T]]
    ) -> T:
        handlers = self._by_stage.get(stage, ())

        async def call(index: int) -> Any:
            self._check(stage, ctx)
            if index == len(handlers):
                value = terminal(ctx)
                if inspect.isawaitable(value):
                    value = await value
                return value
            return await self._call_handler(stage, ctx, handlers[index], lambda: call(index + 1))

        return cast(T, await call(0))

    async def _call_handler(
        self,
        stage: MiddlewareStage,
        ctx: MiddlewareContext,
        definition: MiddlewareDefinition,
        downstream: Callable[[], Awaitable[Any]],
    ) -> Any:
        limit_ms = self._handler_budget_ms(ctx)
        called = False
        if limit_ms is None:

            async def next_plain() -> Any:
                nonlocal called
                if called:
                    raise MiddlewareNextCalledTwiceError(stage, definition.name)
                called = True
                return await downstream()

            value = definition.handle(ctx, next_plain)
            if inspect.isawaitable(value):
                value = await value
            return value

        loop = asyncio.get_running_loop()
        scope = asyncio.timeout(None)
        remaining = limit_ms / 1000.0
        inside = False

        async def next_timed() -> Any:
            nonlocal called, remaining
            if called:
                raise MiddlewareNextCalledTwiceError(stage, definition.name)
            called = True
            paused = inside and not scope.expired()
            if paused:
                when = scope.when()
                if when is not None:
                    remaining = max(0.0, when - loop.time())
                scope.reschedule(None)
            try:
                return await downstream()
            finally:
                if paused and inside and not scope.expired():
                    scope.reschedule(loop.time() + remaining)

        try:
            async with scope:
                inside = True
                scope.reschedule(loop.time() + remaining)
                value = definition.handle(ctx, next_timed)
                if inspect.isawaitable(value):
                    value = await value
                inside = False
                return value
        except TimeoutError:
            inside = False
            if not scope.expired():
                raise
            deadline = ctx.deadline
            if deadline is not None and self._clock() >= deadline.expires_at:
                raise MiddlewareDeadlineExceededError(
                    stage, deadline.expires_at, deadline.scope
                ) from None
            raise MiddlewareTimeoutError(
                stage, definition.name, ctx.hook_timeout_ms or limit_ms
            ) from None
        finally:
            inside = False

    def _handler_budget_ms(self, ctx: MiddlewareContext) -> float | None:
        limits: list[float] = []
        if ctx.hook_timeout_ms is not None:
            limits.append(ctx.hook_timeout_ms)
        if ctx.deadline is not None:
            limits.append(max(0.0, ctx.deadline.expires_at - self._clock()))
        return min(limits) if limits else None


def _skipped_message(stage: MiddlewareStage) -> str:
    if stage is MiddlewareStage.WRAP_TOOL_CALL:
        return (
            "Middleware at wrapToolCall cannot replace ToolRunner policy/schema validation; "
            "call next()."
        )
    if stage is MiddlewareStage.WRAP_MODEL_CALL:
        return (
            "Middleware at wrapModelCall must call next() exactly once and let the provider "
            "call succeed."
        )
    return f"Middleware at {stage.value} must call next() and let it complete."


def _identity_message(stage: MiddlewareStage) -> str:
    if stage is MiddlewareStage.WRAP_TOOL_CALL:
        return "Middleware at wrapToolCall must return the validated ToolRunner output unchanged."
    return f"Middleware at {stage.value} must return the terminal result unchanged."


class MiddlewarePipelineBuilder:
    """Collects definitions and builds a :class:`MiddlewarePipeline`."""

    __slots__ = ("_clock", "_definitions")

    def __init__(self, *, clock: Callable[[], float] = _epoch_ms) -> None:
        self._definitions: list[MiddlewareDefinition | Mapping[str, Any]] = []
        self._clock = clock

    def use(
        self, definition: MiddlewareDefinition | Mapping[str, Any]
    ) -> MiddlewarePipelineBuilder:
        """Add one definition (validated now); returns self."""
        self._definitions.append(define_middleware(definition))
        return self

    def use_all(
        self, definitions: Iterable[MiddlewareDefinition | Mapping[str, Any]]
    ) -> MiddlewarePipelineBuilder:
        """Add several definitions; returns self."""
        for definition in definitions:
            self.use(definition)
        return self

    def build(self) -> MiddlewarePipeline:
        """The pipeline (priority conflicts raise here)."""
        return MiddlewarePipeline(self._definitions, clock=self._clock)


def create_middleware_pipeline_builder(
    *, clock: Callable[[], float] = _epoch_ms
) -> MiddlewarePipelineBuilder:
    """A new :class:`MiddlewarePipelineBuilder`."""
    return MiddlewarePipelineBuilder(clock=clock)


def build_middleware_pipeline(
    definitions: Iterable[MiddlewareDefinition | Mapping[str, Any]],
    *,
    clock: Callable[[], float] = _epoch_ms,
) -> MiddlewarePipeline:
    """``MiddlewarePipeline(definitions)``."""
    return MiddlewarePipeline(definitions, clock=clock)
