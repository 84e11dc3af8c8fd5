"""Run the package and integration tests on every other Python >= 3.11 that uv can find here.

Each interpreter gets its own environment (.venv-py3.X) so the main .venv is untouched. An
interpreter that is not installed is reported and skipped; it is not downloaded.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CANDIDATES = ("3.12", "3.13")


def uv_command() -> list[str]:
    """The uv that runs us (`uv run` exports UV), else uv on PATH."""
    found = os.environ.get("UV") or shutil.which("uv")
    if found:
        return [found]
    raise SystemExit("uv not found: run through `make` or `uv run`")


def main() -> int:
    uv = uv_command()
    failures: list[str] = []
    for version in CANDIDATES:
        found = subprocess.run(
            [*uv, "python", "find", version], capture_output=True, text=True, check=False
        )
        if found.returncode:
            print(f"Python {version}: not installed here, skipped")
            continue
        env = {**os.environ, "UV_PROJECT_ENVIRONMENT": str(ROOT / f".venv-py{version}")}
        env.pop("VIRTUAL_ENV", None)
        steps = [
            [*uv, "sync", "-q", "--frozen", "-p", version, "--all-packages", "--all-extras"],
            [
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
                "-m",
                "not slow",
                "packages",
                "tests-integration",
            ],
        ]
        for step in steps:
            print(f"Python {version}: {' '.join(step[3:])}", flush=True)
            if subprocess.call(step, cwd=ROOT, env=env):
                failures.append(version)
                break
    if failures:
        print(f"failed on Python {', '.join(failures)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
