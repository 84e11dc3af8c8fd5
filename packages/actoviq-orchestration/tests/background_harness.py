"""The background conformance kit's harness for the store engine (memory, SQLite, PostgreSQL)."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import AsyncGenerator, Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest

from actoviq.core import JsonObject
from actoviq.orchestration import BackgroundChildManager, ChildRunner
from actoviq.orchestration.background import AgentResolver, Clock
from actoviq.orchestration.background.conformance import KitAgent, scripted_kit_provider
from actoviq.providers import ModelRegistry
from actoviq.runtime import (
    AgentRuntime,
    DurableChildStore,
    InMemoryDurableChildStore,
    RuntimeServices,
    RuntimeTool,
)
from actoviq.storage.sqlite import SqliteStorage

POSTGRES_URL = os.environ.get("ACTOVIQ_TEST_POSTGRES_URL")

# A queued record as the reference implementation writes it (every key it persists).
REFERENCE_RECORD: JsonObject = {
    "schemaVersion": 1,
    "childId": "ref-child",
    "revision": 0,
    "parent": {
        "runId": "ref-parent",
        "depth": 0,
        "trace": {"runId": "ref-parent", "traceId": "a" * 32, "spanId": "b" * 16},
        "securityPolicy": {"id": "default"},
        "tenantSession": {"tenantId": "default", "namespace": "default"},
        "workspacePolicy": {"access": "read-write"},
        "budget": {
            "limits": {
                "maxChildRuns": 9007199254740991,
                "maxDepth": 9007199254740991,
                "maxTotalTokens": 9007199254740991,
                "maxCostUsd": 1.7976931348623157e308,
            },
            "childRunsStarted": 0,
            "totalTokensUsed": 0,
            "costUsdUsed": 0,
        },
        "metadata": {},
    },
    "agentId": "worker",
    "input": [{"type": "text", "role": "user", "text": "from the reference"}],
    "metadata": {"origin": "ts"},
    "effect": "read",
    "failurePolicy": {"mode": "fail-fast"},
    "status": "queued",
    "attempts": 0,
    "createdAt": "2026-01-01T00:00:00.000Z",
    "updatedAt": "2026-01-01T00:00:00.000Z",
}

BACKENDS = [
    "memory",
    "sqlite",
    pytest.param(
        "postgres",
        marks=[
            pytest.mark.postgres,
            pytest.mark.skipif(not POSTGRES_URL, reason="ACTOVIQ_TEST_POSTGRES_URL is not set"),
        ],
    ),
]


def asyncpg_url(url: str) -> str:
    """A plain ``postgresql://`` DSN for SQLAlchemy's asyncpg driver."""
    return url.replace("postgresql://", "postgresql+asyncpg://", 1) if "+" not in url else url


def database(kind: str, tmp_path: Path) -> str:
    """Where the SQL backends live."""
    return str(tmp_path / "children.db") if kind == "sqlite" else asyncpg_url(POSTGRES_URL or "")


@attrs.frozen
class Backend:
    """A store plus the tenant one check writes under (PostgreSQL is shared between checks)."""

    store: DurableChildStore
    tenant_id: str


class StoreHarness:
    """Runs the kit against ``StoreBackgroundEngine`` on one backend kind."""

    def __init__(self, kind: str, tmp_path: Path) -> None:
        self.kind = kind
        self.tmp_path = tmp_path

    def runtime(self, agents: Sequence[KitAgent], tools: Sequence[RuntimeTool]) -> AgentRuntime:
        """One runtime serving every kit agent."""
        return AgentRuntime(
            models=ModelRegistry([scripted_kit_provider(agent) for agent in agents]),
            tools=list(tools),
            services=RuntimeServices(),
        )

    @contextlib.asynccontextmanager
    async def backend(self) -> AsyncGenerator[Backend]:
        """A fresh store (a fresh file for SQLite, a fresh tenant on PostgreSQL)."""
        tenant = f"kit-{uuid.uuid4().hex}"
        if self.kind == "memory":
            yield Backend(InMemoryDurableChildStore(), tenant)
            return
        folder = self.tmp_path / tenant
        async with await SqliteStorage.open(database(self.kind, folder)) as storage:
            yield Backend(storage.children, tenant)

    def manager(
        self,
        backend: Any,
        runner: ChildRunner,
        *,
        owner_id: str,
        lease_ms: int,
        clock: Clock | None,
        resolve_agent: AgentResolver | None,
    ) -> BackgroundChildManager:
        """The store engine's manager for one worker."""
        chosen: Backend = backend
        return BackgroundChildManager(
            runner,
            chosen.store,
            tenant_id=chosen.tenant_id,
            owner_id=owner_id,
            lease_ms=lease_ms,
            clock=clock,
            resolve_agent=resolve_agent,
        )
