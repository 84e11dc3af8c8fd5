"""The orchestration background-children conformance kit against the DBOS engine (records in
SQLite or PostgreSQL, DBOS system database beside them), and against the embedded store engine
through the same configuration switch (``engine="store"`` / ``engine="dbos"``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from dbos_harness import POSTGRES_URL, EngineHarness, launched, system_url

from actoviq.orchestration.background.conformance import (
    BACKGROUND_CHECKS,
    BackgroundCheck,
    run_background_check,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

KINDS = [
    "sqlite",
    pytest.param(
        "postgres",
        marks=[
            pytest.mark.postgres,
            pytest.mark.slow,
            pytest.mark.skipif(not POSTGRES_URL, reason="ACTOVIQ_TEST_POSTGRES_URL is not set"),
        ],
    ),
]


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=KINDS)
async def kind(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[str]:
    # One DBOS per backend kind (its system database on SQLite or PostgreSQL), launched inside
    # the tests' loop: DBOS runs dequeued workflows on it.
    chosen = str(request.param)
    with launched(system_url(chosen, tmp_path_factory.mktemp("kit-dbos"))):
        yield chosen


@pytest.mark.parametrize("engine", ["store", "dbos"])
@pytest.mark.parametrize("check", BACKGROUND_CHECKS, ids=lambda c: c.name)
async def test_engine_conformance(
    kind: str, engine: str, check: BackgroundCheck, tmp_path: Path
) -> None:
    if engine == "store" and kind == "postgres":
        pytest.skip("the store engine's PostgreSQL leg runs in actoviq-orchestration")
    await run_background_check(EngineHarness(engine, kind, tmp_path), check)
