"""One execution of a durable child: take the lease, run, settle (fenced).

:meth:`ChildExecutor.execute` is the state machine of spec 04 §1.9.3 with the Python fixes of
§8.1.3-5 and §8.2-15:

* ``completed`` returns the stored result; ``cancelled``, ``failed`` and
  ``needs_reconciliation`` raise (never replayed implicitly);
* ``running`` with a live lease raises "leased"; with an expired lease it is taken over only when
  replay is safe (``read``, keyed ``idempotent-write``), otherwise the record moves to
  ``needs_reconciliation`` ("may have committed");
* the lease is renewed while the child runs; losing it (a takeover, a cancel) aborts the run;
* an ``interrupted`` outcome persists the run state and the interruptions; resuming it with
  decisions continues that state once (the record's CAS, then the runtime's claim).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

import attrs

from actoviq.core import AgentSpec, JsonObject, JsonValue, RunResult, Unset, iso_now
from actoviq.orchestration.background._support import (
    cancel_error,
    interrupted_error,
    message_of,
)
from actoviq.orchestration.background.claimed import ClaimedLedger
from actoviq.orchestration.background.engine import DEFAULT_CANCEL_REASON
from actoviq.orchestration.background.errors import (
    DurableChildAgentError,
    DurableChildCancelledError,
    DurableChildConflictError,
    DurableChildFailedError,
    DurableChildLeasedError,
    DurableChildReconciliationError,
)
from actoviq.orchestration.background.leases import LeaseKeeper, RecordIO
from actoviq.orchestration.background.parents import ChildContext
from actoviq.orchestration.background.records import DurableChildRecord, stored_result_json
from actoviq.orchestration.errors import OrchestrationConfigError
from actoviq.orchestration.outcomes import ChildError, ChildRunOutcome, SessionMode
from actoviq.runtime import InterruptionDecision, RunStateStaleError

if TYPE_CHECKING:
    from actoviq.orchestration.child_runner import ChildRunner

__all__ = ["ChildExecutor", "Emit"]

Emit = Callable[[DurableChildRecord, str, JsonObject], Awaitable[None]]
"""Emits a background event in the parent's trace."""


