"""The shared store conformance suite over the in-memory stores."""

from __future__ import annotations

import uuid

import pytest

from actoviq.runtime import (
    InMemoryArtifactMetadataStore,
    InMemoryBudgetLedgerStore,
    InMemoryCheckpointStore,
    InMemoryDurableChildStore,
    InMemoryMemoryStore,
    InMemorySessionStore,
    InMemoryWorkflowRunStore,
)
from actoviq.runtime.stores.conformance import CONFORMANCE_CHECKS, ConformanceCheck, StoreBundle


def _bundle() -> StoreBundle:
    return StoreBundle(
        sessions=InMemorySessionStore(),
        checkpoints=InMemoryCheckpointStore(),
        memory=InMemoryMemoryStore(),
        artifacts=InMemoryArtifactMetadataStore(),
        children=InMemoryDurableChildStore(),
        ledgers=InMemoryBudgetLedgerStore(),
        workflows=InMemoryWorkflowRunStore(),
    )


@pytest.mark.parametrize("check", CONFORMANCE_CHECKS, ids=lambda c: c.name)
async def test_in_memory_conformance(check: ConformanceCheck) -> None:
    await check.run(_bundle(), uuid.uuid4().hex)


def test_suite_is_not_empty() -> None:
    assert len(CONFORMANCE_CHECKS) >= 15
    assert len({c.name for c in CONFORMANCE_CHECKS}) == len(CONFORMANCE_CHECKS)
