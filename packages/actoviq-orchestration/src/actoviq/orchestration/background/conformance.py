"""The background engine conformance kit: one set of checks every engine must pass.

Plain async code (no pytest import), like the store conformance suite, so any test runner drives
it. An engine's tests implement :class:`~actoviq.orchestration.background.kit.BackgroundHarness`
(how to build a runtime for the kit's agents, a durable backend shared by several workers, and a
manager of the engine on it) and parametrise over :data:`BACKGROUND_CHECKS`::

    @pytest.mark.parametrize("check", BACKGROUND_CHECKS, ids=lambda c: c.name)
    async def test_engine(check: BackgroundCheck) -> None:
        await run_background_check(MyHarness(), check)

Each check opens "workers" (a runtime, a runner and a manager each) over one backend, as separate
processes would, and drives the kit's scripted agents through spawn, takeover, reconciliation,
resume of interrupted children, cancellation and the lease rules. Time is a
:class:`~actoviq.orchestration.background.kit.ManualClock` unless a check needs real heartbeats.
A harness serves each kit agent with
:func:`~actoviq.orchestration.background.kit.scripted_kit_provider` (a ``ScriptedProvider``
answering with the agent's :class:`~actoviq.orchestration.background.kit.KitTurn`).
"""

from __future__ import annotations

import asyncio

from actoviq.orchestration.background import _checks
from actoviq.orchestration.background.kit import (
    CHECKS,
    KIT_AGENT_IDS,
    BackgroundCheck,
    BackgroundHarness,
    Kit,
    KitAgent,
    KitTurn,
    KitWorker,
    ManualClock,
    scripted_kit_provider,
)

__all__ = [
    "BACKGROUND_CHECKS",
    "KIT_AGENT_IDS",
    "BackgroundCheck",
    "BackgroundHarness",
    "Kit",
    "KitAgent",
    "KitTurn",
    "KitWorker",
    "ManualClock",
    "run_background_check",
    "scripted_kit_provider",
]

_MODULES = (_checks,)  # importing it registers the checks

BACKGROUND_CHECKS: tuple[BackgroundCheck, ...] = tuple(CHECKS)
"""Every check of the kit."""


async def run_background_check(harness: BackgroundHarness, check: BackgroundCheck) -> None:
    """Run one check in a fresh backend (bounded: a hung engine fails after 60 s)."""
    async with harness.backend() as backend, asyncio.timeout(60):
        await check.run(Kit(harness, backend))
