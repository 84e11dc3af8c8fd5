"""``DurableGraphRunner``: workflow-graph runs that survive their worker (spec 04 §8.2-21).

``run(graph, graph_id=..., run_id=..., input=..., scope=...)`` starts a run, or continues the run
with that id: the run record (in a :class:`~actoviq.runtime.stores.WorkflowRunStore`: in memory,
SQLite, PostgreSQL) holds the graph's identity, the input and a lease; every node execution is
journaled (:mod:`~actoviq.orchestration.graph_runs.journal`). Continuing a run executes the graph
again where completed nodes return their stored outputs at once, so a crashed run resumes after
its last completed node and **no completed node runs twice** (side-effect nodes above all). A
side-effect node that was running when its worker died is never replayed: the run stops with
:class:`WorkflowNodeReconciliationError` until :meth:`DurableGraphRunner.reconcile_node` records
what happened.

Example:
    >>> # runner = DurableGraphRunner(storage.workflows)
    >>> # result = await runner.run(graph, graph_id="publish", run_id="post-42",
    >>> #                           input={"topic": "CAS"}, scope=root,
    >>> #                           effects={"draft": "read", "publish": "side-effect"})
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType
from typing import Any, Final, Literal, cast

from actoviq.core import (
    UNSET,
    JsonObject,
    JsonValue,
    JsonValueError,
    Unset,
    assert_json_value,
    iso_now,
)
from actoviq.orchestration.errors import OrchestrationConfigError
from actoviq.orchestration.graph import (
    WorkflowGraph,
    WorkflowGraphResult,
    WorkflowNodeExecutionError,
    WorkflowNodeFailure,
)
from actoviq.orchestration.graph_runs.codec import decode_output, encode_output
from actoviq.orchestration.graph_runs.errors import (
    WorkflowNodeReconciliationError,
    WorkflowRunCancelledError,
    WorkflowRunError,
    WorkflowRunLeasedError,
    WorkflowRunLeaseLostError,
    WorkflowRunMismatchError,
    WorkflowRunNotFoundError,
    WorkflowRunStateError,
)
from actoviq.orchestration.graph_runs.journal import REPLAY_SAFE_EFFECTS, RunJournal
from actoviq.orchestration.graph_runs.lease import RunLease
from actoviq.orchestration.graph_runs.records import WorkflowNodeRecord, WorkflowRunRecord
from actoviq.orchestration.outcomes import ChildError
from actoviq.orchestration.scope import OrchestrationScope
from actoviq.runtime import ToolEffect
from actoviq.runtime.stores import (
    StorageConflictError,
    StoreClock,
    WorkflowRunStore,
    new_lease_owner,
    wall_clock_ms,
)

__all__ = ["DurableGraphRunner", "graph_digest"]

_MAX_SAFE: Final = 2**53 - 1
_EFFECTS: Final = frozenset({"read", "idempotent-write", "side-effect"})


def graph_digest(graph: WorkflowGraph) -> str:
    """A digest of the graph's structure (order, edges, conditional flags, activations)."""
    shape = {
        **graph.inspect(),
        "activation": {node_id: node.activation for node_id, node in graph.nodes.items()},
        "kind": {
            node_id: "execute" if node.execute is not None else "reduce"
            for node_id, node in graph.nodes.items()
        },
    }
    text = json.dumps(shape, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _canonical(value: JsonValue) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class DurableGraphRunner:
    """Runs workflow graphs durably on a run store (see the module doc).

    Args:
        store: the run store (``SqliteStorage.workflows``, an in-memory store...).
        tenant_id: the tenant of the records.
        lease_ms: how long a run's lease outlives its worker's last heartbeat.
        owner_id: this worker's id (default: host, pid, random).
        clock: epoch-ms lease clock (default: the store's clock, else the wall clock).

    Raises:
        OrchestrationConfigError: ``lease_ms`` is not a positive safe integer ("leaseMs").
    """

    def __init__(
        self,
        store: WorkflowRunStore,
        *,
        tenant_id: str = "default",
        lease_ms: int = 30_000,
        owner_id: str | None = None,
        clock: Callable[[], int | Awaitable[int]] | None = None,
    ) -> None:
        if type(lease_ms) is not int or not 1 <= lease_ms <= _MAX_SAFE:
            raise OrchestrationConfigError(
                "Workflow run leaseMs must be a positive safe integer.",
                details={"field": "leaseMs"},
            )
        self.store = store
        self._tenant = tenant_id
        self._lease_ms = lease_ms
        self.owner_id = owner_id or new_lease_owner()
        self._clock = clock or (store.clock_ms if isinstance(store, StoreClock) else wall_clock_ms)

    async def now_ms(self) -> int:
        """The lease clock."""
        value = self._clock()
        if inspect.isawaitable(value):
            value = await value
        return int(value)

    async def query(self, run_id: str) -> WorkflowRunRecord:
        """The run's record.

        Raises:
            WorkflowRunNotFoundError: no such run.
        """
        row = await self.store.get_run(tenant_id=self._tenant, run_id=run_id)
        if row is None:
            raise WorkflowRunNotFoundError(f'Unknown workflow run "{run_id}".', run_id=run_id)
        return WorkflowRunRecord.from_json(row.record)

    async def nodes(self, run_id: str) -> list[WorkflowNodeRecord]:
        """The run's node executions (in the order they were first recorded)."""
        rows = await self.store.list_nodes(tenant_id=self._tenant, run_id=run_id)
        return [WorkflowNodeRecord.from_json(row.record) for row in rows]

    async def _cas(self, current: WorkflowRunRecord, nxt: WorkflowRunRecord) -> bool:
        return await self.store.compare_and_set_run(
            tenant_id=self._tenant,
            run_id=current.run_id,
            expected_revision=current.revision,
            record=nxt.to_json(),
        )

    async def run(
        self,
        graph: WorkflowGraph,
        *,
        graph_id: str,
        run_id: str,
        scope: OrchestrationScope,
        input: JsonValue = None,
        effects: Mapping[str, ToolEffect] | None = None,
        default_effect: ToolEffect = "side-effect",
        max_concurrency: int = 8,
        metadata: JsonObject | None = None,
    ) -> WorkflowGraphResult:
        """Start run ``run_id`` of ``graph``, or continue it (see the module doc).

        A completed run returns its stored result without running anything; a failed one runs
        again from its failed nodes (completed nodes are kept).

        Args:
            graph: the graph.
            graph_id: the graph's name (with its structure digest, checked on continue).
            run_id: the run's id (the idempotency key of the whole run).
            scope: the scope nodes run in.
            input: the graph input (strict JSON; a continued run must pass the same or None).
            effects: node id -> effect; decides whether a node running at a crash may run
                again (``read``/``idempotent-write``) or needs reconciliation.
            default_effect: the effect of nodes not in ``effects`` (``side-effect``).
            max_concurrency: ready nodes run at once.
            metadata: stored with a new run.

        Raises:
            WorkflowRunMismatchError: the run belongs to another graph or input.
            WorkflowRunLeasedError: another worker is running it.
            WorkflowRunCancelledError: the run was cancelled.
            WorkflowNodeReconciliationError: side-effect nodes may have committed.
            WorkflowNodeExecutionError: a node failed (the run is recorded ``failed``).
            WorkflowRunLeaseLostError: another worker took the run over mid-way.
        """
        _check(input, effects or {}, default_effect, run_id)
        digest = graph_digest(graph)
        record = await self._take(graph_id, run_id, digest, input, metadata)
        if record.status == "completed":
            return await self._stored_result(graph, record)
        nodes = {n.key: n for n in await self.nodes(run_id)}
        lease = RunLease(
            self.store,
            tenant_id=self._tenant,
            record=record,
            lease_ms=self._lease_ms,
            clock=self.now_ms,
        )
        journal = RunJournal(
            self.store,
            tenant_id=self._tenant,
            lease=lease,
            nodes=nodes,
            effects=dict(effects or {}),
            default_effect=default_effect,
        )
        heartbeat = asyncio.get_running_loop().create_task(lease.keep())
        try:
            result = await journal.wrap(graph).execute(
                input=record.input, scope=scope, max_concurrency=max_concurrency
            )
        except WorkflowNodeExecutionError as error:
            await self._settle_failure(lease, error)
            raise
        except BaseException:
            await _stopped(lease, heartbeat)
            await lease.release()  # cancelled or aborted: another worker may continue it
            raise
        finally:
            await _stopped(lease, heartbeat)
        settled = await lease.write(
            status="completed",
            order=result.order,
            statuses=dict(result.statuses),
            error=None,
            needs_reconciliation=(),
        )
        if settled is None:
            lost = lease.lost_error()
            assert lost is not None
            raise lost
        return result

    async def _take(
        self,
        graph_id: str,
        run_id: str,
        digest: str,
        input: JsonValue,
        metadata: JsonObject | None,
    ) -> WorkflowRunRecord:
        """Create the run, or take its lease (refusing what may not continue)."""
        now = await self.now_ms()
        stamp = iso_now()
        row = await self.store.get_run(tenant_id=self._tenant, run_id=run_id)
        if row is None:
            fresh = WorkflowRunRecord(
                run_id=run_id,
                graph_id=graph_id,
                graph_digest=digest,
                input=input,
                metadata=dict(metadata or {}),
                attempts=1,
                lease_owner=self.owner_id,
                lease_expires_at=now + self._lease_ms,
                heartbeat_at=now,
                created_at=stamp,
                updated_at=stamp,
            )
            try:
                await self.store.create_run(tenant_id=self._tenant, record=fresh.to_json())
            except StorageConflictError:
                return await self._take(graph_id, run_id, digest, input, metadata)
            return fresh
        current = WorkflowRunRecord.from_json(row.record)
        if current.graph_id != graph_id or current.graph_digest != digest:
            raise WorkflowRunMismatchError(
                f'Workflow run "{run_id}" belongs to graph "{current.graph_id}" '
                f"({current.graph_digest}), not this one.",
                run_id=run_id,
            )
        if input is not None and _canonical(input) != _canonical(current.input):
            raise WorkflowRunMismatchError(
                f'Workflow run "{run_id}" was started with another input.', run_id=run_id
            )
        if current.status == "completed":
            return current
        if current.status == "cancelled":
            raise WorkflowRunCancelledError(
                f'Workflow run "{run_id}" was cancelled.', run_id=run_id
            )
        live = current.lease_expires_at is not None and current.lease_expires_at > now
        if current.status == "running" and live and current.lease_owner != self.owner_id:
            raise WorkflowRunLeasedError(
                f'Workflow run "{run_id}" is leased by another worker.',
                run_id=run_id,
                retryable=True,
                details={
                    "leaseOwner": current.lease_owner,
                    "leaseExpiresAt": current.lease_expires_at,
                },
            )
        unsafe = [
            (n.node_id, n.iteration)
            for n in await self.nodes(run_id)
            if n.status == "running" and n.effect not in REPLAY_SAFE_EFFECTS
        ]
        if unsafe:
            marked = current.next(
                status="failed" if current.status == "failed" else "running",
                lease_owner=None,
                lease_expires_at=None,
                heartbeat_at=None,
                needs_reconciliation=tuple(unsafe),
                updated_at=stamp,
            )
            await self._cas(current, marked)
            raise WorkflowNodeReconciliationError(
                f'Workflow run "{run_id}" has side-effect nodes that may have committed when '
                f"their worker stopped: {[f'{n}#{i}' for n, i in unsafe]}; resolve each with "
                "reconcile_node().",
                run_id=run_id,
                details={"nodes": [{"nodeId": n, "iteration": i} for n, i in unsafe]},
            )
        taken = current.next(
            status="running",
            attempts=current.attempts + 1,
            lease_owner=self.owner_id,
            lease_expires_at=now + self._lease_ms,
            heartbeat_at=now,
            error=None,
            needs_reconciliation=(),
            updated_at=stamp,
        )
        if not await self._cas(current, taken):
            raise WorkflowRunLeasedError(
                f'Workflow run "{run_id}" changed while taking its lease.',
                run_id=run_id,
                retryable=True,
            )
        return taken

    async def _settle_failure(self, lease: RunLease, error: WorkflowNodeExecutionError) -> None:
        lost = lease.lost_error()
        if lost is not None:
            raise lost from error
        cause = _run_error(error)
        if isinstance(cause, WorkflowNodeReconciliationError):
            nodes = tuple(
                (n["nodeId"], n["iteration"]) for n in (cause.details or {}).get("nodes", [])
            )
            await lease.write(status="running", needs_reconciliation=nodes)
            raise cause from error
        if isinstance(cause, WorkflowRunLeaseLostError | WorkflowRunCancelledError):
            raise cause from error
        await lease.write(status="failed", error=ChildError.of(error.cause))

    async def _stored_result(
        self, graph: WorkflowGraph, record: WorkflowRunRecord
    ) -> WorkflowGraphResult:
        stored = {n.node_id: n for n in await self.nodes(record.run_id) if n.iteration == 0}
        outputs: dict[str, Any] = {}
        for node_id in graph.order:
            node = stored.get(node_id)
            if node is None:
                continue
            if node.status == "completed":
                outputs[node_id] = decode_output(node.output)
            elif record.statuses.get(node_id) == "failed" and node.error is not None:
                outputs[node_id] = WorkflowNodeFailure(node_id=node_id, error=node.error)
        return WorkflowGraphResult(
            order=record.order or graph.order,
            outputs=MappingProxyType(outputs),
            statuses=MappingProxyType(cast(dict[str, Any], dict(record.statuses))),
        )

    async def cancel(
        self, run_id: str, reason: str = "Workflow run cancelled."
    ) -> WorkflowRunRecord:
        """Cancel the run (a worker executing it stops at its next heartbeat).

        Terminal runs (``completed``, ``cancelled``) are returned unchanged.
        """
        for _ in range(32):
            current = await self.query(run_id)
            if current.status in ("completed", "cancelled"):
                return current
            cancelled = current.next(
                status="cancelled",
                lease_owner=None,
                lease_expires_at=None,
                heartbeat_at=None,
                error=ChildError(name="AbortError", message=reason, code="CANCELLED"),
                updated_at=iso_now(),
            )
            if await self._cas(current, cancelled):
                return cancelled
        raise WorkflowRunStateError(f'Workflow run "{run_id}" kept changing.', run_id=run_id)

    async def reconcile_node(
        self,
        run_id: str,
        node_id: str,
        resolution: Literal["completed", "failed", "rerun"],
        *,
        actor: str,
        iteration: int = 0,
        note: str | None = None,
        output: JsonValue | Unset = UNSET,
        error: str | None = None,
    ) -> WorkflowNodeRecord:
        """Record a human's decision about a node that was running when its worker died.

        ``completed`` (with the ``output`` it produced: the run continues after it),
        ``failed`` (for good: the run fails there) or ``rerun`` (run it again: a human checked
        that is safe). Allowed while the run is not running elsewhere.

        Raises:
            OrchestrationConfigError: a blank actor or an unknown resolution.
            WorkflowRunStateError: the node is not a stale running node, or the run is live.
        """
        if not actor.strip():
            raise OrchestrationConfigError("reconcile_node() needs the actor who decided.")
        if resolution not in ("completed", "failed", "rerun"):
            raise OrchestrationConfigError(
                "reconcile_node() resolution must be completed, failed or rerun, got "
                f"{resolution!r}."
            )
        run = await self.query(run_id)
        now = await self.now_ms()
        if (
            run.status == "running"
            and run.lease_expires_at is not None
            and run.lease_expires_at > now
        ):
            raise WorkflowRunStateError(
                f'Workflow run "{run_id}" is running in a worker; reconcile it once stopped.',
                run_id=run_id,
            )
        node = next((n for n in await self.nodes(run_id) if n.key == (node_id, iteration)), None)
        if node is None or node.status != "running":
            raise WorkflowRunStateError(
                f'Workflow node "{node_id}#{iteration}" of run "{run_id}" is not awaiting '
                "reconciliation.",
                run_id=run_id,
            )
        stamp = iso_now()
        audit: JsonObject = {
            "resolution": resolution,
            "actor": actor,
            "at": stamp,
            "previousStatus": node.status,
        }
        if note is not None:
            audit["note"] = note
        changes: dict[str, Any] = {
            "updated_at": stamp,
            "completed_at": stamp,
            "reconciliation": audit,
        }
        if resolution == "completed":
            value: JsonValue = None if isinstance(output, Unset) else output
            changes.update(
                status="completed", output=encode_output(value, run_id=run_id, node_key=node_id)
            )
        elif resolution == "failed":
            message = error or note or "Reconciled as failed."
            changes.update(
                status="failed",
                final=True,
                error=ChildError(
                    name="ReconciledFailure", message=message, code="RECONCILED_FAILED"
                ),
            )
        else:
            changes.update(status="cancelled")
        settled = node.next(**changes)
        await self.store.put_node(
            tenant_id=self._tenant,
            run_id=run_id,
            expected_revision=node.revision,
            record=settled.to_json(),
        )
        return settled


def _check(input: JsonValue, effects: Mapping[str, str], default_effect: str, run_id: str) -> None:
    try:
        assert_json_value(input, "input")
    except JsonValueError as error:
        raise OrchestrationConfigError(
            f"A durable workflow run's input must be strict JSON: {error}",
            details={"runId": run_id},
        ) from error
    for effect in (*effects.values(), default_effect):
        if effect not in _EFFECTS:
            raise OrchestrationConfigError(
                f"Unknown node effect {effect!r} (read, idempotent-write or side-effect).",
                details={"runId": run_id},
            )


def _run_error(error: BaseException) -> WorkflowRunError | None:
    seen = 0
    current: BaseException | None = error
    while current is not None and seen < 16:
        if isinstance(current, WorkflowRunError):
            return current
        current, seen = current.__cause__, seen + 1
    return None


async def _stopped(lease: RunLease, heartbeat: asyncio.Task[None]) -> None:
    lease.stop()
    if not heartbeat.done():
        await asyncio.wait({heartbeat})
