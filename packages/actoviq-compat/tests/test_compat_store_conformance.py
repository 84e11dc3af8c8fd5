"""One run of the shared store conformance suite with JSON v1 files as the session store."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from actoviq.compat import LegacyJsonV1SessionStore
from actoviq.runtime import (
    InMemoryArtifactMetadataStore,
    InMemoryBudgetLedgerStore,
    InMemoryCheckpointStore,
    InMemoryDurableChildStore,
    InMemoryMemoryStore,
    InMemoryWorkflowRunStore,
)
from actoviq.runtime.stores.conformance import CONFORMANCE_CHECKS, ConformanceCheck, StoreBundle


@pytest.fixture
def bundle(tmp_path: Path) -> StoreBundle:
    """JSON v1 files as the session store; the other stores are the in-memory ones."""
    store = LegacyJsonV1SessionStore(tmp_path / "json-v1", durable=False)
    return StoreBundle(
        sessions=store.sessions,
        checkpoints=InMemoryCheckpointStore(),
        memory=InMemoryMemoryStore(),
        artifacts=InMemoryArtifactMetadataStore(),
        children=InMemoryDurableChildStore(),
        ledgers=InMemoryBudgetLedgerStore(),
        workflows=InMemoryWorkflowRunStore(),
    )


@pytest.mark.parametrize("check", CONFORMANCE_CHECKS, ids=lambda c: c.name)
async def test_json_v1_session_store_conformance(
    bundle: StoreBundle, check: ConformanceCheck
) -> None:
    await check.run(bundle, uuid.uuid4().hex)
