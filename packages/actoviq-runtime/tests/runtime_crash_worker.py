"""Crash worker: runs one crash scenario and SIGKILLs itself at the requested point.

Usage: ``python runtime_crash_worker.py WORKDIR SCENARIO RUN_ID KILL`` where ``KILL`` is
``store:<callId>:<status>`` (die right after that pending-tool state is durable) or
``tool:<callId>`` (die inside the tool, after its effect, before the commit is persisted).
Exits 0 only if the run finished without being killed (the test treats that as a failure).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from runtime_crashkit import build_runtime, kill_after_state


async def main(workdir: Path, scenario: str, run_id: str, kill: str) -> None:
    mode, _, target = kill.partition(":")
    if mode == "store":
        call_id, _, status = target.partition(":")
        runtime, agent, _, _ = build_runtime(
            workdir, scenario, after_save=kill_after_state(call_id, status)
        )
    elif mode == "tool":
        runtime, agent, _, _ = build_runtime(workdir, scenario, kill_in=target)
    else:
        raise SystemExit(f"unknown kill mode {kill!r}")
    async with runtime:
        result = await runtime.run(agent, "go", run_id=run_id)
    print(f"not killed: {result.status}")


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]))
