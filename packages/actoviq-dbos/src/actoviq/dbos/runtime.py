"""``DbosRuntime`` and ``durable_run``: an agent run as one DBOS workflow.

The workflow (``actoviq.durable_run``) runs the agent on an :class:`~actoviq.runtime.AgentRuntime`
whose model providers and tools are wrapped as DBOS steps (:mod:`actoviq.dbos.models`,
:mod:`actoviq.dbos.tools`). DBOS records each step's output; after a crash DBOS recovers the
workflow in any process that created the same runtime (same ``name``) before ``DBOS.launch()``,
and the replay returns the recorded outputs: no model and no tool is called twice.

An interrupted run (an approval, or a reconciliation after a side effect died mid-call) waits
durably inside the workflow: it publishes its open interruptions as the DBOS event
``actoviq.pending`` and receives each decision on its own message topic
(:mod:`actoviq.dbos.approvals` sends them, from any process). Then it resumes the run with the
decisions and goes on, all in the same workflow.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final, Self, cast

from actoviq.core import (
    MAX_WIRE_DEPTH,
    AgentSpec,
    CanonicalItem,
    Interruption,
    JsonObject,
    JsonValue,
    RunError,
    RunResult,
    dumps_compact,
    from_json,
    item_from_json,
    loads_strict,
    to_json,
)
from actoviq.dbos.errors import (
    DbosConfigurationError,
    DbosRunNotFoundError,
    DbosRuntimeNotRegisteredError,
)
from actoviq.dbos.events import DbosEventStream
from actoviq.dbos.models import durable_models
from actoviq.dbos.names import (
    PENDING_EVENT_KEY,
    RUN_WORKFLOW_NAME,
    decision_topic,
    waiting_event_key,
)
from actoviq.dbos.tools import StepRetry, durable_tools
from actoviq.providers import ModelProvider, ModelRegistry, models_from_environment
from actoviq.runtime import (
    AgentInput,
    AgentRuntime,
    InterruptionDecision,
    RuntimeTool,
    ToolRegistry,
)
from dbos import DBOS, SetWorkflowID, WorkflowHandleAsync, WorkflowSerializationFormat, error

__all__ = [
    "DEFAULT_DECISION_TIMEOUT_SECONDS",
    "DbosRuntime",
    "DurableRun",
    "durable_run",
    "retrieve_run",
    "run_result_json",
]

DEFAULT_DECISION_TIMEOUT_SECONDS: Final = 7 * 24 * 3600.0
"""How long a durable run waits for an approval before rejecting it (a week)."""

_REFUSED: Final = ("checkpoints", "checkpoint_store", "sessions")
_RUNTIMES: dict[str, DbosRuntime] = {}


def _lookup(name: str) -> DbosRuntime:
    runtime = _RUNTIMES.get(name)
    if runtime is None:
        raise DbosRuntimeNotRegisteredError(name)
    return runtime


def _encode_input(value: AgentInput) -> JsonObject:
    if isinstance(value, str):
        return {"text": value}
    items: Sequence[CanonicalItem] = (
        value if isinstance(value, list | tuple) else [cast(CanonicalItem, value)]
    )
    return {"items": [cast(JsonValue, to_json(item)) for item in items]}


def _decode_input(value: JsonObject) -> AgentInput:
    text = value.get("text")
    if isinstance(text, str):
        return text
    return [item_from_json(entry) for entry in cast(list[Any], value.get("items") or [])]


class DurableRun:
    """A started durable run: its id (the DBOS workflow id) and its eventual result."""

    __slots__ = ("_handle", "run_id")

    def __init__(self, handle: WorkflowHandleAsync[JsonObject]) -> None:
        self._handle = handle
        self.run_id: str = handle.get_workflow_id()

    async def result(self) -> RunResult[Any]:
        """Wait for the run to finish (across crashes and approvals) and return its result.

        ``output`` is the run's output as wire JSON (a structured output is its JSON object).
        """
        return from_json(RunResult[Any], await self._handle.get_result())

    async def status(self) -> str:
        """The DBOS workflow status: ``PENDING``, ``ENQUEUED``, ``SUCCESS``, ``ERROR``, ..."""
        status = await self._handle.get_status()
        return status.status


class DbosRuntime:
    """An :class:`~actoviq.runtime.AgentRuntime` whose runs are DBOS workflows.

    Create it (same ``name`` in every process of the deployment) **before** ``DBOS.launch()``:
    recovery after a crash looks the runtime up by name.

    Args:
        name: the runtime's name, recorded in every workflow it starts.
        models: model providers (wrapped so each call is a recorded DBOS step).
        tools: tools (wrapped so each call is a recorded DBOS step; see
            :mod:`actoviq.dbos.tools` for the side-effect rule).
        agents: agents the runtime can run (a durable run names its agent by id).
        tool_retry: DBOS step retries for ``read`` / ``idempotent-write`` tools.
        decision_timeout_seconds: how long a run waits for an approval before it is rejected
            (a reconciliation waits until it is decided).
        stream_events: write every run event to the run's DBOS stream
            (:func:`~actoviq.dbos.read_events`; one recorded write per event).
        **options: further keyword options of :class:`~actoviq.runtime.AgentRuntime`
            (middleware, tool_policy, event_sinks, default_limits, ...). ``checkpoints``,
            ``checkpoint_store`` and ``sessions`` are refused: DBOS is the durable record.

    Raises:
        DbosConfigurationError: a refused option, or another runtime already has ``name``.
    """

    def __init__(
        self,
        *,
        name: str = "default",
        models: ModelRegistry | Iterable[ModelProvider] | None = None,
        tools: ToolRegistry | Iterable[RuntimeTool] = (),
        agents: Iterable[AgentSpec[Any, Any]] = (),
        tool_retry: StepRetry | None = None,
        decision_timeout_seconds: float = DEFAULT_DECISION_TIMEOUT_SECONDS,
        stream_events: bool = False,
        **options: Any,
    ) -> None:
        refused = sorted(key for key in options if key in _REFUSED)
        if refused:
            raise DbosConfigurationError(
                f"DbosRuntime does not take {', '.join(refused)}: DBOS records the run.",
                details={"options": refused},
            )
        if not name:
            raise DbosConfigurationError("A durable runtime needs a non-empty name.")
        if name in _RUNTIMES:
            raise DbosConfigurationError(
                f'A durable runtime named "{name}" already exists in this process.',
                details={"runtime": name},
            )
        if not decision_timeout_seconds > 0:
            raise DbosConfigurationError("decision_timeout_seconds must be positive.")
        self.name = name
        self.decision_timeout_seconds = decision_timeout_seconds
        if stream_events:
            options["event_sinks"] = [*options.get("event_sinks", ()), DbosEventStream()]
        self.runtime = AgentRuntime(
            models=durable_models(models if models is not None else models_from_environment()),
            tools=durable_tools(tools, retry=tool_retry),
            agents=agents,
            **options,
        )
        _RUNTIMES[name] = self

    def register_agent(self, agent: AgentSpec[Any, Any]) -> DbosRuntime:
        """Register ``agent`` (chainable); see :meth:`AgentRuntime.register_agent`."""
        self.runtime.register_agent(agent)
        return self

    async def start(
        self,
        agent: AgentSpec[Any, Any],
        input: AgentInput,
        *,
        run_id: str | None = None,
        metadata: JsonObject | None = None,
    ) -> DurableRun:
        """Start ``agent`` as a durable workflow and return at once.

        Starting again with the same ``run_id`` returns the existing run (DBOS workflow ids are
        idempotent): a run is never executed twice.
        """
        self.runtime.register_agent(agent)
        options: JsonObject = {}
        if metadata is not None:
            options["metadata"] = metadata
        args = (self.name, agent.id, _encode_input(input), options)
        if run_id is None:
            handle = await DBOS.start_workflow_async(_durable_run_workflow, *args)
        else:
            with SetWorkflowID(run_id):
                handle = await DBOS.start_workflow_async(_durable_run_workflow, *args)
        return DurableRun(handle)

    async def run(
        self,
        agent: AgentSpec[Any, Any],
        input: AgentInput,
        *,
        run_id: str | None = None,
        metadata: JsonObject | None = None,
    ) -> RunResult[Any]:
        """Run ``agent`` durably to the end (waiting out approvals) and return its result."""
        started = await self.start(agent, input, run_id=run_id, metadata=metadata)
        return await started.result()

    async def close(self) -> None:
        """Close the inner runtime and forget the name (a new runtime may take it)."""
        if _RUNTIMES.get(self.name) is self:
            del _RUNTIMES[self.name]
        await self.runtime.close()

    async def aclose(self) -> None:
        """Same as :meth:`close`."""
        await self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _execute(self, agent_id: str, encoded: JsonObject, options: JsonObject) -> JsonObject:
        run_id = DBOS.workflow_id
        assert run_id is not None
        agent = self.runtime.get_agent(agent_id)
        if agent is None:
            raise RunError(
                f'Agent "{agent_id}" is not registered on durable runtime "{self.name}".',
                code="AGENT_NOT_REGISTERED",
                run_id=run_id,
                phase="runtime",
            )
        metadata = options.get("metadata")
        result = await self.runtime.run(
            agent,
            _decode_input(encoded),
            run_id=run_id,
            metadata=cast(JsonObject, metadata) if isinstance(metadata, dict) else None,
        )
        waits = 0
        while result.status == "interrupted":
            waits += 1
            decisions = await self._decisions(result.interruptions, waits)
            handle = self.runtime.resume(result.state, decisions)
            async with handle:
                result = await handle.result()
        return run_result_json(result)

    async def _decisions(
        self, interruptions: tuple[Interruption, ...], wait: int
    ) -> list[InterruptionDecision]:
        # Each call's waiting event first, the pending list last: whatever `pending()` lists,
        # `decide()` finds at once (a caller waits on the list, then decides without waiting).
        for interruption in interruptions:
            if interruption.call_id is not None:
                await DBOS.set_event_async(
                    waiting_event_key(interruption.call_id),
                    {"interruption": to_json(interruption), "open": True, "wait": wait},
                )
        await DBOS.set_event_async(
            PENDING_EVENT_KEY,
            {"wait": wait, "interruptions": [to_json(entry) for entry in interruptions]},
        )
        decisions: list[InterruptionDecision] = []
        for interruption in interruptions:
            decisions.append(await self._decision(interruption, wait))
            if interruption.call_id is not None:
                await DBOS.set_event_async(
                    waiting_event_key(interruption.call_id),
                    {"interruption": to_json(interruption), "open": False, "wait": wait},
                )
        await DBOS.set_event_async(PENDING_EVENT_KEY, {"wait": wait, "interruptions": []})
        return decisions

    async def _decision(self, interruption: Interruption, wait: int) -> InterruptionDecision:
        topic = decision_topic(interruption.id, wait)
        while True:
            message = await DBOS.recv_async(topic, timeout_seconds=self.decision_timeout_seconds)
            if message is None:
                if interruption.kind == "approval":
                    return InterruptionDecision.reject(
                        interruption.id, "The approval was not decided in time."
                    )
                continue  # a reconciliation has no safe default: keep waiting
            decision = _decision_from(message, interruption)
            if decision is not None:
                return decision


def run_result_json(result: RunResult[Any]) -> JsonObject:
    """The wire JSON a durable run records as its workflow output (D2 numbers).

    Encoded and decoded once with the core's strict encoder, so integral floats are the
    integers every other store writes (DBOS's own JSON serializer would keep ``0.0``).
    """
    text = dumps_compact(cast(JsonValue, to_json(result)), "RunResult", max_depth=MAX_WIRE_DEPTH)
    return cast(JsonObject, loads_strict(text, "RunResult", max_depth=MAX_WIRE_DEPTH))


def _decision_from(message: object, interruption: Interruption) -> InterruptionDecision | None:
    """The decision a message carries, or None when it does not fit the interruption."""
    if not isinstance(message, dict):
        return None
    data = cast(dict[str, Any], message)
    allowed = (
        ("approve", "reject")
        if interruption.kind == "approval"
        else (
            "committed",
            "failed",
            "retry",
        )
    )
    if data.get("outcome") not in allowed:
        return None
    try:
        return from_json(InterruptionDecision, {**data, "interruptionId": interruption.id})
    except Exception:  # a malformed decision is ignored; the run keeps waiting
        return None


@DBOS.workflow(name=RUN_WORKFLOW_NAME, serialization_type=WorkflowSerializationFormat.PORTABLE)
async def _durable_run_workflow(
    runtime_name: str, agent_id: str, encoded: JsonObject, options: JsonObject
) -> JsonObject:
    return await _lookup(runtime_name)._execute(agent_id, encoded, options)  # pyright: ignore[reportPrivateUsage]


async def retrieve_run(run_id: str) -> DurableRun:
    """The durable run ``run_id`` started by any process (DBOS must be launched here).

    Raises:
        DbosRunNotFoundError: no workflow has that id.
    """
    try:
        handle: WorkflowHandleAsync[JsonObject] = await DBOS.retrieve_workflow_async(run_id)
    except error.DBOSNonExistentWorkflowError as missing:
        raise DbosRunNotFoundError(run_id) from missing
    return DurableRun(handle)


async def durable_run(
    runtime: DbosRuntime,
    agent: AgentSpec[Any, Any],
    input: AgentInput,
    *,
    run_id: str | None = None,
    metadata: JsonObject | None = None,
) -> RunResult[Any]:
    """Run ``agent`` on ``runtime`` as a DBOS workflow; same as :meth:`DbosRuntime.run`."""
    return await runtime.run(agent, input, run_id=run_id, metadata=metadata)
