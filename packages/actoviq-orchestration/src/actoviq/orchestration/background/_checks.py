"""The checks of the background conformance kit.

Spec 04 §7.3 rows 32-44, §8.1.3-5 and §8.2-15; seed 001 §12: a background child survives its
worker and is then queried, resumed or reconciled.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

from actoviq.core import AbortController, ActoviqError, AgentSpec
from actoviq.orchestration.background.errors import (
    DurableChildCancelledError,
    DurableChildConflictError,
    DurableChildError,
    DurableChildFailedError,
    DurableChildInterruptedError,
    DurableChildLeasedError,
    DurableChildLeaseLostError,
    DurableChildNotFoundError,
    DurableChildNotReadyError,
    DurableChildReconciliationError,
    DurableChildStateError,
)
from actoviq.orchestration.background.kit import Kit, register_check
from actoviq.orchestration.errors import (
    ChildPolicyError,
    ChildScopeError,
    OrchestrationConfigError,
    OrchestrationError,
)
from actoviq.orchestration.outcomes import ChildFailurePolicy
from actoviq.orchestration.tree import RunTree
from actoviq.runtime import InterruptionDecision, RuntimeServices

__all__: list[str] = []

E = TypeVar("E", bound=BaseException)


async def _raises(error_type: type[E], action: Awaitable[Any], fragment: str = "") -> E:
    caught: E | None = None
    try:
        await action
    except error_type as error:
        caught = error
    if caught is None:
        raise AssertionError(f"expected {error_type.__name__} ({fragment!r})")
    if fragment not in str(caught):
        raise AssertionError(f"expected {fragment!r} in {str(caught)!r}")
    return caught


async def _outcome(action: Awaitable[Any]) -> Any:
    try:
        return await action
    except Exception as error:
        return error


async def _open_worker(kit: Kit, owner_id: str, lease_ms: int) -> None:
    async with kit.worker(owner_id, lease_ms=lease_ms):
        pass


@register_check
async def check_spawn_runs_and_completes(kit: Kit) -> None:
    async with kit.worker("a") as a:
        handle = await a.manager.spawn(a.root, kit.agent("kit-echo"), "hello", effect="read")
        result = await handle.result()
        assert (result.run_id, result.output) == (handle.child_id, "kit-echo:hello")
        record = await handle.query()
        assert (record.status, record.attempts, record.agent_id) == ("completed", 1, "kit-echo")
        assert record.parent_run_id == a.root.run_id
        assert record.lease_owner is None
        stored = record.run_result()
        assert stored is not None
        assert (stored.output, stored.run_id) == ("kit-echo:hello", handle.child_id)
        # Completed is final: resume is a no-op, cancel leaves it completed.
        await a.manager.resume(handle.child_id)
        assert (await a.manager.result(handle.child_id)).output == "kit-echo:hello"
        assert (await a.manager.cancel(handle.child_id)).status == "completed"
        listed = await a.manager.list_children(parent_run_id=a.root.run_id)
        assert [r.child_id for r in listed] == [handle.child_id]
        assert await a.manager.list_children(parent_run_id="someone-else") == []


@register_check
async def check_queued_child_is_resumed_by_another_worker(kit: Kit) -> None:
    async with kit.worker("a") as a:
        handle = await a.manager.spawn(
            a.root, kit.agent("kit-echo"), "resumed", auto_start=False, context={"k": 1}
        )
        queued = await handle.query()
        assert (queued.status, queued.revision, queued.attempts) == ("queued", 0, 0)
        await _raises(DurableChildNotReadyError, a.manager.result(handle.child_id), "call resume")
    async with kit.worker("b") as b:
        await b.manager.resume(handle.child_id)
        result = await b.manager.result(handle.child_id)
        assert (result.run_id, result.output) == (handle.child_id, "kit-echo:resumed")
        record = await b.manager.query(handle.child_id)
        assert (record.status, record.attempts) == ("completed", 1)
        assert record.revision > queued.revision


@register_check
async def check_validation_errors(kit: Kit) -> None:
    async with kit.worker("a") as a:
        agent = kit.agent("kit-echo")
        await _raises(DurableChildNotFoundError, a.manager.query("nope"), "Unknown")
        await _raises(DurableChildNotFoundError, a.manager.resume("nope"), "Unknown")
        await _raises(
            ChildPolicyError,
            a.manager.spawn(a.root, agent, "x", failure_policy=ChildFailurePolicy.retry_safe(2)),
            "cannot replay",
        )
        await _raises(
            ChildPolicyError,
            a.manager.spawn(
                a.root,
                agent,
                "x",
                effect="idempotent-write",
                failure_policy=ChildFailurePolicy.retry_safe(3),
            ),
            "idempotencyKey",
        )
        stranger = RunTree().create_root(services=RuntimeServices())
        await _raises(ChildScopeError, a.manager.spawn(stranger, agent, "x"), "share")
        await _raises(
            OrchestrationConfigError,
            a.manager.spawn(a.root, agent, "x", context={"bad": float("nan")}),
        )
        assert await a.manager.list_children() == []  # nothing was persisted
        handle = await a.manager.spawn(a.root, agent, "x", context=None, child_id="fixed")
        assert handle.child_id == "fixed"
        await handle.result()
        await _raises(ActoviqError, a.manager.spawn(a.root, agent, "x", child_id="fixed"))
    await _raises(OrchestrationConfigError, _open_worker(kit, "zero", 0), "leaseMs")


@register_check
async def check_failures_are_recorded_and_never_replayed(kit: Kit) -> None:
    async with kit.worker("a") as a:
        failing = await a.manager.spawn(a.root, kit.agent("kit-fail"), "x", effect="read")
        await _raises(OrchestrationError, failing.result(), "failed after 1 attempt")
        record = await failing.query()
        assert record.status == "failed"
        assert record.error is not None
        await _raises(DurableChildFailedError, failing.result(), "failed")
        await a.manager.resume(failing.child_id)
        await _raises(DurableChildFailedError, failing.result(), "failed")
        cancelled = await failing.cancel()
        assert (cancelled.status, cancelled.revision) == ("failed", record.revision)
        ghost: AgentSpec[Any, Any] = AgentSpec(
            id="kit-ghost", name="Ghost", instructions="?", model="kit-echo:model"
        )
        orphan = await a.manager.spawn(a.root, ghost, "x", auto_start=False)
    async with kit.worker("b", resolve=False) as b:
        await b.manager.resume(orphan.child_id)
        await _raises(DurableChildError, b.manager.result(orphan.child_id), "Cannot resolve")
        await _raises(DurableChildFailedError, b.manager.result(orphan.child_id), "failed")


@register_check
async def check_cancel_queued_child(kit: Kit) -> None:
    async with kit.worker("a") as a:
        handle = await a.manager.spawn(
            a.root, kit.agent("kit-echo"), [], auto_start=False, effect="read"
        )
        cancelled = await handle.cancel("not needed")
        assert cancelled.status == "cancelled"
        assert cancelled.error is not None
        assert cancelled.error.message == "not needed"
        again = await handle.cancel()
        assert again.revision == cancelled.revision
        await _raises(DurableChildCancelledError, handle.result(), "cancelled")
        await handle.resume()
        await _raises(DurableChildCancelledError, handle.result(), "cancelled")


@register_check
async def check_live_lease_is_refused_then_read_child_is_taken_over(kit: Kit) -> None:
    async with kit.worker("a") as a:
        child = await a.manager.spawn(a.root, kit.agent("kit-wait"), "takeover", effect="read")
        await kit.entered("takeover").wait()
        running = await child.query()
        assert (running.status, running.lease_owner) == ("running", a.manager.owner_id)
        async with kit.worker("b") as b:
            await b.manager.resume(child.child_id)
            await _raises(DurableChildLeasedError, b.manager.result(child.child_id), "leased")
            report = await b.manager.recover()
            assert child.child_id in [c for c, _ in report.leased]
            # Worker a stops making progress (no heartbeat) and its lease runs out.
            kit.clock.advance(kit.lease_ms + 1)
            kit.entered("takeover").clear()
            report = await b.manager.recover()
            assert child.child_id in report.started
            await kit.entered("takeover").wait()  # b holds the lease and runs the child
            # Both runs now finish; a's outcome is fenced (its lease was taken over).
            async with asyncio.TaskGroup() as group:
                a_outcome = group.create_task(_outcome(a.manager.result(child.child_id)))
                kit.gate("takeover").set()
                result = await b.manager.result(child.child_id)
            assert result.output == "kit-wait:done"
            assert isinstance(a_outcome.result(), DurableChildLeaseLostError)
            record = await b.manager.query(child.child_id)
            assert (record.status, record.attempts) == ("completed", 2)
            assert record.lease_owner is None


@register_check
async def check_side_effect_child_goes_to_reconciliation_never_replay(kit: Kit) -> None:
    async with kit.worker("a") as a:
        child = await a.manager.spawn(a.root, kit.agent("kit-write"), "pay-out")
        await kit.entered("pay-out").wait()
        assert kit.effects == ["write:pay-out"]
        kit.clock.advance(kit.lease_ms + 1)
        async with kit.worker("b") as b:
            await b.manager.resume(child.child_id)
            await _raises(
                DurableChildReconciliationError,
                b.manager.result(child.child_id),
                "may have committed",
            )
            record = await b.manager.query(child.child_id)
            assert record.status == "needs_reconciliation"
            report = await b.manager.recover()
            assert child.child_id in report.needs_reconciliation
            assert child.child_id not in report.started
            await _raises(
                DurableChildNotFoundError,
                b.manager.reconcile("missing-child", "completed", actor="ops"),
                "Unknown",
            )
            await _raises(
                OrchestrationConfigError,
                b.manager.reconcile(child.child_id, "completed", actor=" "),
                "actor",
            )
            settled = await b.manager.reconcile(
                child.child_id,
                "completed",
                actor="ops@example",
                note="checked the ledger: paid once",
                output={"paid": True},
            )
            assert settled.status == "completed"
            [entry] = settled.reconciliations
            assert (entry.actor, entry.previous_status, entry.previous_lease_owner) == (
                "ops@example",
                "needs_reconciliation",
                a.manager.owner_id,
            )
            assert (await b.manager.result(child.child_id)).output == {"paid": True}
            await _raises(
                DurableChildStateError,
                b.manager.reconcile(child.child_id, "failed", actor="ops"),
                "Cannot reconcile",
            )
    assert kit.effects == ["write:pay-out"]  # never replayed


@register_check
async def check_requeue_after_reconciliation(kit: Kit) -> None:
    async with kit.worker("a") as a:
        child = await a.manager.spawn(a.root, kit.agent("kit-write"), "retry-me")
        await kit.entered("retry-me").wait()
        kit.clock.advance(kit.lease_ms + 1)
        async with kit.worker("b") as b:
            report = await b.manager.recover()
            assert report.needs_reconciliation == (child.child_id,)
            queued = await b.manager.reconcile(
                child.child_id, "requeue", actor="ops", note="the write never reached the bank"
            )
            assert queued.status == "queued"
            kit.gate("retry-me").set()
            await b.manager.resume(child.child_id)
            assert (await b.manager.result(child.child_id)).output == "kit-write:done"
            record = await b.manager.query(child.child_id)
            assert (record.status, len(record.reconciliations)) == ("completed", 1)
    assert kit.effects == ["write:retry-me", "write:retry-me"]  # replayed on a human's decision


@register_check
async def check_interrupted_child_resumes_exactly_once(kit: Kit) -> None:
    async with kit.worker("a") as a:
        child = await a.manager.spawn(a.root, kit.agent("kit-pay"), "invoice-7")
        error = await _raises(DurableChildInterruptedError, child.result())
        record = await child.query()
        assert record.status == "interrupted"
        assert len(record.interruptions) == 1
        assert record.run_state is not None
        assert (error.details or {})["interruptions"] == [record.interruptions[0].id]
        await _raises(DurableChildStateError, a.manager.resume(child.child_id), "decisions")
    assert kit.effects == []
    approve = [InterruptionDecision.approve(record.interruptions[0].id)]
    async with kit.worker("b") as b, kit.worker("c") as c:
        await asyncio.gather(
            b.manager.resume(child.child_id, approve), c.manager.resume(child.child_id, approve)
        )
        outcomes: list[Any] = []
        for worker in (b, c):
            try:
                outcomes.append((await worker.manager.result(child.child_id)).output)
            except (DurableChildConflictError, DurableChildLeasedError) as lost:
                outcomes.append(type(lost).__name__)
        assert "kit-pay:done" in outcomes
        final = await b.manager.query(child.child_id)
        assert final.status == "completed"
    assert kit.effects == ["pay:invoice-7"]  # the approved side effect ran once


@register_check
async def check_parent_cancel_cancels_background_children(kit: Kit) -> None:
    async with kit.worker("a") as a:
        parent = a.runner.tree.derive_child(a.root, "parent-run")
        running = await a.manager.spawn(parent, kit.agent("kit-wait"), "held", effect="read")
        queued = await a.manager.spawn(parent, kit.agent("kit-echo"), "later", auto_start=False)
        detached = await a.manager.spawn(
            parent, kit.agent("kit-echo"), "free", auto_start=False, cancel_with_parent=False
        )
        await kit.entered("held").wait()
        a.runner.tree.cancel_tree(parent.run_id)
        assert (await running.wait()).status == "cancelled"
        assert (await queued.wait()).status == "cancelled"
        await _raises(DurableChildCancelledError, running.result(), "cancelled")
        assert (await detached.query()).status == "queued"
        # Explicit, cross-process form: cancel every descendant of a parent run id.
        cancelled = await a.manager.cancel_children("parent-run", "shutting down")
        assert [r.child_id for r in cancelled] == [detached.child_id]


@register_check
async def check_cancel_from_another_worker_stops_the_run(kit: Kit) -> None:
    lease_ms = 600  # real heartbeats every 200 ms
    async with kit.worker("a", lease_ms=lease_ms, wall_clock=True) as a:
        child = await a.manager.spawn(a.root, kit.agent("kit-wait"), "stop-me", effect="read")
        await kit.entered("stop-me").wait()
        async with kit.worker("b", lease_ms=lease_ms, wall_clock=True) as b:
            record = await b.manager.cancel(child.child_id, "operator stop")
            assert record.status == "cancelled"
        # Worker a sees the cancel at its next heartbeat and aborts its run (the gate stays shut).
        await _raises(DurableChildCancelledError, child.result(), "cancelled")
        final = await a.manager.query(child.child_id)
        assert final.status == "cancelled"
        assert final.error is not None
        assert final.error.message == "operator stop"


@register_check
async def check_heartbeat_keeps_a_long_child_leased(kit: Kit) -> None:
    lease_ms = 600
    async with kit.worker("a", lease_ms=lease_ms, wall_clock=True) as a:
        child = await a.manager.spawn(a.root, kit.agent("kit-wait"), "long", effect="read")
        await kit.entered("long").wait()
        first = await child.query()
        async with kit.worker("b", lease_ms=lease_ms, wall_clock=True) as b:
            renewed = first
            async with asyncio.timeout(10):
                while (renewed.lease_expires_at or 0) <= (first.lease_expires_at or 0) + lease_ms:
                    await asyncio.sleep(lease_ms / 6000)
                    renewed = await b.manager.query(child.child_id)
            # Longer than one lease has passed, yet the child is still a's.
            report = await b.manager.recover()
            assert report.started == ()
            assert child.child_id in [c for c, _ in report.leased]
        kit.gate("long").set()
        assert (await child.result()).output == "kit-wait:done"
        assert (await child.query()).attempts == 1


@register_check
async def check_closing_a_worker_releases_its_children(kit: Kit) -> None:
    async with kit.worker("a") as a:
        child = await a.manager.spawn(a.root, kit.agent("kit-wait"), "handover", effect="read")
        await kit.entered("handover").wait()
    # a closed mid-run: its lease was released at once (no wait for expiry).
    async with kit.worker("b") as b:
        report = await b.manager.recover()
        assert report.started == (child.child_id,)
        kit.gate("handover").set()
        assert (await b.manager.result(child.child_id)).output == "kit-wait:done"


@register_check
async def check_serve_takes_over_until_stopped(kit: Kit) -> None:
    async with kit.worker("a") as a:
        child = await a.manager.spawn(a.root, kit.agent("kit-echo"), "served", auto_start=False)
    async with kit.worker("b") as b:
        stop = AbortController()
        async with asyncio.TaskGroup() as group:
            group.create_task(b.manager.serve(stop=stop.signal, poll_interval=0.01))
            try:
                record = await b.manager.wait(child.child_id)
            finally:
                stop.abort("done")
        assert record.status == "completed"
        assert (await b.manager.result(child.child_id)).output == "kit-echo:served"
