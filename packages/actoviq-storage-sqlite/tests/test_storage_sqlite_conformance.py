"""The shared store conformance suite over in-memory, SQLite and PostgreSQL (when configured)."""

from __future__ import annotations

import uuid

import pytest

from actoviq.runtime.stores.conformance import CONFORMANCE_CHECKS, ConformanceCheck, StoreBundle


@pytest.mark.parametrize("check", CONFORMANCE_CHECKS, ids=lambda c: c.name)
async def test_store_conformance(bundle: StoreBundle, check: ConformanceCheck) -> None:
    await check.run(bundle, uuid.uuid4().hex)
