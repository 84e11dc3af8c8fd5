"""Run the package and integration tests on every other Python >= 3.11 that uv can find here.

Each interpreter gets its own environment (.venv-py3.X) so the main .venv is untouched. An
interpreter that is not installed is reported and skipped; it is not downloaded.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CANDIDATES = ("3.12", "3.13")


def main() -> int:
    uv = [sys.executable, "-m", "uv"]
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
