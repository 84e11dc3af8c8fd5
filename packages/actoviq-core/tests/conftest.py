from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

GOLDEN = Path(__file__).resolve().parents[3].parent / "shared" / "golden"


@pytest.fixture
def golden() -> Callable[[str], Any]:
    """Load a golden vector file from ../shared/golden (skips when the folder is absent)."""

    def load(name: str) -> Any:
        path = GOLDEN / name
        if not path.is_file():
            pytest.skip(f"golden vectors not found at {path}")
        return json.loads(path.read_text("utf-8"))

    return load
