"""The background engine conformance kit against the store engine on memory, SQLite, PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest
from background_harness import BACKENDS, StoreHarness

from actoviq.orchestration.background.conformance import (
    BACKGROUND_CHECKS,
    BackgroundCheck,
    run_background_check,
)


@pytest.mark.parametrize("kind", BACKENDS)
@pytest.mark.parametrize("check", BACKGROUND_CHECKS, ids=lambda c: c.name)
async def test_store_engine_conformance(kind: str, check: BackgroundCheck, tmp_path: Path) -> None:
    await run_background_check(StoreHarness(kind, tmp_path), check)


def test_the_kit_is_not_empty() -> None:
    assert len(BACKGROUND_CHECKS) >= 14
    assert len({c.name for c in BACKGROUND_CHECKS}) == len(BACKGROUND_CHECKS)
