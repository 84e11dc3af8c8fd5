"""The layering checker really fails when a package imports against decision D1."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECKER = ROOT / "tools" / "check_layers.py"


def _run_checker(pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run(
        [sys.executable, str(CHECKER)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=False,
        timeout=300,
    )


def test_the_workspace_keeps_every_contract() -> None:
    done = _run_checker()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "BROKEN" not in done.stdout


def test_core_importing_an_http_client_breaks_the_contracts(tmp_path: Path) -> None:
    # A copy of actoviq.core placed first on sys.path, with one module that imports httpx2.
    shadow = tmp_path / "actoviq" / "core"
    shutil.copytree(ROOT / "packages" / "actoviq-core" / "src" / "actoviq" / "core", shadow)
    (shadow / "leak.py").write_text("import httpx2  # noqa: F401\n", "utf-8")
    done = _run_checker(tmp_path)
    assert done.returncode != 0
    assert "core depends on attrs and cattrs only" in done.stdout
    assert "BROKEN" in done.stdout


def test_core_importing_the_runtime_breaks_the_layers(tmp_path: Path) -> None:
    shadow = tmp_path / "actoviq" / "core"
    shutil.copytree(ROOT / "packages" / "actoviq-core" / "src" / "actoviq" / "core", shadow)
    (shadow / "upward.py").write_text("import actoviq.runtime  # noqa: F401\n", "utf-8")
    done = _run_checker(tmp_path)
    assert done.returncode != 0
    assert "the package graph only points downward BROKEN" in done.stdout
