"""``DbosBackgroundEngine``: background children scheduled on a DBOS queue.

The same :class:`~actoviq.orchestration.BackgroundChildManager` API as the embedded engine; a
host switches by configuration (``BackgroundConfig(engine="dbos")`` or
``BackgroundChildManager(runner, store, engine="dbos", options={...})``). What changes is who
schedules and recovers the work:

* Records stay in the :class:`~actoviq.runtime.stores.DurableChildStore` under compare-and-set
  (the compatibility boundary between engines): statuses, leases as fencing tokens,
  reconciliation and exactly-once resume are the embedded engine's, unchanged.
* Starting a child (spawn, resume, recover) enqueues one DBOS workflow
  (``actoviq.background_child``) on a DBOS queue, so DBOS enforces the queue's concurrency
  (global and per worker), rate limit, priorities and timeout, and any worker process that
  dequeues it runs the child.
* When a worker process dies, DBOS recovers its workflows in the next process launched for the
  same executor: the workflow knows it is a re-execution (its first step recorded an earlier
  attempt), expires the dead worker's lease at once and lets the record decide: a replay-safe
  child is taken over, a side-effect child moves to ``needs_reconciliation`` (never replayed).
* Cancelling a child (or its parent scope) cancels its enqueued or running workflows as well.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from types import CoroutineType
from typing import TYPE_CHECKING, Any, Final, cast

import attrs

from actoviq.core import UNSET, JsonObject, JsonValue, RunResult, Unset, from_json, to_json
from actoviq.dbos.errors import DbosConfigurationError
from actoviq.orchestration.background import (
    DEFAULT_CANCEL_REASON,
    BackgroundConfig,
    DurableChildError,
    DurableChildRecord,
    RecoveryReport,
    StoreBackgroundEngine,
    register_background_engine,
)
from actoviq.runtime import InterruptionDecision
from dbos import DBOS, SetEnqueueOptions, SetWorkflowID, SetWorkflowTimeout

if TYPE_CHECKING:
    from actoviq.orchestration import ChildRunner

__all__ = [
    "CHILD_WORKFLOW_NAME",
    "DEFAULT_CHILD_QUEUE",
    "DbosBackgroundEngine",
    "DbosQueueSettings",
    "dbos_engine",
]

CHILD_WORKFLOW_NAME: Final = "actoviq.background_child"
"""The DBOS workflow name of one background-child execution."""
DEFAULT_CHILD_QUEUE: Final = "actoviq-children"
"""The DBOS queue background children go to unless configured otherwise."""
_ATTEMPT_STEP: Final = "actoviq.child-attempt"
_WORKFLOW_PREFIX: Final = "actoviq-child:"

_ENGINES: dict[str, DbosBackgroundEngine] = {}


@attrs.frozen(kw_only=True)
class DbosQueueSettings:
    """The DBOS queue background children run on (registered by the engine on first use).

    Attributes:
        name: the queue's name.
        concurrency: at most this many children of the queue run at once across all workers.
        worker_concurrency: at most this many run at once in one worker process.
        rate_limit: ``(limit, period_seconds)``: at most ``limit`` children start per period.
        polling_interval_sec: how often a worker looks for runnable children.
        register: register (create or update) the queue; False only looks it up (a queue
            declared elsewhere).
    """

    name: str = DEFAULT_CHILD_QUEUE
    concurrency: int | None = None
    worker_concurrency: int | None = None
    rate_limit: tuple[int, float] | None = None
    polling_interval_sec: float = 1.0
    register: bool = True


class DbosBackgroundEngine(StoreBackgroundEngine):
    """The background engine on DBOS queues (records in a ``DurableChildStore``).

    Args:
        runner: the one child runner (its runtime runs every child).
        store: where the records live (``SqliteStorage.children`` on SQLite or PostgreSQL, ...).
        queue: the DBOS queue (name and limits).
        priority: the DBOS queue priority of this engine's children (1 runs first; None: none).
        timeout_seconds: a DBOS workflow timeout per child execution (None: none).
        **options: the embedded engine's options (``tenant_id``, ``lease_ms``, ``owner_id``,
            ``resolve_agent``, ``clock``, ``ledger_store``, ``capacity``).
    """

    def __init__(
        self,
        runner: ChildRunner,
        store: Any,
        *,
        queue: DbosQueueSettings | None = None,
        priority: int | None = None,
        timeout_seconds: float | None = None,
        **options: Any,
    ) -> None:
        super().__init__(runner, store, **options)
        self.queue = queue or DbosQueueSettings()
        self.priority = priority
        self.timeout_seconds = timeout_seconds
        self._queue_ready = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._submitted: dict[str, asyncio.Future[None]] = {}
        _ENGINES[self.owner_id] = self

    async def _ensure_queue(self) -> None:
        if self._queue_ready:
            return
        settings = self.queue
        if settings.register:
            limiter = (
                None
                if settings.rate_limit is None
                else {"limit": settings.rate_limit[0], "period": settings.rate_limit[1]}
            )
            await DBOS.register_queue_async(
                settings.name,
                global_concurrency=settings.concurrency,
                worker_concurrency=settings.worker_concurrency,
                limiter=cast(Any, limiter),
                polling_interval_sec=settings.polling_interval_sec,
                on_conflict="always_update",
            )
        elif await DBOS.retrieve_queue_async(settings.name) is None:
            raise DbosConfigurationError(
                f'DBOS queue "{settings.name}" does not exist.', details={"queue": settings.name}
            )
        self._queue_ready = True

    def _fly(
        self,
        record: DurableChildRecord,
        decisions: Sequence[InterruptionDecision] | None,
        context: JsonValue | Unset,
        flight: asyncio.Future[RunResult[Any]],
    ) -> CoroutineType[Any, Any, None]:
        """Settle the registered ``flight``: enqueue the child's DBOS workflow.

        The submission future is registered at once (``spawn`` and ``resume`` await it).
        """
        self._loop = asyncio.get_running_loop()
        submitted: asyncio.Future[None] = self._quiet_future()
        self._submitted[record.child_id] = submitted
        return self._enqueue(record.child_id, decisions, context, flight, submitted)

    async def _submission(self, child_id: str) -> None:
        """Wait until the child's workflow is durably enqueued (raises if enqueueing failed)."""
        submitted = self._submitted.get(child_id)
        if submitted is not None:
            try:
                await asyncio.shield(submitted)
            finally:
                if self._submitted.get(child_id) is submitted:
                    del self._submitted[child_id]

    async def spawn(self, *args: Any, **kwargs: Any) -> DurableChildRecord:
        """See the embedded engine; returns once the child's workflow is enqueued too."""
        record = await super().spawn(*args, **kwargs)
        await self._submission(record.child_id)
        return record

    async def resume(
        self,
        child_id: str,
        decisions: Sequence[InterruptionDecision] = (),
        *,
        context: JsonValue | Unset = UNSET,
    ) -> None:
        """See the embedded engine; returns once the child's workflow is enqueued."""
        await super().resume(child_id, decisions, context=context)
        await self._submission(child_id)

    async def _enqueue(
        self,
        child_id: str,
        decisions: Sequence[InterruptionDecision] | None,
        context: JsonValue | Unset,
        flight: asyncio.Future[RunResult[Any]],
        submitted: asyncio.Future[None],
    ) -> None:
        try:
            await self._ensure_queue()
            queue = await DBOS.retrieve_queue_async(self.queue.name)
            assert queue is not None
            args: JsonObject = {"childId": child_id, "owner": self.owner_id}
            if decisions is not None:
                args["decisions"] = [cast(JsonValue, to_json(d)) for d in decisions]
            if not isinstance(context, Unset):
                args["context"] = context
            workflow_id = f"{_WORKFLOW_PREFIX}{child_id}:{uuid.uuid4().hex}"
            with (
                SetWorkflowID(workflow_id),
                SetEnqueueOptions(priority=self.priority),
                SetWorkflowTimeout(self.timeout_seconds),
            ):
                handle = await queue.enqueue_async(_child_workflow, args)
            submitted.set_result(None)
            # Ran here: the flight settles first. Ran in another process: the workflow ends.
            ended = asyncio.ensure_future(handle.get_result())
            await asyncio.wait({ended, flight}, return_when=asyncio.FIRST_COMPLETED)
            if not ended.done():
                ended.cancel()
            await asyncio.wait({ended})
            if not ended.cancelled():
                ended.exception()  # cancelled or timed out in DBOS: the record tells the outcome
            if not flight.done():  # it ran in another worker process: read the record
                self._land(child_id, flight)
                flight.set_result(await self.result_from_record(child_id))
        except asyncio.CancelledError:
            flight.cancel()
            submitted.cancel()
            raise
        except BaseException as error:
            if not flight.done():
                flight.set_exception(error)
            if not submitted.done():
                submitted.set_exception(error)
        finally:
            self._land(child_id, flight)

    async def result_from_record(self, child_id: str) -> RunResult[Any]:
        """The child's result as its record states it (typed errors otherwise)."""
        return await StoreBackgroundEngine.result(self, child_id)

    async def run_dequeued(self, args: JsonObject) -> JsonObject:
        """The body of the ``actoviq.background_child`` workflow: run the child here, once.

        Returns the record's status afterwards (``{"status": ...}``); errors go to whoever
        awaits the child's result in this process, never into DBOS.
        """
        nonce = uuid.uuid4().hex
        first = await DBOS.run_step_async({"name": _ATTEMPT_STEP}, lambda: nonce)
        loop = self._loop
        if loop is None or loop is asyncio.get_running_loop() or loop.is_closed():
            return await self._run_here(args, recovered=first != nonce)
        # DBOS ran the workflow on its own loop (launched outside the host's loop): the child
        # runs on the engine's loop, where its runtime and futures live.
        future = asyncio.run_coroutine_threadsafe(
            self._run_here(args, recovered=first != nonce), loop
        )
        return await asyncio.wrap_future(future)

    async def _run_here(self, args: JsonObject, *, recovered: bool) -> JsonObject:
        child_id = cast(str, args["childId"])
        decisions = (
            [from_json(InterruptionDecision, d) for d in cast(list[Any], args["decisions"])]
            if "decisions" in args
            else None
        )
        context: JsonValue | Unset = args.get("context", UNSET)
        flight = self._flights.get(child_id) if args.get("owner") == self.owner_id else None
        try:
            record = await self.query(child_id)
            if recovered:
                record = await self._expire_dead_lease(record)
            result, settled = await self._executor.execute(record, decisions, context)
        except asyncio.CancelledError:
            if flight is not None and not flight.done():
                flight.cancel()
            raise
        except BaseException as error:
            if flight is not None and not flight.done():
                flight.set_exception(error)
            self._land(child_id, flight)
            if not isinstance(error, DurableChildError):
                self._forget(child_id)
            return {"status": "error", "error": str(error)}
        if flight is not None and not flight.done():
            assert result is not None
            flight.set_result(result)
        self._land(child_id, flight)
        if settled.terminal:
            self._forget(child_id)
        return {"status": settled.status}

    async def _expire_dead_lease(self, record: DurableChildRecord) -> DurableChildRecord:
        """A recovered execution: the worker that held the lease died with its process."""
        owner = record.lease_owner
        if record.status != "running" or owner is None or owner in _ENGINES:
            return record
        expired = record.next(lease_expires_at=await self.now_ms() - 1)
        return expired if await self.cas(record, expired) else await self.query(record.child_id)

    async def _scheduled(self, child_id: str | None = None) -> dict[str, dict[str, str]]:
        """Children with a DBOS workflow still waiting or running: child -> {workflow: status}."""
        prefix = _WORKFLOW_PREFIX if child_id is None else f"{_WORKFLOW_PREFIX}{child_id}:"
        workflows = await DBOS.list_workflows_async(
            workflow_id_prefix=prefix,
            status=["ENQUEUED", "PENDING", "DELAYED"],
            load_input=False,
            load_output=False,
        )
        scheduled: dict[str, dict[str, str]] = {}
        for workflow in workflows:
            child = workflow.workflow_id[len(_WORKFLOW_PREFIX) :].rsplit(":", 1)[0]
            scheduled.setdefault(child, {})[workflow.workflow_id] = workflow.status
        return scheduled

    async def recover(self) -> RecoveryReport:
        """See the embedded engine; children DBOS is about to start are left to DBOS.

        DBOS dequeues enqueued workflows and re-runs the workflows of a dead worker process when
        the next process launches: a child with an enqueued workflow, or a queued child whose
        workflow is already running, is neither started again nor reported. A running child is
        judged by its lease, as in the embedded engine (a recovered workflow expires a dead
        worker's lease itself).
        """
        self._check_open()
        await self._ensure_queue()
        scheduled = await self._scheduled()

        def held_by_dbos(record: DurableChildRecord, status: str) -> bool:
            workflows = scheduled.get(record.child_id, {})
            if "ENQUEUED" in workflows.values() or "DELAYED" in workflows.values():
                return True  # DBOS starts it when the queue allows
            return status == "queued" and bool(workflows)  # DBOS is starting it already

        report = await self._recover_children(held_by_dbos)
        for child_id in report.started:
            await self._submission(child_id)
        return report

    async def cancel(
        self, child_id: str, reason: str = DEFAULT_CANCEL_REASON
    ) -> DurableChildRecord:
        """Cancel the record (as the embedded engine does), then its DBOS workflows."""
        record = await super().cancel(child_id, reason)
        if record.status == "cancelled":
            workflows = (await self._scheduled(child_id)).get(child_id)
            if workflows:
                await DBOS.cancel_workflows_async(list(workflows))
        return record

    async def aclose(self, *, drain_timeout: float = 0.0) -> None:
        """Release this worker's children (see the embedded engine) and forget the engine."""
        if _ENGINES.get(self.owner_id) is self:
            del _ENGINES[self.owner_id]
        await super().aclose(drain_timeout=drain_timeout)


