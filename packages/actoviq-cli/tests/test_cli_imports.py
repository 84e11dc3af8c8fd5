"""What starting the command loads: ``--help`` needs Click alone (the start-up targets)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = (
    "actoviq.core",
    "actoviq.runtime",
    "actoviq.providers",
    "actoviq.surfaces",
    "actoviq.storage.sqlite",
    "sqlalchemy",
    "rich",
    "prompt_toolkit",
    "starlette",
    "uvicorn",
    "mcp",
    "openai",
    "anthropic",
    "asyncio",
)

_PROBE = """
import json, sys
{body}
loaded = [m for m in sys.modules if m.split('.')[0] in {roots!r} or m in {heavy!r}]
print(json.dumps(sorted(loaded)), file=sys.stderr)
"""


def _loaded(body: str) -> set[str]:
    roots = sorted({name.split(".")[0] for name in HEAVY})
    probe = _PROBE.format(body=body, roots=roots, heavy=HEAVY)
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


def test_importing_the_package_loads_nothing_heavy() -> None:
    assert _loaded("import actoviq.cli") & set(HEAVY) == set()


def test_help_loads_click_and_nothing_heavy() -> None:
    body = (
        "from actoviq.cli.app import cli\n"
        "try:\n    cli.main(['--help'], prog_name='actoviq')\nexcept SystemExit:\n    pass"
    )
    loaded = _loaded(body)
    assert loaded & set(HEAVY) == set()


def test_run_reaches_its_model_without_the_web_or_sdks() -> None:
    body = "import actoviq.cli.cmd_run"
    loaded = _loaded(body)
    assert {"actoviq.runtime", "actoviq.surfaces"} <= loaded
    assert (
        loaded
        & {"sqlalchemy", "starlette", "uvicorn", "mcp", "openai", "anthropic", "prompt_toolkit"}
        == set()
    )
