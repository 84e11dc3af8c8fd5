"""Run the package and integration tests on every other Python >= 3.11 that uv can find here.

Each interpreter gets its own environment (.venv-py3.X) so the main .venv is untouched. An
interpreter that is not installed is reported and skipped; it is not downloaded.

The environments are synced one after the other, then the test runs go side by side (one pytest
process per interpreter, each with its own ``--basetemp``): a pytest run is one busy core, so on a
machine with two or more cores the other Pythons cost about the time of one run instead of the sum
(this pass is the largest part of ``make test``). Each run's output goes to a log file; a run that
fails has the end of its log printed. ``--serial`` runs them one after the other instead.
Versions named on the command line (``other_pythons.py 3.12``) restrict the pass to them: ``make
test`` runs each as a leg of its own (tools/run_ci.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CANDIDATES = ("3.12", "3.13")
TAIL_LINES = 150


def uv_command() -> list[str]:
    """The uv that runs us (`uv run` exports UV), else uv on PATH."""
    found = os.environ.get("UV") or shutil.which("uv")
    if found:
        return [found]
    raise SystemExit("uv not found: run through `make` or `uv run`")


def _environment(version: str) -> dict[str, str]:
    env = {**os.environ, "UV_PROJECT_ENVIRONMENT": str(ROOT / f".venv-py{version}")}
    env.pop("VIRTUAL_ENV", None)
    return env


def _pytest_command(uv: list[str], version: str, basetemp: Path) -> list[str]:
    return [
        *uv,
        "run",
        "--frozen",
        "-p",
        version,
        "python",
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--basetemp",
        str(basetemp),
        "-m",
        "not slow",
        "--durations=30",  # the log ends with the slowest tests (CI time)
        "packages",
        "tests-integration",
    ]


def _installed(uv: list[str], wanted: tuple[str, ...]) -> list[str]:
    found: list[str] = []
    for version in wanted:
        probe = subprocess.run(
            [*uv, "python", "find", version], capture_output=True, text=True, check=False
        )
        if probe.returncode:
            print(f"Python {version}: not installed here, skipped")
        else:
            found.append(version)
    return found


def _tail(path: Path, lines: int) -> str:
    return "\n".join(path.read_text("utf-8", errors="replace").splitlines()[-lines:])


def main(argv: list[str]) -> int:
    uv = uv_command()
    serial = "--serial" in argv
    named = tuple(arg for arg in argv if not arg.startswith("-"))
    unknown = [version for version in named if version not in CANDIDATES]
    if unknown:
        print(f"not a candidate Python: {', '.join(unknown)} (candidates: {', '.join(CANDIDATES)})")
        return 2
    failures: list[str] = []
    versions: list[str] = []
    for version in _installed(uv, named or CANDIDATES):
        sync = [*uv, "sync", "-q", "--frozen", "-p", version, "--all-packages", "--all-extras"]
        print(f"Python {version}: {' '.join(sync[1:])}", flush=True)
        if subprocess.call(sync, cwd=ROOT, env=_environment(version)):
            failures.append(version)
        else:
            versions.append(version)
    with tempfile.TemporaryDirectory(prefix="actoviq-pythons-") as scratch:
        logs = {version: Path(scratch) / f"pytest-{version}.log" for version in versions}
        running: list[tuple[str, subprocess.Popen[bytes], float]] = []
        for version in versions:
            command = _pytest_command(uv, version, Path(scratch) / f"tmp-{version}")
            print(f"Python {version}: {' '.join(command[5:])} > {logs[version].name}", flush=True)
            with logs[version].open("wb") as log:
                process = subprocess.Popen(
                    command, cwd=ROOT, env=_environment(version), stdout=log, stderr=log
                )
            running.append((version, process, time.monotonic()))
            if serial:
                process.wait()
        for version, process, started in running:
            code = process.wait()
            took = time.monotonic() - started
            summary = _tail(logs[version], 1)
            print(f"Python {version}: exit {code} after {took:.0f} s: {summary}", flush=True)
            if code:
                failures.append(version)
                print(f"--- the end of the Python {version} log ---")
                print(_tail(logs[version], TAIL_LINES))
    if failures:
        print(f"failed on Python {', '.join(failures)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
