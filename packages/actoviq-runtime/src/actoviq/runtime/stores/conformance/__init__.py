"""The store conformance suite: one set of checks every backend must pass (decision D7).

It is plain async code (no pytest import), so any test runner can drive it. A backend's tests
build a :class:`StoreBundle` and parametrise over :data:`CONFORMANCE_CHECKS`::

    @pytest.mark.parametrize("check", CONFORMANCE_CHECKS, ids=lambda c: c.name)
    async def test_conformance(bundle: StoreBundle, check: ConformanceCheck) -> None:
        await check.run(bundle, uuid.uuid4().hex)

Artifact bytes (a metadata store and a blob store together) have their own suite,
:data:`ARTIFACT_CHECKS` over an :class:`ArtifactBundle` (see
:mod:`actoviq.runtime.stores.conformance.artifact_bytes`).

Each check receives a fresh namespace string and uses it as a tenant prefix, so checks can share
one database (PostgreSQL) without seeing each other's rows.
"""

from __future__ import annotations

from actoviq.runtime.stores.conformance import (
    adapters,
    ledgers,
    records,
    sessions,
    strict_json,
    workflows,
)
from actoviq.runtime.stores.conformance._base import (
    CHECKS,
    ConformanceCheck,
    StoreBundle,
    expect_error,
)
from actoviq.runtime.stores.conformance.artifact_bytes import (
    ARTIFACT_CHECKS,
    ArtifactBundle,
    ArtifactCheck,
)

__all__ = [
    "ARTIFACT_CHECKS",
    "CONFORMANCE_CHECKS",
    "ArtifactBundle",
    "ArtifactCheck",
    "ConformanceCheck",
    "StoreBundle",
    "expect_error",
]

# Importing the check modules registers their checks.
_MODULES = (sessions, records, adapters, strict_json, ledgers, workflows)

CONFORMANCE_CHECKS: tuple[ConformanceCheck, ...] = tuple(CHECKS)
"""Every check, grouped by module."""
