"""Fixtures: one store bundle per backend (in-memory, SQLite file, PostgreSQL when configured)."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

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
from actoviq.runtime.stores.conformance import StoreBundle
from actoviq.storage.sqlite import SqliteStorage

# Helper modules next to the tests (claims_worker) are imported by name (importlib import mode).
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

POSTGRES_URL = os.environ.get("ACTOVIQ_TEST_POSTGRES_URL")
BACKENDS = [
    "memory",
    "sqlite",
    pytest.param(
        "postgres",
        marks=[
            pytest.mark.postgres,
            pytest.mark.skipif(
                not POSTGRES_URL,
                reason="ACTOVIQ_TEST_POSTGRES_URL is not set (run ci/start-postgres.sh)",
            ),
        ],
    ),
]


def asyncpg_url(url: str) -> str:
    """Accept a plain ``postgresql://`` DSN and point SQLAlchemy at asyncpg."""
    return (
        url.replace("postgresql://", "postgresql+asyncpg://", 1)
        if "+" not in url.split(":")[0]
        else url
    )


@pytest.fixture(params=BACKENDS)
async def bundle(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StoreBundle]:
    backend: str = request.param
    if backend == "memory":
        yield StoreBundle(
            sessions=InMemorySessionStore(),
            checkpoints=InMemoryCheckpointStore(),
            memory=InMemoryMemoryStore(),
            artifacts=InMemoryArtifactMetadataStore(),
            children=InMemoryDurableChildStore(),
            ledgers=InMemoryBudgetLedgerStore(),
            workflows=InMemoryWorkflowRunStore(),
        )
        return
    target = (
        str(tmp_path / "db" / "actoviq.db")
        if backend == "sqlite"
        else asyncpg_url(POSTGRES_URL or "")
    )
    async with await SqliteStorage.open(target) as storage:
        yield StoreBundle(
            sessions=storage.sessions,
            checkpoints=storage.checkpoints,
            memory=storage.memory,
            artifacts=storage.artifacts,
            children=storage.children,
            ledgers=storage.ledgers,
            workflows=storage.workflows,
        )
