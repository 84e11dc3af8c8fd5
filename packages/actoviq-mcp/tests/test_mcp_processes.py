"""Promises checked from outside: approval in one process, resume in another, one side effect."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from mcp_testkit import HERE, events_named, process_running, server_pids

HOST = HERE / "scripts" / "approval_host.py"


async def _host(mode: str, ledger: Path, state: Path) -> dict[str, Any]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(HOST),
        mode,
        str(ledger),
        str(state),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()
    return json.loads(out.decode().strip().splitlines()[-1])


async def test_approval_then_resume_in_a_new_process_calls_the_server_once(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    state = tmp_path / "state.json"
    first = await _host("start", ledger, state)
    assert first["status"] == "interrupted"
    assert events_named(ledger, "append_line") == []
    second = await _host("resume", ledger, state)
    assert second == {"status": "completed", "runId": first["runId"], "output": "appended once"}
    (append,) = events_named(ledger, "append_line")
    assert append["text"] == "once" and append["runId"] == first["runId"]
    pids = server_pids(ledger)
    assert len(pids) == 2 and len(set(pids)) == 2  # one server process per host process
    assert append["pid"] == pids[1]
    assert not any(process_running(pid) for pid in pids)
    assert len(events_named(ledger, "stop")) == 2  # each host closed its server
