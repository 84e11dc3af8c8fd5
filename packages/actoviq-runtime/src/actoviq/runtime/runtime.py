"""``AgentRuntime``: the single owner of models, tools, middleware, services, events and runs.

Example:
    >>> # async with AgentRuntime(models=ModelRegistry([ScriptedProvider(["hi"])])) as runtime:
    >>> #     result = await runtime.run(agent, "hello")
    >>> #     async with runtime.stream(agent, "hello") as handle:
    >>> #         async for event in handle: ...
    >>> #     if result.status == "interrupted":
    >>> #         handle = runtime.resume(result.state, [InterruptionDecision.approve(...)])
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, Final, Self, TypeVar, Unpack, cast

from actoviq.core import (
    DEFAULT_RUN_LIMITS,
    AbortSignal,
    AgentSpec,
    CanonicalItem,
    Interruption,
    JsonValue,
    ModelRefParts,
    ModelSettings,
    RunLimits,
    RunLimitsPatch,
    RunResult,
)
from actoviq.events import (
    DEFAULT_SINK_TIMEOUT,
    Clock,
    EventDispatcher,
    EventProcessor,
    EventSink,
    FailureMode,
    IdFactory,
    RandomIdFactory,
    RedactionPolicy,
    Redactor,
    SystemClock,
    default_processors,
)
from actoviq.providers import ModelRegistry, models_from_environment
from actoviq.runtime.agents import agent_digest, build_agent_entry, resolve_limits
from actoviq.runtime.concurrency import RunGate, SessionLocks
from actoviq.runtime.errors import (
    AgentRegistrationError,
    AgentSpecTypeError,
    RunAlreadyActiveError,
    RunCancelledError,
    RunStateStaleError,
    RuntimeClosedError,
    RuntimeConfigurationError,
)
from actoviq.runtime.execution import RunExecution, RunSeed
from actoviq.runtime.handle import BufferPolicy, EventBuffer, RunHandle
from actoviq.runtime.handoff import HandoffRequest, check_handoff_request, prepare_handoff
from actoviq.runtime.inline_run import can_host, run_in_caller
from actoviq.runtime.loop import execute
from actoviq.runtime.middleware import MiddlewareDefinition, MiddlewarePipeline, MiddlewareRegistry
from actoviq.runtime.parts import AgentEntry, RuntimeParts
from actoviq.runtime.resume import (
    check_decisions,
    check_resumable,
    deadline_invalid,
    resume_seed,
)
from actoviq.runtime.run_ledger import RunLedger
from actoviq.runtime.run_setup import (
    RunOptions,
    adopted_trace,
    cancel_reason,
    check_run_options,
    consume_task,
    fresh_seed,
)
from actoviq.runtime.runtime_options import (
    check_host_event_type,
    check_runtime_options,
    checkpoint_store_from,
    register_sessions,
)
from actoviq.runtime.services import RuntimeServices
from actoviq.runtime.state import SerializedRunState
from actoviq.runtime.stores import (
    DEFAULT_LEASE_MS,
    CheckpointStore,
    RunCheckpointStore,
    RuntimeSessionStore,
    SessionStore,
    pending_interruptions,
)
from actoviq.runtime.tools import (
    InterruptionDecision,
    RuntimeTool,
    ToolErrorFormatter,
    ToolPolicy,
    ToolRegistry,
    ToolRunner,
)
from actoviq.runtime.tools.threads import ToolThreads

__all__ = ["DEFAULT_MAX_CONCURRENT_RUNS", "DEFAULT_MAX_TOOL_THREADS", "AgentInput", "AgentRuntime"]

DEFAULT_MAX_CONCURRENT_RUNS: Final = 64
"""How many runs one runtime executes at once by default."""
DEFAULT_MAX_TOOL_THREADS: Final = min(32, (os.cpu_count() or 1) + 4)
"""Worker threads for plain (non-``async``) tools: the size of asyncio's default executor."""
TOutput = TypeVar("TOutput")
_new_run_id: Final = RandomIdFactory().event_id  # UUIDv4 text, like str(uuid.uuid4())

