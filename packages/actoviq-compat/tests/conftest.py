"""Fixtures of the compat tests: diagnostics start from scratch, warnings only where asserted."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from actoviq.compat.diagnostics import configure_compat_diagnostics, reset_compat_diagnostics


@pytest.fixture(autouse=True)
def fresh_diagnostics() -> Iterator[None]:
    """Counts reset per test; the once-per-symbol warning is off unless a test turns it on."""
    reset_compat_diagnostics()
    configure_compat_diagnostics(warn_once=False)
    yield
    reset_compat_diagnostics()
