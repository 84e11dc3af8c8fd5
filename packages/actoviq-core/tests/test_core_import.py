from __future__ import annotations

import subprocess
import sys


def test_importing_core_loads_no_io_modules() -> None:
    # -X importtime lists every module the import touched, on stderr.
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import actoviq.core"],
        capture_output=True,
        text=True,
        check=True,
    )
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "actoviq.core" in imported
    for module in ("socket", "ssl", "sqlite3", "httpx", "httpx2", "asyncio", "select"):
        assert module not in imported, f"import actoviq.core pulled in {module}"