AgentInput = str | CanonicalItem | Sequence[CanonicalItem]
"""What a run starts from: text (a user message), one canonical item, or a list of items."""


class AgentRuntime:
    """Owns everything live and runs agents (spec 03 §1, decisions D5/D6).

    Args:
        models: the model registry (default: ``models_from_environment()``, keys from env).
        tools: a :class:`ToolRegistry` or tools to register.
        tool_policy: asked for every tool call; disables parallel read batches.
        services: the lazy service container (``sessions`` is resolved only for session runs).
        middleware: a pipeline or middleware definitions (conflicts raise here).
        middleware_registry: resolves ``AgentSpec.middleware`` references.
        event_processors: run after the built-in redaction processor (always first).
        event_sinks: receive every processed event.
        event_failure_mode: ``"raise"`` (a failing sink fails the run) or ``"isolate"``.
        redaction: the redaction policy of the built-in processor (on by default).
        sink_timeout: seconds a sink write may take.
        sessions: session history for ``run(..., session_id=)``: a ``RuntimeSessionStore`` or
            a storage ``SessionStore`` (wrapped); registered as the ``sessions`` service.
        checkpoints: a ``RunCheckpointStore`` (``storage.runtime_checkpoints()``) or a storage
            ``CheckpointStore`` (wrapped); the same as ``checkpoint_store`` (give one).
        checkpoint_store: receives the serialised state before each state-changing event. A
            :class:`~actoviq.runtime.stores.ClaimingRunCheckpointStore` (the store adapters)
            makes ``resume`` exactly-once across processes (see :meth:`resume`).
        checkpoint_lease_ms: how long a run's claim on its checkpoint outlives the holder's last
            renewal (renewed every third of it while the run executes): after a crash, the run
            can be resumed elsewhere once this much time has passed.
        default_model: used when an agent declares no model.
        default_limits: merged over the built-in limits (validated here).
        agents: registered up front (needed by ``resume`` in a new process).
        max_concurrent_runs: run permits (FIFO).
        stream_buffer_policy: ``"drop-deltas"`` or ``"block"`` for stream handles.
        tool_error_formatter: formats tool failures for the model.
        max_tool_threads: the bounded pool plain (non-``async``) tools run in, off the loop; a
            timed-out plain tool finishes in its thread and its result is discarded.
        ids / clock: id factory (trace, span, event ids) and event clock (inject in tests).

    Raises:
        RuntimeConfigurationError / ModelRegistryError: an invalid option; no models anywhere.
    """

    def __init__(
        self,
        *,
        models: ModelRegistry | None = None,
        tools: ToolRegistry | Iterable[RuntimeTool] | None = None,
        tool_policy: ToolPolicy | None = None,
        services: RuntimeServices | None = None,
        sessions: RuntimeSessionStore | SessionStore | None = None,
        checkpoints: RunCheckpointStore | CheckpointStore | None = None,
        middleware: MiddlewarePipeline | Iterable[MiddlewareDefinition] | None = None,
        middleware_registry: MiddlewareRegistry | None = None,
        event_processors: Iterable[EventProcessor] = (),
        event_sinks: Iterable[EventSink] = (),
        event_failure_mode: FailureMode = "raise",
        redaction: RedactionPolicy | None = None,
        sink_timeout: float | None = DEFAULT_SINK_TIMEOUT,
        checkpoint_store: RunCheckpointStore | None = None,
        checkpoint_lease_ms: int = DEFAULT_LEASE_MS,
        default_model: str | ModelRefParts | None = None,
        default_limits: RunLimitsPatch | None = None,
        agents: Iterable[AgentSpec[Any, Any]] = (),
        max_concurrent_runs: int = DEFAULT_MAX_CONCURRENT_RUNS,
        stream_buffer_policy: BufferPolicy = "drop-deltas",
        tool_error_formatter: ToolErrorFormatter | None = None,
        max_tool_threads: int = DEFAULT_MAX_TOOL_THREADS,
        ids: IdFactory | None = None,
        clock: Clock | None = None,
    ) -> None:
        check_runtime_options(
            (max_concurrent_runs, max_tool_threads, checkpoint_lease_ms, stream_buffer_policy),
            (models, tools, event_sinks, default_limits, redaction, tool_policy, services),
        )
        self.models = models = models if models is not None else models_from_environment()
        self.tools = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools or ())
        self.tool_policy = tool_policy
        self.services = services if services is not None else RuntimeServices()
        if sessions is not None:
            register_sessions(self.services, sessions)
        checkpoint_store = checkpoint_store_from(checkpoints, checkpoint_store)
        self.middleware = (
            middleware
            if isinstance(middleware, MiddlewarePipeline)
            else MiddlewarePipeline(middleware or ())
        )
        self.middleware_registry = (
            middleware_registry if middleware_registry is not None else MiddlewareRegistry()
        )
        self.dispatcher = EventDispatcher(
            [*default_processors(redaction), *event_processors],
            event_sinks,
            failure_mode=event_failure_mode,
            sink_timeout=sink_timeout,
        )
        self.checkpoint_store = checkpoint_store
        self.default_limits: RunLimits = DEFAULT_RUN_LIMITS.merged(default_limits)
        self._default_model = default_model if default_model is not None else models.default_model
        self._ids = ids if ids is not None else RandomIdFactory()
        self._tool_threads = ToolThreads(max_tool_threads, thread_name_prefix="actoviq-tool")
        self._parts = RuntimeParts(
            runtime=self,
            models=models,
            tools=self.tools,
            runner=ToolRunner(
                self.tools,
                policy=tool_policy,
                error_formatter=tool_error_formatter,
                executor=self._tool_threads,
                redactor=Redactor(redaction),
            ),
            policy_configured=tool_policy is not None,
            services=self.services,
            dispatcher=self.dispatcher,
            checkpoint_store=checkpoint_store,
            session_locks=SessionLocks(),
            gate=RunGate(max_concurrent_runs),
            ids=self._ids,
            clock=clock if clock is not None else SystemClock(),
            default_model=self._default_model,
            buffer_policy=stream_buffer_policy,
            lease_ms=checkpoint_lease_ms,
            ledger=RunLedger(),
            redaction=redaction,
        )
        self._agents: dict[str, AgentEntry] = {}
        self._active: dict[str, RunExecution] = {}
        self._drained: asyncio.Future[None] | None = None
        self._closed = False
        for agent in agents:
            self.register_agent(agent)

    async def pending(self, run_id: str) -> tuple[Interruption, ...]:
        """The open interruptions of run ``run_id``'s stored state (empty when none).

        Build ``InterruptionDecision`` values from them and :meth:`resume` the stored state.

        Raises:
            RuntimeConfigurationError: the runtime has no checkpoint store.
            StorageDataError: the stored state is malformed.
        """
        if (store := self.checkpoint_store) is None:
            raise RuntimeConfigurationError("pending() needs a checkpoint store (checkpoints=).")
        return await pending_interruptions(store, run_id)

    # -- agents -----------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """True once :meth:`close` started."""
        return self._closed

    @property
    def active_runs(self) -> int:
        """How many runs are executing or queued."""
        return len(self._active)

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeClosedError()

    def agent_digest(self, agent: AgentSpec[Any, Any]) -> str:
        """The agent's config digest: its declaration plus its registered tools' contracts (D3)."""
        return agent_digest(agent, self.tools)

    def _build_entry(self, agent: AgentSpec[Any, Any], digest: str) -> AgentEntry:
        return build_agent_entry(
            agent, digest, middleware=self.middleware, registry=self.middleware_registry
        )

    def _entry(self, agent: AgentSpec[Any, Any]) -> AgentEntry:
        entry = self._agents.get(agent.id) if isinstance(agent, AgentSpec) else None  # pyright: ignore[reportUnnecessaryIsInstance]
        if entry is not None and entry.spec is agent:
            return entry
        self.register_agent(agent)
        return self._agents[agent.id]

    def register_agent(self, agent: AgentSpec[Any, Any]) -> Self:
        """Register ``agent`` (chainable); re-registering an equal-digest spec is a no-op.

        Raises:
            AgentSpecTypeError: ``agent`` is not an :class:`AgentSpec` (a ``TypeError`` too).
            AgentRegistrationError: another spec with a different digest owns the id.
            MiddlewareRegistryError: an unknown middleware reference.
            MiddlewarePriorityConflictError: agent and runtime middleware clash.
        """
        if not isinstance(agent, AgentSpec):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise AgentSpecTypeError(f"Expected an AgentSpec, got {type(agent).__name__}.")
        existing = self._agents.get(agent.id)
        if existing is not None and existing.spec is agent:
            return self
        digest = self.agent_digest(agent)
        if existing is not None:
            if existing.digest != digest:
                raise AgentRegistrationError(agent.id)
            return self
        self._agents[agent.id] = self._build_entry(agent, digest)
        return self

    def get_agent(self, agent_id: str) -> AgentSpec[Any, Any] | None:
        """The registered agent with that id, or None."""
        entry = self._agents.get(agent_id)
        return entry.spec if entry is not None else None

    def inspect_middleware(self, agent: AgentSpec[Any, Any] | None = None) -> str:
        """The middleware chain (runtime's, or the agent's composed one) as text lines."""
        if agent is None:
            return self.middleware.format()
        entry = self._agents.get(agent.id)
        if entry is not None and entry.spec is agent and entry.pipeline is not None:
            return entry.pipeline.format()
        return self._build_entry(agent, "").pipeline.format()  # type: ignore[union-attr]

    def _fresh(
        self,
        agent: AgentSpec[Any, Any],
        input: object,
        streaming: bool,
        options: RunOptions,
        inline: bool = False,
    ) -> RunExecution:
        self._check_open()
        check_run_options(options)
        entry = self._entry(agent)
        limits = options.get("limits")
        resolved = resolve_limits(entry, self.default_limits, limits)
        run_id = options.get("run_id")
        trace = adopted_trace(run_id, options)
        if run_id is None:
            run_id = trace.run_id if trace is not None else _new_run_id()
        if run_id in self._active:
            raise RunAlreadyActiveError(run_id)
        seed = fresh_seed(
            agent, entry.digest, run_id, input, options, resolved, streaming, self._ids
        )
        return self._launch(entry, seed, inline)

    def _launch(self, entry: AgentEntry, seed: RunSeed, inline: bool = False) -> RunExecution:
        buffer = (
            EventBuffer(seed.limits.stream_buffer_size, self._parts.buffer_policy)
            if seed.streaming
            else None
        )
        execution = RunExecution(self._parts, entry, seed, buffer=buffer)
        self._active[execution.run_id] = execution
        if inline:
            return execution  # run() executes it in the caller's task
        task = asyncio.get_running_loop().create_task(self._drive(execution))
        execution.task = task
        task.add_done_callback(consume_task)
        return execution

    async def _drive(self, execution: RunExecution) -> RunResult[Any]:
        try:
            return await execute(execution)
        finally:
            self._ended(execution)

    def _ended(self, execution: RunExecution) -> None:
        if execution.unlink_caller is not None:
            execution.unlink_caller()  # a long-lived caller signal keeps no dead listener
        execution.release()  # no reference cycle left for the garbage collector
        if self._active.get(execution.run_id) is execution:
            del self._active[execution.run_id]
        if execution.buffer is not None:
            execution.buffer.close()
        if execution.inline and (drained := self._drained) is not None and not drained.done():
            drained.set_result(None)  # close() re-checks the runs hosted by their callers

    def _handle(self, execution: RunExecution) -> RunHandle[Any]:
        handle: RunHandle[Any] = RunHandle(
            execution.run_id,
            buffer=execution.buffer,
            cancel=lambda reason: execution.abort(cancel_reason(reason)),
            snapshot=execution.snapshot_json,
        )
        assert execution.task is not None
        handle._attach(execution.task)  # pyright: ignore[reportPrivateUsage]
        return handle

    async def run(
        self, agent: AgentSpec[Any, TOutput], input: AgentInput, **options: Unpack[RunOptions]
    ) -> RunResult[TOutput]:
        """Run ``agent`` to completion with non-streaming model calls.

        ``options`` are the keyword options of :class:`~actoviq.runtime.run_setup.RunOptions`
        (``context``, ``signal``, ``session_id``, ``tenant_id``, ``expected_session_revision``,
        ``workspace_id``, ``metadata``, ``run_id``, ``parent_run_id``, ``parent_trace``,
        ``trace``, ``limits``, ``model_settings``, ``session_history``; all default None).

        Returns a :class:`RunResult` with status ``completed``, ``interrupted`` (see
        ``result.interruptions`` / ``result.state``) or ``cancelled``; raises when the run fails.
        The result is typed by the agent's output: ``RunResult[str]`` for a text agent,
        ``RunResult[City]`` for ``AgentSpec(output=City)`` (``output`` is the validated value of a
        completed run; ``""`` for an interrupted or cancelled one).
        """
        host = asyncio.current_task()
        if can_host(host):  # the run executes in this task (actoviq.runtime.inline_run)
            execution = self._fresh(agent, input, False, options, inline=True)
            return await run_in_caller(execution, cast(asyncio.Task[Any], host), self._ended)
        execution = self._fresh(agent, input, False, options)
        task = execution.task
        assert task is not None
        try:
            return cast(RunResult[TOutput], await asyncio.shield(task))
        except asyncio.CancelledError:
            if not task.done():
                execution.abort(RunCancelledError("Run caller was cancelled."))
                await asyncio.wait({task})
            raise

    def stream(
        self, agent: AgentSpec[Any, TOutput], input: AgentInput, **options: Unpack[RunOptions]
    ) -> RunHandle[TOutput]:
        """Start ``agent`` with streaming model calls and return its :class:`RunHandle` at once.

        ``options`` are the same keyword options as :meth:`run`.
        """
        return cast(RunHandle[TOutput], self._handle(self._fresh(agent, input, True, options)))

    def resume(
        self,
        state: SerializedRunState | Mapping[str, Any] | None,
        decisions: Iterable[InterruptionDecision] = (),
        *,
        context: Any = None,
        signal: AbortSignal | None = None,
        limits: RunLimitsPatch | None = None,
        model_settings: ModelSettings | None = None,
    ) -> RunHandle[Any]:
        """Continue an interrupted (or crashed) run from its serialised state, exactly once.

        ``model_settings`` are merged over the run's own (those given to ``run``/``stream``,
        kept in the state) for the rest of the run.

        The pending calls of the interrupted turn are finished first (decisions apply to them),
        then the turn loop continues; event sequences continue after ``lastEventSequence``; the
        run deadline restarts from the remaining budget (or ``limits.run_deadline_ms``).

        Exactly-once (decision D10, ``docs/decisions.md``): the resumed execution first claims
        the run (atomically with a claiming store); an older, completed or already-held state is
        refused with :class:`RunStateStaleError` before anything runs or is emitted, here when
        this runtime knows the answer, else from ``handle.result()``.

        Raises:
            RuntimeClosedError: the runtime is closed.
            RunStateVersionError / RunStateError: unsupported version or missing identity.
            RunError: ``AGENT_NOT_REGISTERED`` or ``AGENT_CONFIG_MISMATCH``.
            RunStateStaleError: the run is executing here, completed, or the state is stale.
            InterruptionDecisionError / ReconciliationDecisionError: a decision names no open
                interruption or does not fit its call.
        """
        self._check_open()
        parsed = SerializedRunState.from_json(state)
        entry = check_resumable(parsed, self._agents.get(parsed.agent_id))
        if parsed.run_id in self._active:
            raise RunStateStaleError(
                parsed.run_id,
                stored_status="running",
                reason="claimed",
                message=f'Run "{parsed.run_id}" is already active in this runtime.',
            )
        refusal = self._parts.ledger.refusal(parsed)
        if refusal is not None:
            raise refusal
        seed, invalid_deadline = resume_seed(
            parsed,
            check_decisions(parsed, decisions),
            resolve_limits(entry, self.default_limits, limits),
            limits,
            context=context,
            signal=signal,
            model_settings=model_settings,
        )
        execution = self._launch(entry, seed)
        if invalid_deadline:
            execution.fail_at_start(deadline_invalid(parsed.run_id))
        return self._handle(execution)

    async def before_handoff(self, request: HandoffRequest) -> list[CanonicalItem]:
        """The explicit handoff lifecycle (03 §1.21): validate, run ``beforeHandoff``.

        Returns the child run's input (middleware may rewrite it; it must stay canonical).

        Raises:
            RuntimeClosedError / HandoffRequestError / MiddlewareInvariantViolationError: see
                :func:`actoviq.runtime.handoff.prepare_handoff`; an aborted signal's reason.
        """
        self._check_open()
        request = check_handoff_request(request)
        source = self.get_agent(request.source_agent_id)
        pipeline = self.middleware
        entry = self._agents.get(source.id) if source is not None else None
        if entry is not None and entry.pipeline is not None:
            pipeline = entry.pipeline
        parent = self._active.get(request.parent_run_id)
        return await prepare_handoff(
            request,
            runtime=self,
            pipeline=pipeline,
            services=self.services,
            source=source,
            hook_timeout_ms=self.default_limits.hook_timeout_ms,
            parent=parent.emit if parent is not None else None,
        )

    def is_run_active(self, run_id: str) -> bool:
        """True while ``run_id`` is executing on this runtime (``emit_run_event`` would emit)."""
        execution = self._active.get(run_id)
        return execution is not None and not execution.terminal

    async def emit_run_event(self, run_id: str, type: str, data: JsonValue = None) -> bool:
        """Emit a host event into an executing run: its sequence, sinks and stream.

        For layers above the runtime (orchestration reports its children in the parent run).
        Returns False, emitting nothing, when ``run_id`` is not executing on this runtime.

        Raises:
            RunError: ``RUN_EVENT_RESERVED`` for one of the runtime's own event types.
        """
        check_host_event_type(type, run_id)
        execution = self._active.get(run_id)
        if execution is None or execution.terminal:
            return False
        await execution.emit(type, data, host=True)
        return True

    def run_sync(
        self, agent: AgentSpec[Any, TOutput], input: AgentInput, **options: Unpack[RunOptions]
    ) -> RunResult[TOutput]:
        """Convenience for scripts: ``asyncio.run(runtime.run(...))`` (no running loop allowed)."""
        return asyncio.run(self.run(agent, input, **options))

    # -- lifecycle --------------------------------------------------------------------------------

    async def close(self) -> None:
        """Cancel runs (awaited), then close sinks, services and models, in that order.

        Idempotent. Runs in progress end ``cancelled``. The tool thread pool is shut down
        without waiting: a plain tool still running (it cannot be interrupted) finishes in its
        thread and its result is discarded.

        Raises:
            ExceptionGroup: "AgentRuntime close failed." with every close failure.
        """
        if self._closed:
            return
        self._closed = True
        executions = list(self._active.values())
        for execution in executions:
            execution.abort(RunCancelledError("AgentRuntime closed."))
        tasks = {e.task for e in executions if e.task is not None and not e.inline}
        if tasks:
            await asyncio.wait(tasks)
        while any(execution.inline for execution in self._active.values()):
            self._drained = asyncio.get_running_loop().create_future()
            await self._drained  # set when a run hosted by its caller's task ends
        self._tool_threads.shutdown(wait=False, cancel_futures=True)
        errors: list[Exception] = []
        for closer in (self.dispatcher.aclose, self.services.close, self.models.aclose):
            try:
                await closer()
            except ExceptionGroup as group:
                errors.extend(group.exceptions)
            except Exception as error:
                errors.append(error)
        if errors:
            raise ExceptionGroup("AgentRuntime close failed.", errors)

    async def aclose(self) -> None:
        """Alias of :meth:`close`."""
        await self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
