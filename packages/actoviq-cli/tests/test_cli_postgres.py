"""The same commands on PostgreSQL (``--db postgresql+asyncpg://…``): real processes.

Runs when ``ACTOVIQ_TEST_POSTGRES_URL`` is set (``make unit`` starts the throwaway cluster); each
test uses a tenant of its own, so the shared database needs no cleaning.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid

import pytest
from cli_testkit import Project, validated

POSTGRES_URL = os.environ.get("ACTOVIQ_TEST_POSTGRES_URL")
pytestmark = pytest.mark.skipif(
    not POSTGRES_URL, reason="ACTOVIQ_TEST_POSTGRES_URL is not set (make unit starts PostgreSQL)"
)


def _database() -> str:
    url = POSTGRES_URL or ""
    scheme, _, rest = url.partition("://")
    return url if "+" in scheme else f"postgresql+asyncpg://{rest}"


def _run(project: Project, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        project.command("--db", _database(), *args),
        cwd=project.root,
        env=project.env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_resume_once_sessions_and_delete_on_postgresql(project: Project) -> None:
    tenant = f"cli-{uuid.uuid4().hex[:12]}"
    config = (project.root / "actoviq.toml").read_text("utf-8")
    project.write_config(f'tenant = "{tenant}"\n' + config)

    paused = _run(project, "run", "payer", "please pay INV-42", "--interrupt", "-s", "bills")
    assert paused.returncode == 3, paused.stderr
    run_id = paused.stdout.strip().splitlines()[-1]
    racers = [
        subprocess.Popen(
            project.command("--db", _database(), "resume", run_id, "--approve", "call_pay"),
            cwd=project.root,
            env=project.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outcomes = [racer.communicate(timeout=120) for racer in racers]
    assert sorted(racer.returncode for racer in racers) == [0, 5], outcomes
    assert project.ledger() == ["pay INV-42 1250"]

    listed = _run(project, "--json", "sessions", "list")
    sessions = validated(listed.stdout.strip())["sessions"]
    assert [(s["sessionId"], s["tenantId"]) for s in sessions] == [("bills", tenant)]
    exported = _run(project, "sessions", "export", "bills")
    items = [json.loads(line) for line in exported.stdout.splitlines()]
    assert (
        items[0]["text"] == "please pay INV-42" and items[-1]["text"] == "Invoice INV-42 is paid."
    )

    deleted = _run(project, "--json", "sessions", "delete", "bills", "--yes")
    assert (
        deleted.returncode == 0 and validated(deleted.stdout.strip())["kind"] == "session.deleted"
    )
    assert _run(project, "sessions", "show", "bills").returncode == 4
