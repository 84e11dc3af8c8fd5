"""`make test`'s leg runner (tools/run_ci.py): no check dropped, legs isolated, failures loud."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import other_pythons
import pytest
import run_ci

ROOT = Path(__file__).resolve().parents[1]
# Every check `make test` ran when its targets ran one after the other.
CHECKS = {
    "lint",
    "typecheck",
    "layers",
    "ranges",
    "unit",
    "integration",
    "examples",
    "docs",
    "check-wheels",
    "pythons",
}


def test_the_legs_cover_every_check_and_every_other_python() -> None:
    targets = [leg.target[0] for leg in run_ci.LEGS]
    assert set(targets) == CHECKS
    pythons = {arg for leg in run_ci.LEGS for arg in leg.target if arg.startswith("PYTHONS=")}
    assert pythons == {f"PYTHONS={version}" for version in other_pythons.CANDIDATES}
    assert len({leg.name for leg in run_ci.LEGS}) == len(run_ci.LEGS)
    # The schemas are checked, never rewritten under the tests that compare against them.
    docs = next(leg for leg in run_ci.LEGS if leg.target[0] == "docs")
    assert "SCHEMAS_FLAGS=--check" in docs.target
    # Longest first: a long leg never starts last and leaves a core idle at the end.
    weights = [leg.weight for leg in run_ci.LEGS]
    assert weights == sorted(weights, reverse=True)


def test_the_makefile_runs_the_legs_and_passes_their_arguments_on() -> None:
    makefile = (ROOT / "Makefile").read_text("utf-8")
    recipe = re.search(r"^test:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert recipe is not None
    assert "tools/run_ci.py" in recipe.group(1)
    for variable in ("PYTEST_ARGS", "PYTHONS", "SCHEMAS_FLAGS"):
        assert f"$({variable})" in makefile
    assert "ifndef ACTOVIQ_SETUP_DONE" in makefile


def test_pytest_legs_get_their_own_basetemp(tmp_path: Path) -> None:
    basetemps = {
        arg
        for leg in run_ci.LEGS
        if leg.pytest
        for arg in run_ci.command(leg, tmp_path)
        if arg.startswith("PYTEST_ARGS=")
    }
    assert len(basetemps) == sum(leg.pytest for leg in run_ci.LEGS) == 2
    assert all(str(tmp_path) in arg for arg in basetemps)


def test_an_unknown_leg_is_refused() -> None:
    with pytest.raises(SystemExit, match="unknown leg"):
        run_ci.select(["lint", "nope"])
    assert [leg.name for leg in run_ci.select(["lint", "unit"])] == ["unit", "lint"]


FAKE_MAKE = """
import sys, time
target = sys.argv[2]
print(f"leg {target} line 1")
if target == "ranges":
    print("the broken check says why")
    sys.exit(3)
print(f"leg {target} passed")
"""


def test_a_failing_leg_fails_the_run_with_its_log_tail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = tmp_path / "fake_make.py"
    fake.write_text(FAKE_MAKE, "utf-8")
    wrapper = tmp_path / "make"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{fake}" "$@"\n', "utf-8")
    wrapper.chmod(0o755)
    monkeypatch.setenv("MAKE", str(wrapper))
    logs = tmp_path / "logs"
    code = run_ci.run(run_ci.select(["lint", "layers", "ranges"]), 2, logs)
    out = capsys.readouterr().out
    assert code == 1
    assert "FAILED legs: ranges" in out
    assert "the broken check says why" in out  # the failed leg's tail is printed
    assert "leg lint line 1" not in out  # a passing leg shows its last line only
    assert (logs / "lint.log").read_text("utf-8").endswith("leg lint passed\n")
    table = out[out.index("leg           result") :]
    assert re.search(r"^lint\s+ok", table, re.MULTILINE)
    assert re.search(r"^ranges\s+FAILED", table, re.MULTILINE)

    assert run_ci.run(run_ci.select(["lint", "layers"]), 1, logs) == 0
    assert "FAILED" not in capsys.readouterr().out
