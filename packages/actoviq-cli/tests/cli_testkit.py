"""Test helpers: a project folder (actoviq.toml, tools, script) and the CLI through Click's runner.

Every ``--json`` line a test reads is validated against the published schema. The ``project``
fixture is registered by ``conftest.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, cast

import jsonschema
import pytest
from click.testing import CliRunner, Result

from actoviq.cli import cli, cli_output_json_schema

SUPPORT = Path(__file__).resolve().parent / "support"
ROOT = Path(__file__).resolve().parents[3]
ARTIFACTS = ROOT / ".artifacts"
_ENV_CLEARED = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "ACTOVIQ_CONFIG",
    "ACTOVIQ_DB",
    "ACTOVIQ_MODEL",
    "ACTOVIQ_SCRIPT",
)
SCHEMA = cli_output_json_schema()
VALIDATOR: Any = jsonschema.Draft202012Validator(SCHEMA)
ITEM_VALIDATOR: Any = jsonschema.Draft202012Validator(
    {"$ref": "urn:actoviq:schema:canonical-item", "$defs": SCHEMA["$defs"]}
)


def validated(line: str) -> dict[str, Any]:
    """One ``--json`` line, parsed and checked against the published schema."""
    document = json.loads(line)
    VALIDATOR.validate(document)
    return cast(dict[str, Any], document)


class Project:
    """A temporary project folder and helpers to run ``actoviq`` in it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.ledger_path = root / "ledger.txt"
        self.runner = CliRunner()

    def ledger(self) -> list[str]:
        """Side effects the test tools recorded, in order."""
        if not self.ledger_path.exists():
            return []
        return self.ledger_path.read_text("utf-8").splitlines()

    def invoke(self, *args: str, input: str | None = None) -> Result:
        """``actoviq ARGS`` through Click's test runner (in this process)."""
        return self.runner.invoke(cli, list(args), input=input, catch_exceptions=False)

    def json(self, *args: str, input: str | None = None) -> tuple[Result, list[dict[str, Any]]]:
        """``actoviq --json ARGS``; every stdout line validated against the schema."""
        result = self.invoke("--json", *args, input=input)
        return result, [validated(line) for line in result.stdout.splitlines() if line.strip()]

    def env(self, **extra: str) -> dict[str, str]:
        """An environment for ``actoviq`` subprocesses in this project."""
        env = {k: v for k, v in os.environ.items() if k not in _ENV_CLEARED}
        env.update(
            ACTOVIQ_TEST_LEDGER=str(self.ledger_path),
            NO_COLOR="1",
            PYTHONUNBUFFERED="1",
            **extra,
        )
        return env

    def command(self, *args: str) -> list[str]:
        """The argv of ``actoviq ARGS`` as a subprocess (this interpreter)."""
        return [sys.executable, "-m", "actoviq.cli", *args]

    def write_config(self, text: str) -> None:
        """Replace actoviq.toml."""
        (self.root / "actoviq.toml").write_text(text, "utf-8")


def make_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Project]:
    """A copy of tests/support as the working directory, with a clean environment."""
    root = tmp_path / "proj"
    shutil.copytree(SUPPORT, root)
    for name in _ENV_CLEARED:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ACTOVIQ_TEST_LEDGER", str(root / "ledger.txt"))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.chdir(root)
    yield Project(root)


def last(documents: Sequence[dict[str, Any]], kind: str) -> dict[str, Any]:
    """The last document of ``kind``."""
    found = [d for d in documents if d["kind"] == kind]
    assert found, f"no {kind!r} document in {[d['kind'] for d in documents]}"
    return found[-1]
