"""The oracle data vendored in the repository, and the rule that oracle tests never skip.

The golden vectors (what the reference implementation returned or sent; provenance and
conventions in ``data/golden/README.md``) live in ``tests-integration/data/golden/`` because
several packages' tests read them. The recorded provider corpus is read by the provider tests
only, so it lives with them (``packages/actoviq-providers/tests/data/corpus/``).

Tests reach the data through ``golden_path``/``load_golden``/``require_files``: a missing file
raises ``OracleDataMissingError`` (the test errors, it does not skip). The root ``conftest.py``
also loads this module as a pytest plugin: a test marked ``oracle`` that ends skipped, for
whatever reason, is reported as failed, so an oracle can never drop out of ``make test``
silently.
"""

from __future__ import annotations

import json
from collections.abc import Generator
from pathlib import Path
from typing import Any, cast

import pytest

DATA_DIR = Path(__file__).resolve().parent / "data"
GOLDEN_DIR = DATA_DIR / "golden"
ORACLE_MARKER = "oracle"


class OracleDataMissingError(FileNotFoundError):
    """A vendored oracle file is absent: the checkout is incomplete (an error, never a skip)."""


def golden_path(*parts: str) -> Path:
    """The path of a vendored golden file, e.g. ``golden_path("provider-requests", "x.json")``."""
    path = GOLDEN_DIR.joinpath(*parts)
    if not path.is_file():
        raise OracleDataMissingError(f"golden vector file missing from the checkout: {path}")
    return path


def load_golden(*parts: str) -> Any:
    """The parsed JSON of a vendored golden file."""
    return json.loads(golden_path(*parts).read_text("utf-8"))


def require_files(directory: Path, pattern: str) -> list[Path]:
    """The sorted files under ``directory`` matching ``pattern``; at least one must exist."""
    found = sorted(directory.glob(pattern)) if directory.is_dir() else []
    if not found:
        raise OracleDataMissingError(f"no oracle data matches {pattern!r} under {directory}")
    return found


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``oracle`` marker."""
    config.addinivalue_line(
        "markers", f"{ORACLE_MARKER}: an oracle test (vendored data); it fails instead of skipping"
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    """Report a skipped ``oracle`` test as failed, with the skip reason."""
    del call
    outcome: Any = yield
    report: pytest.TestReport = outcome.get_result()
    if (
        report.skipped
        and not hasattr(report, "wasxfail")
        and item.get_closest_marker(ORACLE_MARKER) is not None
    ):
        longrepr: object = report.longrepr
        reason = str(
            cast(tuple[Any, ...], longrepr)[-1] if isinstance(longrepr, tuple) else longrepr
        )
        reason = reason.removeprefix("Skipped: ")
        report.outcome = "failed"
        report.longrepr = f"oracle test skipped ({reason}): oracle tests must not skip"
