from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from oracle_data import load_golden


@pytest.fixture
def golden(request: pytest.FixtureRequest) -> Callable[[str], Any]:
    """Load a vendored golden vector file (missing is an error); marks the test ``oracle``."""
    request.node.add_marker(pytest.mark.oracle)
    return load_golden