ENGINE_WAIT_SECONDS: Final = 30.0
"""How long a dequeued or recovered child waits for a DBOS engine to open in its process."""


async def _engine_for(owner: object) -> DbosBackgroundEngine:
    """The engine that enqueued the child, else any open one here (a recovered child).

    DBOS may recover workflows as soon as it launches, before the host opened its manager:
    wait a little for one.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + ENGINE_WAIT_SECONDS
    while True:
        engine = _ENGINES.get(owner) if isinstance(owner, str) else None
        if engine is None and _ENGINES:
            engine = next(reversed(_ENGINES.values()))
        if engine is not None:
            return engine
        if loop.time() >= deadline:
            raise DbosConfigurationError(
                "No DBOS background engine is open in this process to run a dequeued child; "
                "open a BackgroundChildManager with engine='dbos' when DBOS launches."
            )
        await asyncio.sleep(0.05)


@DBOS.workflow(name=CHILD_WORKFLOW_NAME)
async def _child_workflow(args: JsonObject) -> JsonObject:
    return await (await _engine_for(args.get("owner"))).run_dequeued(args)


def dbos_engine(runner: ChildRunner, config: BackgroundConfig) -> DbosBackgroundEngine:
    """The ``"dbos"`` engine factory.

    ``BackgroundConfig.options``: ``queue`` (a :class:`DbosQueueSettings`, a queue name or a
    mapping of its fields), ``priority``, ``timeout_seconds``.
    """
    options = dict(config.options)
    queue = options.pop("queue", None)
    if isinstance(queue, str):
        queue = DbosQueueSettings(name=queue)
    elif isinstance(queue, dict):
        queue = DbosQueueSettings(**cast(dict[str, Any], queue))
    return DbosBackgroundEngine.from_config(
        runner,
        config,
        queue=cast(DbosQueueSettings | None, queue),
        priority=options.pop("priority", None),
        timeout_seconds=options.pop("timeout_seconds", None),
    )


register_background_engine("dbos", dbos_engine)