class ChildExecutor:
    """Runs durable children in one worker.

    Args:
        io: the record operations (the engine).
        runner: the worker's child runner.
        children: parent scopes and agents.
        owner_id: what this worker's leases name.
        lease_ms: the lease length.
        emit: background events.
    """

    def __init__(
        self,
        io: RecordIO,
        runner: ChildRunner,
        children: ChildContext,
        *,
        owner_id: str,
        lease_ms: int,
        emit: Emit,
    ) -> None:
        self._io = io
        self._runner = runner
        self._children = children
        self._owner = owner_id
        self._lease_ms = lease_ms
        self._emit = emit
        self.keepers: dict[str, LeaseKeeper] = {}

    async def mark_needs_reconciliation(self, current: DurableChildRecord, now: int) -> None:
        """Move a stale side-effect child to ``needs_reconciliation`` (if nobody else did)."""
        marked = current.next(status="needs_reconciliation", updated_at=iso_now())
        if await self._io.cas(current, marked):
            await self._emit(
                marked,
                "orchestration.background.reconciliation_required",
                {
                    "agentId": marked.agent_id,
                    "effect": marked.effect,
                    "leaseOwner": current.lease_owner,
                    "leaseExpiresAt": current.lease_expires_at,
                    "detectedAt": now,
                },
            )

    async def _acquire(self, current: DurableChildRecord, resuming: bool) -> DurableChildRecord:
        child_id = current.child_id
        status = current.status
        if status == "cancelled":
            raise DurableChildCancelledError(child_id, reason=message_of(current))
        if status == "failed":
            raise DurableChildFailedError(
                f'Durable child "{child_id}" has failed and cannot be implicitly replayed.',
                child_id=child_id,
                details={"error": None if current.error is None else current.error.to_json()},
            )
        if status == "needs_reconciliation":
            raise DurableChildReconciliationError(child_id)
        if status == "interrupted" and not resuming:
            raise interrupted_error(current)
        now = await self._io.now_ms()
        if status == "running":
            if current.lease_expires_at is not None and current.lease_expires_at > now:
                raise DurableChildLeasedError(
                    child_id,
                    lease_owner=current.lease_owner,
                    lease_expires_at=current.lease_expires_at,
                )
            if not current.replay_safe:
                await self.mark_needs_reconciliation(current, now)
                raise DurableChildReconciliationError(
                    child_id, details={"leaseOwner": current.lease_owner}
                )
        leased = current.next(
            status="running",
            attempts=current.attempts + 1,
            updated_at=iso_now(),
            lease_owner=self._owner,
            lease_expires_at=now + self._lease_ms,
            heartbeat_at=now,
            error=None,
            interruptions=(),
            run_state=None,
        )
        if not await self._io.cas(current, leased):
            raise DurableChildConflictError(
                f'Durable child "{child_id}" changed while acquiring its lease.', child_id=child_id
            )
        return leased

    async def execute(
        self,
        current: DurableChildRecord,
        decisions: Sequence[InterruptionDecision] | None,
        context: JsonValue | Unset,
    ) -> tuple[RunResult[Any] | None, DurableChildRecord]:
        """Run ``current`` here once; returns the result (None: raised) and the last record.

        Raises:
            DurableChildError: see the module doc; or the run's own error (recorded ``failed``).
        """
        child_id = current.child_id
        if current.status == "completed":
            result = current.run_result()
            if result is not None:
                return result, current
        resuming = decisions is not None and current.status == "interrupted"
        run_state, interruptions = current.run_state, current.interruptions
        leased = await self._acquire(current, resuming)
        keeper = LeaseKeeper(
            self._io,
            leased,
            lease_ms=self._lease_ms,
            on_lost=lambda lost: self._runner.tree.cancel_tree(child_id, lost),
        )
        self.keepers[child_id] = keeper
        try:
            agent = await self._children.agent(leased.agent_id)
            if agent is None:
                error = DurableChildAgentError(
                    f'Cannot resolve durable child agent "{leased.agent_id}".', child_id=child_id
                )
                await keeper.finish(status="failed", error=ChildError.of(error))
                raise error
            run_context = leased.context if isinstance(context, Unset) else context
            # The heartbeat runs beside the child and is always stopped and awaited here.
            heartbeat = asyncio.get_running_loop().create_task(keeper.keep())
            try:
                outcome = await self._run(
                    leased, agent, run_context, decisions if resuming else None, run_state
                )
            except Exception as error:
                await _stop(keeper, heartbeat)
                if keeper.lost is not None:
                    raise keeper.lost from error
                stale = _stale(error)
                if resuming and stale is not None:
                    # The runtime refused the state (another execution resumed it): put the
                    # record back as it was, for whoever holds the newer state.
                    await keeper.finish(
                        status="interrupted", run_state=run_state, interruptions=interruptions
                    )
                    raise
                if stale is not None and stale.reason == "claimed":
                    # The run's checkpoint is still leased by the runtime of a worker that died
                    # (its checkpoint lease outlives the child's): not a failure. The record
                    # names that holder until its lease expires; recover() retries then.
                    raise await self._held_by_runtime(keeper, stale) from error
                await _settle(keeper, status="failed", error=ChildError.of(error))
                raise
            finally:
                await _stop(keeper, heartbeat)
            return await self._settle_outcome(keeper, outcome), keeper.record
        finally:
            self.keepers.pop(child_id, None)

    async def _held_by_runtime(
        self, keeper: LeaseKeeper, stale: RunStateStaleError
    ) -> DurableChildLeasedError:
        details = stale.details or {}
        owner = details.get("leaseOwner")
        expires = details.get("leaseExpiresAt")
        # The runtime refused before the run did anything: this takeover is not an attempt.
        await keeper.write(
            attempts=keeper.record.attempts - 1,
            lease_owner=owner if isinstance(owner, str) else None,
            lease_expires_at=expires if isinstance(expires, int) else None,
            heartbeat_at=None,
        )
        return DurableChildLeasedError(
            keeper.record.child_id,
            lease_owner=owner if isinstance(owner, str) else None,
            lease_expires_at=expires if isinstance(expires, int) else None,
        )

    async def _run(
        self,
        record: DurableChildRecord,
        agent: AgentSpec[Any, Any],
        context: JsonValue | Unset,
        decisions: Sequence[InterruptionDecision] | None,
        run_state: JsonObject | None,
    ) -> ChildRunOutcome:
        parent = self._children.parent(record)
        if record.attempts > 1:  # the same logical child again: counted once on the budget
            parent = attrs.evolve(parent, budget=ClaimedLedger(parent.budget))
        value = None if isinstance(context, Unset) else context
        if decisions is not None and run_state is not None:
            self._runner.runtime.register_agent(agent)
            return await self._runner.resume(
                parent,
                agent,
                run_state,
                decisions,
                context=value,
                failure_policy=record.failure_policy,
            )
        return await self._runner.run(
            parent,
            agent,
            record.input,
            context=value,
            run_id=record.child_id,
            metadata={**record.metadata, "backgroundChild": {"attempt": record.attempts}},
            effect=record.effect,
            idempotency_key=record.idempotency_key,
            failure_policy=record.failure_policy,
            session_mode=cast(SessionMode | None, record.session_mode),
        )

    async def _settle_outcome(
        self, keeper: LeaseKeeper, outcome: ChildRunOutcome
    ) -> RunResult[Any]:
        child_id = keeper.record.child_id
        if keeper.lost is not None:
            raise keeper.lost
        result = outcome.result
        if outcome.status == "completed" and result is not None:
            try:
                stored = stored_result_json(result)
            except OrchestrationConfigError as error:
                await _settle(keeper, status="failed", error=ChildError.of(error))
                raise
            await _settle(keeper, status="completed", result=stored, error=None)
            return result
        if outcome.status == "interrupted" and result is not None:
            settled = await _settle(
                keeper,
                status="interrupted",
                interruptions=result.interruptions,
                run_state=result.state,
            )
            raise interrupted_error(settled)
        if outcome.status == "cancelled":
            reason = outcome.error.message if outcome.error is not None else DEFAULT_CANCEL_REASON
            await _settle(keeper, status="cancelled", error=cancel_error(reason))
            raise DurableChildCancelledError(child_id, reason=reason)
        error = outcome.error or ChildError(name="Error", message="unknown error")
        await _settle(keeper, status="failed", error=error)
        raise DurableChildFailedError(
            f'Durable child "{child_id}" failed: {error.message}',
            child_id=child_id,
            details={"error": error.to_json()},
        )


async def _stop(keeper: LeaseKeeper, heartbeat: asyncio.Task[None]) -> None:
    keeper.stop()
    if not heartbeat.done():
        await asyncio.wait({heartbeat})
    if not heartbeat.cancelled() and heartbeat.exception() is not None:
        raise heartbeat.exception()  # type: ignore[misc]


def _stale(error: BaseException | None) -> RunStateStaleError | None:
    seen = 0
    while error is not None and seen < 8:
        if isinstance(error, RunStateStaleError):
            return error
        error, seen = error.__cause__, seen + 1
    return None


async def _settle(keeper: LeaseKeeper, **changes: Any) -> DurableChildRecord:
    written = await keeper.finish(**changes)
    if written is not None:
        return written
    lost = keeper.lost
    assert lost is not None
    raise lost
