"""``RunJournal``: every node execution of a durable run, persisted as it happens.

The journal wraps a graph's node functions (and, through the node frame, the body graphs of
composite nodes such as loops). A wrapped node:

* returns the stored output when this node (path and iteration) already completed: a completed
  node never runs again, whatever its effect;
* raises the recorded error when a reconciliation declared the node failed for good;
* refuses to run a node that was ``running`` when its worker died unless replaying it is safe
  (``read``, ``idempotent-write`` or composite): ``WorkflowNodeReconciliationError``;
* otherwise writes ``running`` (fenced on the run's lease), runs the function (aborted at once
  if the lease is lost), and writes ``completed`` with the output, or ``failed`` with the error.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs

from actoviq.core import iso_now
from actoviq.orchestration.errors import OrchestrationError
from actoviq.orchestration.graph import NodeContext, WorkflowGraph, WorkflowNode
from actoviq.orchestration.graph_frames import FRAME, NodeFrame, is_composite
from actoviq.orchestration.graph_runs.codec import decode_output, encode_output
from actoviq.orchestration.graph_runs.errors import (
    WorkflowNodeReconciliationError,
    WorkflowRunError,
    WorkflowRunLeaseLostError,
)
from actoviq.orchestration.graph_runs.lease import RunLease
from actoviq.orchestration.graph_runs.records import WorkflowNodeRecord
from actoviq.orchestration.outcomes import ChildError
from actoviq.runtime.stores import StorageConflictError, WorkflowRunStore

__all__ = ["REPLAY_SAFE_EFFECTS", "RunJournal", "WorkflowNodeFailedError"]

REPLAY_SAFE_EFFECTS: Final = frozenset({"read", "idempotent-write", "composite"})


class WorkflowNodeFailedError(OrchestrationError):
    """A node a reconciliation declared failed for good (its recorded error, raised again)."""

    default_code = "WORKFLOW_NODE_FAILED_RECORDED"


class RunJournal:
    """The node records of one run, and the wrapper that keeps them.

    Args:
        store: the run store.
        tenant_id: the run's tenant.
        lease: the run's lease (node writes are fenced on its owner).
        nodes: the node records already stored.
        effects: node id -> effect (``read``, ``idempotent-write``, ``side-effect``).
        default_effect: the effect of nodes not in ``effects``.
    """

    def __init__(
        self,
        store: WorkflowRunStore,
        *,
        tenant_id: str,
        lease: RunLease,
        nodes: Mapping[tuple[str, int], WorkflowNodeRecord],
        effects: Mapping[str, str],
        default_effect: str,
    ) -> None:
        self._store = store
        self._tenant = tenant_id
        self._lease = lease
        self.nodes: dict[tuple[str, int], WorkflowNodeRecord] = dict(nodes)
        self._effects = effects
        self._default = default_effect

    @property
    def run_id(self) -> str:
        """The run."""
        return self._lease.record.run_id

    def wrap(self, graph: WorkflowGraph, *, prefix: str = "", iteration: int = 0) -> WorkflowGraph:
        """``graph`` with every node journaled under ``prefix + id`` at ``iteration``."""
        nodes: list[WorkflowNode] = []
        for node in graph.nodes.values():
            key = f"{prefix}{node.id}"
            if node.execute is not None:
                nodes.append(
                    attrs.evolve(node, execute=self._journaled(node.execute, key, iteration))
                )
            else:
                assert node.reduce is not None
                nodes.append(
                    attrs.evolve(node, reduce=self._journaled(node.reduce, key, iteration))
                )
        wrapped = WorkflowGraph(nodes=nodes, edges=graph.edges, id=graph.id)
        wrapped._attempts = {  # pyright: ignore[reportPrivateUsage]  # events name the attempt
            node.id: self._attempt(f"{prefix}{node.id}", iteration) for node in nodes
        }
        wrapped._replayed = frozenset(  # pyright: ignore[reportPrivateUsage]  # events say so
            node.id for node in nodes if self._stored(f"{prefix}{node.id}", iteration)
        )
        return wrapped

    def _stored(self, key: str, iteration: int) -> bool:
        """Whether the node completed before: its wrapper returns the stored output, not a run."""
        current = self.nodes.get((key, iteration))
        return current is not None and current.status == "completed"

    def _attempt(self, key: str, iteration: int) -> int:
        """The attempt a (re)started node execution is: the journal's, plus one unless done."""
        current = self.nodes.get((key, iteration))
        if current is None:
            return 1
        return current.attempts if current.status == "completed" else current.attempts + 1

    def _effect(self, key: str, fn: Callable[..., Any]) -> str:
        if is_composite(fn):
            return "composite"
        base = key.rsplit("/", 1)[-1]
        return self._effects.get(key) or self._effects.get(base) or self._default

    async def _put(self, record: WorkflowNodeRecord, expected: int | None) -> WorkflowNodeRecord:
        try:
            await self._store.put_node(
                tenant_id=self._tenant,
                run_id=record.run_id,
                expected_revision=expected,
                record=record.to_json(),
                lease_owner=self._lease.owner,
            )
        except StorageConflictError as conflict:
            lost = WorkflowRunLeaseLostError(
                f'Workflow run "{record.run_id}" is no longer this worker\'s: node '
                f'"{record.node_id}" was not recorded.',
                run_id=record.run_id,
                details={"nodeId": record.node_id, "iteration": record.iteration},
            )
            self._lease.fail(lost)
            raise lost from conflict
        self.nodes[record.key] = record
        return record

    def _journaled(
        self, fn: Callable[[NodeContext], Any], key: str, iteration: int
    ) -> Callable[[NodeContext], Any]:
        async def run(ctx: NodeContext) -> Any:
            current = self.nodes.get((key, iteration))
            effect = self._effect(key, fn)
            if current is not None:
                if current.status == "completed":
                    return decode_output(current.output)
                if current.status == "failed" and current.final:
                    error = current.error
                    raise WorkflowNodeFailedError(
                        f'Workflow node "{key}" was reconciled as failed: '
                        f"{error.message if error else 'no reason given'}",
                        details={"nodeId": key, "iteration": iteration},
                    )
                if current.status == "running" and current.effect not in REPLAY_SAFE_EFFECTS:
                    raise WorkflowNodeReconciliationError(
                        f'Workflow node "{key}" may have committed a side effect when its worker '
                        "stopped; resolve it with reconcile_node().",
                        run_id=self.run_id,
                        details={"nodes": [{"nodeId": key, "iteration": iteration}]},
                    )
            stamp = iso_now()
            running = WorkflowNodeRecord(
                run_id=self.run_id,
                node_id=key,
                iteration=iteration,
                revision=0 if current is None else current.revision + 1,
                status="running",
                effect=effect,
                attempts=1 if current is None else current.attempts + 1,
                created_at=stamp if current is None else current.created_at,
                updated_at=stamp,
                started_at=stamp,
            )
            await self._put(running, None if current is None else current.revision)
            token = FRAME.set(NodeFrame(journal=self, key=key, iteration=iteration))
            try:
                value = await self._race(fn, ctx)
            except asyncio.CancelledError:
                # Cancelled by the scheduler (a race loser, a failing sibling) or the caller. A
                # replay-safe node is recorded abandoned; a side-effect one stays "running": it
                # may have committed (D5), so a continued run asks for reconciliation.
                if effect in REPLAY_SAFE_EFFECTS and not self._lease.lost.aborted:
                    with contextlib.suppress(WorkflowRunError):
                        await self._settle(running, status="cancelled")
                raise
            except Exception as error:
                if isinstance(error, WorkflowRunError) or self._lease.lost.aborted:
                    raise  # lease lost, reconciliation needed inside: nothing to record here
                await self._settle(running, status="failed", error=ChildError.of(error))
                raise
            finally:
                FRAME.reset(token)
            try:
                stored = encode_output(value, run_id=self.run_id, node_key=key)
            except WorkflowRunError as error:
                await self._settle(running, status="failed", error=ChildError.of(error))
                raise
            await self._settle(running, status="completed", output=stored)
            return value

        return run

    async def _settle(self, running: WorkflowNodeRecord, **changes: Any) -> None:
        stamp = iso_now()
        await self._put(
            running.next(updated_at=stamp, completed_at=stamp, **changes), running.revision
        )

    async def _race(self, fn: Callable[[NodeContext], Any], ctx: NodeContext) -> Any:
        """Run ``fn`` and abort it the moment the run's lease is lost."""

        async def call() -> Any:
            value = fn(ctx)
            if inspect.isawaitable(value):
                value = await value
            return value

        lost = self._lease.lost
        task = asyncio.get_running_loop().create_task(call())
        waiter: asyncio.Future[object] = asyncio.get_running_loop().create_future()

        def on_lost(reason: object) -> None:
            if not waiter.done():
                waiter.set_result(reason)

        remove = lost.add_listener(on_lost)
        try:
            await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            await asyncio.wait({task})
            raise
        finally:
            remove()
            if not waiter.done():
                waiter.cancel()
        if task.done():
            return task.result()
        task.cancel()
        await asyncio.wait({task})
        error = self._lease.lost_error()
        raise error if error is not None else asyncio.CancelledError()
