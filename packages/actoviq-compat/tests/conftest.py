"""Fixtures of the compat tests: diagnostics start from scratch, warnings only where asserted."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from actoviq.compat.diagnostics import configure_compat_diagnostics, reset_compat_diagnostics

# Test helpers (compat_support.py) are imported by name; importlib mode does not add this dir.
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


# Test modules import compat names at collection time: no deprecation warning for those.
configure_compat_diagnostics(warn_once=False)


@pytest.fixture(autouse=True)
def fresh_diagnostics() -> Iterator[None]:
    """Counts reset per test; the once-per-symbol warning is off unless a test turns it on."""
    reset_compat_diagnostics()
    configure_compat_diagnostics(warn_once=False)
    yield
    reset_compat_diagnostics()
    configure_compat_diagnostics(warn_once=False)
