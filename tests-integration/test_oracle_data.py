"""The oracles' data is in the repository, and an oracle test cannot skip silently.

* every vendored golden file and corpus cassette is present and parses (with the corpus licence);
* no test reads the spec bundle next to the checkout (its ``shared`` folder) at run time;
* the loaders raise ``OracleDataMissingError`` for a missing file (an error, not a skip);
* a test marked ``oracle`` that skips is reported as failed (checked in a pytest subprocess).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from oracle_data import (
    GOLDEN_DIR,
    OracleDataMissingError,
    golden_path,
    load_golden,
    require_files,
)

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "packages" / "actoviq-providers" / "tests" / "data" / "corpus"
GOLDEN_FILES = (
    "items.json",
    "usage.json",
    "run-events.json",
    *(f"{kind}/{api}.json" for kind in ("provider-requests", "provider-responses")
      for api in ("openai-responses", "openai-chat", "anthropic")),
)  # fmt: skip
CORPUS_COUNTS = {"openai-responses": 118, "openai-chat": 111, "anthropic-messages": 133}
OUTSIDE = "shared"  # the spec bundle's folder beside the checkout
SHARED_READ = re.compile(rf"\.\./{OUTSIDE}|/ *[\"']{OUTSIDE}[\"']|[\"']{OUTSIDE}/(golden|corpus)")


@pytest.mark.parametrize("name", GOLDEN_FILES)
def test_every_golden_file_is_vendored(name: str) -> None:
    data = load_golden(*name.split("/"))
    assert isinstance(data, dict) and data
    assert (GOLDEN_DIR / "README.md").is_file()


def test_the_whole_corpus_is_vendored_with_its_licence() -> None:
    files = require_files(CORPUS, "*/*.json")
    counts = {api: sum(1 for f in files if f.parent.name == api) for api in CORPUS_COUNTS}
    assert counts == CORPUS_COUNTS
    for path in files:
        data = json.loads(path.read_text("utf-8"))
        assert data["api"] == path.parent.name and data["interactions"], path
        assert data["source"]["repo"] == "pydantic/pydantic-ai", path
    assert "MIT License" in (CORPUS / "LICENSE-pydantic-ai.txt").read_text("utf-8")
    assert "LICENSE-pydantic-ai.txt" in (CORPUS / "README.md").read_text("utf-8")


def test_no_test_reads_the_shared_folder_at_run_time() -> None:
    sources = [*ROOT.glob("packages/*/tests/**/*.py"), *ROOT.glob("tests-integration/**/*.py")]
    assert len(sources) > 50
    offenders = [
        str(path.relative_to(ROOT))
        for path in sources
        if path != Path(__file__).resolve() and SHARED_READ.search(path.read_text("utf-8"))
    ]
    assert offenders == []


def test_oracle_modules_never_skip_at_module_level() -> None:
    """A module-level skip happens before any test exists, so the report hook cannot see it."""
    sources = [*ROOT.glob("packages/*/tests/**/*.py"), *ROOT.glob("tests-integration/**/*.py")]
    here = Path(__file__).resolve()
    oracle_modules = [p for p in sources if p != here and "mark.oracle" in p.read_text("utf-8")]
    assert len(oracle_modules) >= 8
    for path in oracle_modules:
        assert "allow_module_level" not in path.read_text("utf-8"), path


def test_missing_oracle_data_is_an_error_not_a_skip(tmp_path: Path) -> None:
    with pytest.raises(OracleDataMissingError, match="missing from the checkout"):
        golden_path("no-such-vector.json")
    with pytest.raises(OracleDataMissingError, match="no oracle data"):
        require_files(tmp_path, "*/*.json")
    with pytest.raises(OracleDataMissingError):
        require_files(tmp_path / "absent", "*.json")


PROBE = """
import pytest
from oracle_data import load_golden

pytestmark = pytest.mark.oracle

def test_skips_inside() -> None:
    pytest.skip("golden vectors not found")

@pytest.mark.skipif(True, reason="data folder absent")
def test_skipif() -> None:
    pass

def test_missing_file() -> None:
    load_golden("no-such-vector.json")

@pytest.mark.xfail(reason="expected", strict=True)
def test_xfail_stays_xfail() -> None:
    raise AssertionError
"""

PLAIN = """
import pytest

def test_an_ordinary_skip_stays_a_skip() -> None:
    pytest.skip("not an oracle")
"""


def test_a_skipped_oracle_test_fails_the_run(tmp_path: Path) -> None:
    (tmp_path / "test_probe.py").write_text(PROBE, "utf-8")
    (tmp_path / "test_plain.py").write_text(PLAIN, "utf-8")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent)}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "oracle_data", "-p", "no:cacheprovider",
         "-p", "no:asyncio", "-q", "-rA", "--strict-markers", "--rootdir", str(tmp_path),
         str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    # a skip in setup (skipif) becomes an error, one in the call a failure
    assert re.search(r"\b2 failed, 1 skipped, 1 xfailed, 1 error\b", out), out
    assert "oracle test skipped (golden vectors not found)" in out
    assert "oracle test skipped (data folder absent)" in out
    assert "OracleDataMissingError" in out
    assert "SKIPPED [1] test_plain.py" in out
