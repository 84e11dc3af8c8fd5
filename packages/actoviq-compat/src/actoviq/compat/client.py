"""``create_agent_sdk`` → ``AgentClient``: the 0.x client shape over the one ``AgentRuntime``.

The client owns exactly one :class:`~actoviq.runtime.AgentRuntime` (one provider registry, one
tool registry, one event pipeline): every ``run`` and ``stream`` is a runtime run of an
:class:`~actoviq.core.AgentSpec` built from the options (ADR-008: the façade never grows a
second engine). What the 0.x result needs and the runtime's result does not carry is observed
by two recording middleware (``actoviq.compat.recorder``).

Example:
    >>> async def main() -> None:  # doctest: +SKIP
    ...     async with await create_agent_sdk(provider="openai", model="gpt-4.1-mini") as sdk:
    ...         result = await sdk.run("Explain CAS in one sentence.", systemPrompt="Be brief.")
    ...         print(result.text, result.usage)
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncGenerator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Self, Unpack, cast

import attrs

from actoviq.compat._setup import (
    DEFAULT_LEGACY_MODEL,
    AgentCache,
    build_provider,
    check_model,
    convert_input,
    limits_patch,
    model_settings,
)
from actoviq.compat._translate import translate_run
from actoviq.compat.diagnostics import compat_symbol
from actoviq.compat.errors import (
    CompatConfigurationError,
    CompatRunInterruptedError,
    SessionConflictError,
)
from actoviq.compat.events import PermissionDecision
from actoviq.compat.legacy_store import LegacyJsonV1SessionStore, StoredRunSummary
from actoviq.compat.options import (
    CLIENT_OPTIONS,
    CLIENT_REPLACEMENTS,
    RUN_OPTIONS,
    RUN_REPLACEMENTS,
    AgentRunOptions,
    CreateAgentSdkOptions,
    check_options,
)
from actoviq.compat.permissions import CompatToolPolicy, PermissionSettings
from actoviq.compat.recorder import RunRecorder, RunRecords
from actoviq.compat.results import AgentRunResult, build_result
from actoviq.compat.stream import (
    DEFAULT_MAX_BUFFERED_EVENTS,
    AgentRunStream,
    OverflowStrategy,
    check_buffer_options,
)
from actoviq.core import AgentSpec, CanonicalItem, ModelSettings, RunLimitsPatch, RunResult
from actoviq.providers import ModelRegistry
from actoviq.providers.legacy import MessageParam
from actoviq.runtime import (
    AgentInput,
    AgentRuntime,
    RunCancelledError,
    RunHandle,
    RuntimeClosedError,
    RuntimeServices,
    StoreRuntimeSessionAdapter,
    ToolRegistry,
)

__all__ = ["AgentClient", "AgentSession", "AgentStreamOptions", "create_agent_sdk"]

_SUMMARY_ATTEMPTS = 5
_STREAM_OPTIONS = frozenset({"maxBufferedEvents", "overflow", "coalesceDeltas"})


class AgentStreamOptions(AgentRunOptions, total=False):
    """``AgentClient.stream`` options: the run options plus the buffer's.

    Attributes:
        maxBufferedEvents: buffer size, terminal slot included (default 256, at least 2).
        overflow: ``"throw"`` (default), ``"drop-oldest"``, ``"drop-newest"`` or ``"block"``.
        coalesceDeltas: merge adjacent deltas while they wait (default True).
    """

    maxBufferedEvents: int
    overflow: OverflowStrategy
    coalesceDeltas: bool


@attrs.define(kw_only=True)
class _RunPlan:
    run_id: str
    agent: AgentSpec[Any, Any]
    input: AgentInput
    input_items: list[CanonicalItem]
    prompt: str
    raw_input: Any
    model: str
    session_id: str | None
    run_kwargs: dict[str, Any]
    permissions: PermissionSettings | None


@attrs.define
class _RunControl:
    """Cancellation of a streamed run that may not have reached the runtime yet."""

    handle: RunHandle[Any] | None = None
    reason: str | None = None

    def cancel(self, reason: str) -> None:
        self.reason = self.reason or reason
        if self.handle is not None:
            self.handle.cancel(reason)


class AgentClient:
    """The 0.x client: ``run``, ``stream``, sessions and an idempotent ``close``.

    Build it with :func:`create_agent_sdk`. It is an async context manager; ``close()`` cancels
    open streams, then closes the runtime (providers, services) and reports every failure in
    one ``ExceptionGroup``.

    Attributes:
        runtime: the one :class:`~actoviq.runtime.AgentRuntime` every run goes through (use it
            to resume interrupted runs, or to migrate callers off the façade).
    """

    def __init__(
        self,
        *,
        runtime: AgentRuntime,
        provider_id: str,
        model: str,
        system_prompt: str | None,
        tool_names: tuple[str, ...],
        settings: ModelSettings | None,
        recorder: RunRecorder,
        policy: CompatToolPolicy | None,
        store: LegacyJsonV1SessionStore | None,
    ) -> None:
        self.runtime = runtime
        self._provider_id = provider_id
        self._model = model
        self._system_prompt = system_prompt
        self._agents = AgentCache(provider_id, tool_names, settings)
        self._recorder = recorder
        self._policy = policy
        self._store = store
        self._streams: set[AgentRunStream] = set()
        self._closed = False

    @property
    def closed(self) -> bool:
        """True once :meth:`close` started."""
        return self._closed

    @property
    def sessions(self) -> LegacyJsonV1SessionStore:
        """The JSON v1 session store of ``sessionDirectory``.

        Raises:
            CompatConfigurationError: the client has no ``sessionDirectory``.
        """
        if self._store is None:
            raise CompatConfigurationError(
                "This client has no sessions: pass sessionDirectory to create_agent_sdk."
            )
        return self._store

    # -- planning -------------------------------------------------------------------------------

    def _plan(self, input: object, options: Mapping[str, Any], where: str) -> _RunPlan:
        check_options(options, RUN_OPTIONS, RUN_REPLACEMENTS, where)
        if self._closed:
            raise RuntimeClosedError()
        model = check_model(options.get("model", self._model))
        agent = self._agents.get(options.get("systemPrompt", self._system_prompt), model)
        runtime_input, items, prompt = convert_input(input, self._provider_id)
        run_id = str(uuid.uuid4())
        run_kwargs: dict[str, Any] = {"run_id": run_id}
        if options.get("signal") is not None:
            run_kwargs["signal"] = options["signal"]
        session_id = options.get("sessionId")
        if session_id is not None:
            self.sessions.root  # noqa: B018 (raises when the client has no sessionDirectory)
            run_kwargs["session_id"] = session_id
        permissions = None
        if "permissionMode" in options or "permissions" in options:
            if self._policy is None:
                raise CompatConfigurationError(
                    "Per-run permissionMode/permissions need a permission policy: pass "
                    "permissionMode or permissions to create_agent_sdk."
                )
            default = self._policy.default
            permissions = PermissionSettings(
                options.get("permissionMode", default.mode),
                options.get("permissions", [rule for rule, _, _ in default.rules]),
            )
        settings = model_settings(options)
        if settings is not None:
            run_kwargs["model_settings"] = settings
        return _RunPlan(
            run_id=run_id,
            agent=agent,
            input=runtime_input,
            input_items=items,
            prompt=prompt,
            raw_input=input,
            model=model,
            session_id=session_id,
            run_kwargs=run_kwargs,
            permissions=permissions,
        )

    def _open(self, plan: _RunPlan) -> RunRecords:
        if self._policy is not None and plan.permissions is not None:
            self._policy.bind(plan.run_id, plan.permissions)
        return self._recorder.open(plan.run_id)

    def _release(self, plan: _RunPlan) -> None:
        self._recorder.close(plan.run_id)
        if self._policy is not None:
            self._policy.release(plan.run_id)

    def _finish(
        self, plan: _RunPlan, result: RunResult[Any], records: RunRecords
    ) -> AgentRunResult:
        if result.status == "interrupted":
            raise CompatRunInterruptedError(result)
        if result.status == "cancelled":
            raise RunCancelledError("Run cancelled.", run_id=result.run_id)
        return build_result(result, records, model=plan.model, input_items=plan.input_items)

    @contextlib.asynccontextmanager
    async def _turn(self, plan: _RunPlan) -> AsyncGenerator[None, None]:
        """Hold the session's turn lease for a session run (nothing otherwise)."""
        if plan.session_id is None or self._store is None:
            yield
            return
        async with self._store.turn_lease(plan.session_id):
            yield

    async def _record_run(self, plan: _RunPlan, result: AgentRunResult) -> None:
        """Add the 0.x run summary to the session file (CAS, retried on a conflict)."""
        if plan.session_id is None or self._store is None:
            return
        summary: StoredRunSummary = {
            "runId": result.run_id,
            "input": plan.raw_input,
            "text": result.text,
            "stopReason": result.stop_reason,
            "createdAt": result.started_at,
            "completedAt": result.completed_at,
            "toolCallCount": len(result.tool_calls),
        }
        if result.usage is not None:
            summary["usage"] = dict(result.usage)
        for attempt in range(_SUMMARY_ATTEMPTS):
            session = await self._store.load(plan.session_id)
            session["runs"].append(summary)
            session["lastRunAt"] = result.completed_at
            session["model"] = result.model
            try:
                await self._store.save(session)
                return
            except SessionConflictError:
                if attempt == _SUMMARY_ATTEMPTS - 1:
                    raise

    # -- runs -------------------------------------------------------------------------------------

    async def run(
        self, input: str | list[Any], **options: Unpack[AgentRunOptions]
    ) -> AgentRunResult:
        """Run to completion and return the 0.x result.

        Args:
            input: the user message: text, or a list of content blocks.
            **options: :class:`~actoviq.compat.options.AgentRunOptions`.

        Raises:
            NotImplementedError: a 0.x option the façade does not support (names the
                replacement).
            CompatRunInterruptedError: a tool needs an approval (resume with ``runtime``).
            RunCancelledError: the run was cancelled (``signal``, ``close()``).
            RunError: the run failed (the runtime's typed error).
        """
        plan = self._plan(input, options, "AgentClient.run")
        records = self._open(plan)
        try:
            async with self._turn(plan):
                run_result = await self.runtime.run(plan.agent, plan.input, **plan.run_kwargs)
                result = self._finish(plan, run_result, records)
                await self._record_run(plan, result)
            return result
        finally:
            self._release(plan)

    def stream(
        self, input: str | list[Any], **options: Unpack[AgentStreamOptions]
    ) -> AgentRunStream:
        """Start the run and return its :class:`AgentRunStream` of legacy events at once.

        Options are those of :meth:`run` plus ``maxBufferedEvents``, ``overflow`` and
        ``coalesceDeltas``. Option errors raise here, before anything starts.
        """
        given = cast(dict[str, Any], options)
        run_options = {key: value for key, value in given.items() if key not in _STREAM_OPTIONS}
        max_buffered = options.get("maxBufferedEvents", DEFAULT_MAX_BUFFERED_EVENTS)
        overflow = options.get("overflow", "throw")
        check_buffer_options(max_buffered, overflow)
        plan = self._plan(input, run_options, "AgentClient.stream")
        # The runtime's own buffer blocks (see create_agent_sdk) and is no larger than ours, so
        # our overflow strategy is the only one, and "block" back-pressures the run itself.
        plan.run_kwargs["limits"] = RunLimitsPatch(stream_buffer_size=max_buffered)
        control = _RunControl()
        self._streams = {stream for stream in self._streams if not stream.done}

        async def produce(push: Any) -> AgentRunResult:
            records = self._open(plan)
            try:
                async with self._turn(plan):
                    if control.reason is not None:
                        raise RunCancelledError(control.reason, run_id=plan.run_id)
                    handle = self.runtime.stream(plan.agent, plan.input, **plan.run_kwargs)
                    control.handle = handle
                    if control.reason is not None:
                        handle.cancel(control.reason)
                    async with handle:
                        completed = await translate_run(
                            handle,
                            records,
                            prompt=plan.prompt,
                            session_id=plan.session_id,
                            finish=lambda result: self._finish(plan, result, records),
                            push=push,
                        )
                        run_result = await handle.result()
                    if completed is None:
                        if run_result.status == "cancelled" and control.reason is not None:
                            raise RunCancelledError(control.reason, run_id=plan.run_id)
                        completed = self._finish(plan, run_result, records)
                    await self._record_run(plan, completed)
                    return completed
            finally:
                self._release(plan)

        stream = AgentRunStream(
            plan.run_id,
            produce,
            control.cancel,
            max_buffered_events=max_buffered,
            overflow=overflow,
            coalesce_deltas=options.get("coalesceDeltas", True),
        )
        self._streams.add(stream)
        return stream

    # -- sessions -------------------------------------------------------------------------------

    async def create_session(
        self,
        *,
        id: str | None = None,
        title: str | None = None,
        systemPrompt: str | None = None,
        model: str | None = None,
        tags: list[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        initialMessages: list[MessageParam] | None = None,
    ) -> AgentSession:
        """Create a JSON v1 session and return a handle to run in it."""
        session = await self.sessions.create(
            id=id,
            title=title,
            model=model if model is not None else self._model,
            system_prompt=systemPrompt,
            tags=tags or (),
            metadata=metadata,
            initial_messages=initialMessages or (),
        )
        return AgentSession(self, session["id"], session.get("systemPrompt"))

    async def resume_session(self, session_id: str) -> AgentSession:
        """A handle to an existing session.

        Raises:
            SessionNotFoundError: no such session.
        """
        session = await self.sessions.load(session_id)
        return AgentSession(self, session["id"], session.get("systemPrompt"))

    # -- lifecycle ------------------------------------------------------------------------------

    async def close(self) -> None:
        """Cancel open streams, close the runtime; idempotent.

        Raises:
            ExceptionGroup: "AgentClient close failed." with every failure (the runtime's own
                close failures are flattened into it).
        """
        if self._closed:
            return
        self._closed = True
        errors: list[Exception] = []
        for stream in list(self._streams):
            try:
                await stream.aclose()
            except Exception as error:
                errors.append(error)
        self._streams.clear()
        try:
            await self.runtime.close()
        except ExceptionGroup as group:
            errors.extend(group.exceptions)
        except Exception as error:
            errors.append(error)
        if self._store is not None:
            try:
                await self._store.aclose()
            except Exception as error:
                errors.append(error)
        if errors:
            raise ExceptionGroup("AgentClient close failed.", errors)

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


class AgentSession:
    """A JSON v1 session of an :class:`AgentClient` (0.x ``AgentSession``).

    Attributes:
        id: the session id.
        system_prompt: the session's system prompt (used when a run gives none).
    """

    def __init__(self, client: AgentClient, session_id: str, system_prompt: str | None) -> None:
        self._client = client
        self.id = session_id
        self.system_prompt = system_prompt

    def _options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        merged = {**options, "sessionId": self.id}
        if self.system_prompt is not None and "systemPrompt" not in merged:
            merged["systemPrompt"] = self.system_prompt
        return merged

    async def send(
        self, input: str | list[Any], **options: Unpack[AgentRunOptions]
    ) -> AgentRunResult:
        """Run in this session (history loaded, the turn appended)."""
        return await self._client.run(input, **cast(AgentRunOptions, self._options(options)))

    def stream(
        self, input: str | list[Any], **options: Unpack[AgentStreamOptions]
    ) -> AgentRunStream:
        """Stream a run in this session."""
        return self._client.stream(input, **cast(AgentStreamOptions, self._options(options)))

    async def messages(self) -> list[MessageParam]:
        """The session's 0.x transcript (``messages`` of its file)."""
        return list((await self._client.sessions.load(self.id))["messages"])

    async def metadata(self) -> dict[str, Any]:
        """The session's metadata."""
        return dict((await self._client.sessions.load(self.id))["metadata"])


class _PolicyBridge:
    """Reports a permission decision: into the run's records and as a ``tool.permission`` event."""

    def __init__(self, recorder: RunRecorder) -> None:
        self.recorder = recorder
        self.runtime: AgentRuntime | None = None

    async def __call__(self, run_id: str, decision: PermissionDecision) -> None:
        records = self.recorder.get(run_id)
        if records is None:
            return
        records.permission_decisions.append(decision)
        if self.runtime is not None:
            await self.runtime.emit_run_event(
                run_id,
                "tool.permission",
                {"iteration": len(records.model_calls), "decision": cast(Any, decision)},
            )


@compat_symbol(
    "createAgentSdk",
    "AgentRuntime(models=ModelRegistry([provider])) running an AgentSpec (actoviq.runtime)",
    python_name="create_agent_sdk",
)
async def create_agent_sdk(**options: Unpack[CreateAgentSdkOptions]) -> AgentClient:
    """Build the 0.x client on one :class:`~actoviq.runtime.AgentRuntime`.

    Each call records ``createAgentSdk`` in the compat diagnostics (the reference's symbol, so
    usage dashboards keep their key).

    Args:
        **options: :class:`~actoviq.compat.options.CreateAgentSdkOptions` (0.x names).

    Raises:
        NotImplementedError: a 0.x option the façade does not support (names the replacement).
        TypeError: an option 0.x never had.
        CompatConfigurationError: an option value the façade cannot use.

    Example:
        >>> adapter = ModelProviderLegacyAdapter(provider)  # doctest: +SKIP
        >>> sdk = await create_agent_sdk(modelApi=adapter, model="gpt-4.1")  # doctest: +SKIP
    """
    check_options(options, CLIENT_OPTIONS, CLIENT_REPLACEMENTS, "create_agent_sdk")
    model = check_model(options.get("model", DEFAULT_LEGACY_MODEL))
    limits = limits_patch(options)
    sampling = model_settings(options)
    tools = options.get("tools", ())
    registry = tools if isinstance(tools, ToolRegistry) else ToolRegistry(list(tools))
    recorder = RunRecorder()
    bridge = _PolicyBridge(recorder)
    policy = None
    if "permissionMode" in options or "permissions" in options:
        settings = PermissionSettings(
            options.get("permissionMode", "default"), options.get("permissions", ())
        )
        policy = CompatToolPolicy(settings, bridge)
    store = None
    services = RuntimeServices()
    directory = options.get("sessionDirectory")
    if directory is not None:
        store = LegacyJsonV1SessionStore(Path(directory))
        journal = store.sessions
        services.register("sessions", lambda: StoreRuntimeSessionAdapter(journal))
    system_prompt = options.get("systemPrompt")
    provider = build_provider(options)
    runtime = AgentRuntime(
        models=ModelRegistry([provider]),
        tools=registry,
        tool_policy=policy,
        services=services,
        middleware=recorder.middleware(),
        default_limits=limits,
        # Streams bound the runtime's buffer to their own (AgentClient.stream): the façade's
        # overflow strategy decides, the runtime never drops deltas behind its back.
        stream_buffer_policy="block",
    )
    bridge.runtime = runtime
    return AgentClient(
        runtime=runtime,
        provider_id=provider.id,
        model=model,
        system_prompt=system_prompt,
        tool_names=tuple(registry.names()),
        settings=sampling,
        recorder=recorder,
        policy=policy,
        store=store,
    )
