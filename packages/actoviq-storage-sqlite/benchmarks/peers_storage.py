"""Storage against peers: ours vs openai-agents' SQLiteSession vs LangGraph's SqliteSaver.

Usage: python peers_storage.py --out report.json [--items 10000] [--turn 1000] [--budget-s 120]

The peers are installed into throwaway venvs under ``.bench/venvs/storage-*`` with uv
(``$UV`` or ``uv`` on PATH; reused when present). Each (framework, scenario) runs in a fresh
subprocess on a fresh SQLite file, so its peak RSS (``ru_maxrss``) is its own. Every framework
stores the same chat messages (``{"role": ..., "content": ...}``):

* ``append-turns``: N items appended in ``--turn``-item turns;
* ``append-single``: N single-item appends;
* ``load``: after the turns, a load of the whole session, timed 5 times in the same process
  (median reported, every sample kept in ``samplesMs``). Ours returns the entries as columns
  (``StoredItems``, payloads already decoded, records built when read), so it also reports
  ``withRecordsMs``: load plus reading every entry as a record (not the ratio's basis: the peers
  hand back plain dicts, our ``items.payloads``).

How each framework does it:

* ours: ``SessionStore.append`` (CAS on the revision, one ``BEGIN IMMEDIATE`` transaction) and
  ``SessionStore.load`` (session row + journal, JSON payloads decoded and re-validated);
* openai-agents: ``SQLiteSession.add_items`` / ``get_items`` (file database, WAL);
* LangGraph: the ``SqliteSaver`` checkpointer storing the conversation the way ``MessagesState``
  does, as LangChain messages in the ``messages`` channel of each new checkpoint (``put``), and a
  load is ``get_tuple`` of the thread's latest checkpoint. Every checkpoint holds the whole
  conversation, so appends grow quadratically; a scenario still running after ``--budget-s``
  stops and reports the items it did (``complete: false``) and its ratio is then a lower bound.

Every framework's inputs (our ``NewSessionItem`` batches, the peers' dicts and LangChain
messages) are built before the clock starts: the timed loop is the store's own work.

Ratios are ``peer ms / our ms`` (per item for an incomplete run); the issue's target is >= 3.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
VENVS = ROOT / ".bench" / "venvs"
TARGET = 3.0
PEERS: dict[str, list[str]] = {
    "openai-agents": ["openai-agents"],
    "langgraph": ["langgraph", "langgraph-checkpoint-sqlite"],
}
PROBES = {"openai-agents": "agents.memory", "langgraph": "langgraph.checkpoint.sqlite"}
SCENARIOS = ("append-turns", "append-single", "load")
LOAD_REPEATS = 5  # a load is timed this many times in the same process; the median is reported


def _message(n: int) -> dict[str, Any]:
    return {"role": "user" if n % 2 else "assistant", "content": f"message {n} " * 8}


def _batches(values: list[Any], size: int) -> list[list[Any]]:
    return [values[start : start + size] for start in range(0, len(values), size)]


def _load_result(samples: list[float], items: int) -> dict[str, Any]:
    """The median of the repeated loads (the first one included in ``samplesMs``)."""
    return {"ms": statistics.median(samples), "samplesMs": samples, "itemsDone": items}


def _rss_mb() -> float:
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB on Linux
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 1e6


# --- children (each runs inside its framework's interpreter) --------------------------------


async def _ours(scenario: str, items: int, turn: int, db: Path, budget: float) -> dict[str, Any]:
    from actoviq.runtime import NewSessionItem
    from actoviq.storage.sqlite import SqliteStorage

    def entry(n: int) -> NewSessionItem:
        return NewSessionItem(item_id=f"i{n}", kind="message", payload=_message(n))

    size = 1 if scenario == "append-single" else turn
    batches = _batches([entry(n) for n in range(items)], size)
    async with await SqliteStorage.open(db) as storage:
        sessions = storage.sessions
        await sessions.create(tenant_id="bench", session_id="s")
        revision = 0
        start = time.perf_counter()
        done = 0
        for batch in batches:
            if time.perf_counter() - start >= budget:
                break
            record = await sessions.append(
                tenant_id="bench", session_id="s", expected_revision=revision, items=batch
            )
            revision, done = record.revision, done + len(batch)
        ms = (time.perf_counter() - start) * 1000
        if scenario != "load":
            return {"ms": ms, "itemsDone": done}
        samples: list[float] = []
        for _ in range(LOAD_REPEATS):
            start = time.perf_counter()
            loaded = await sessions.load(tenant_id="bench", session_id="s")
            samples.append((time.perf_counter() - start) * 1000)
            assert len(loaded.items) == items
        # Also reported (not the ratio's basis): a load followed by reading every entry as a
        # StoredSessionItem record, which builds the records the columns defer.
        records: list[float] = []
        for _ in range(LOAD_REPEATS):
            start = time.perf_counter()
            loaded = await sessions.load(tenant_id="bench", session_id="s")
            read = sum(1 for entry in loaded.items if entry.payload)
            records.append((time.perf_counter() - start) * 1000)
            assert read == items
        return {
            **_load_result(samples, items),
            "withRecordsMs": statistics.median(records),
            "withRecordsSamplesMs": records,
        }


async def _openai_agents(
    scenario: str, items: int, turn: int, db: Path, budget: float
) -> dict[str, Any]:
    memory: Any = importlib.import_module("agents.memory")  # only in the peer's venv
    session: Any = memory.SQLiteSession("s", db_path=db)
    try:
        size = 1 if scenario == "append-single" else turn
        batches = _batches([_message(n) for n in range(items)], size)
        start = time.perf_counter()
        done = 0
        for batch in batches:
            if time.perf_counter() - start >= budget:
                break
            await session.add_items(batch)
            done += len(batch)
        ms = (time.perf_counter() - start) * 1000
        if scenario != "load":
            return {"ms": ms, "itemsDone": done}
        samples: list[float] = []
        for _ in range(LOAD_REPEATS):
            start = time.perf_counter()
            loaded: list[Any] = await session.get_items()
            samples.append((time.perf_counter() - start) * 1000)
            assert len(loaded) == items
        return _load_result(samples, items)
    finally:
        session.close()


def _langgraph(scenario: str, items: int, turn: int, db: Path, budget: float) -> dict[str, Any]:
    import sqlite3

    # Only installed in the peer's venv, hence imported by name.
    messages: Any = importlib.import_module("langchain_core.messages")
    base: Any = importlib.import_module("langgraph.checkpoint.base")
    savers: Any = importlib.import_module("langgraph.checkpoint.sqlite")

    def message(n: int) -> Any:
        data = _message(n)
        kind: Any = messages.HumanMessage if data["role"] == "user" else messages.AIMessage
        return kind(content=data["content"], id=f"i{n}")

    conn = sqlite3.connect(str(db), check_same_thread=False)
    saver: Any = savers.SqliteSaver(conn)
    saver.setup()
    config: Any = {"configurable": {"thread_id": "s", "checkpoint_ns": ""}}
    history: list[Any] = []
    try:
        size = 1 if scenario == "append-single" else turn
        batches = _batches([message(n) for n in range(items)], size)
        start = time.perf_counter()
        done = step = 0
        for batch in batches:
            if time.perf_counter() - start >= budget:
                break
            history = history + batch
            checkpoint: Any = base.empty_checkpoint()
            version: Any = saver.get_next_version(None if step == 0 else str(step), None)
            checkpoint["channel_values"] = {"messages": history}
            checkpoint["channel_versions"] = {"messages": version}
            checkpoint["updated_channels"] = ["messages"]
            config = saver.put(
                config, checkpoint, {"source": "loop", "step": step}, {"messages": version}
            )
            done, step = len(history), step + 1
        ms = (time.perf_counter() - start) * 1000
        if scenario != "load":
            return {"ms": ms, "itemsDone": done}
        samples: list[float] = []
        for _ in range(LOAD_REPEATS):
            start = time.perf_counter()
            latest: Any = saver.get_tuple({"configurable": {"thread_id": "s", "checkpoint_ns": ""}})
            loaded: list[Any] = latest.checkpoint["channel_values"]["messages"]
            samples.append((time.perf_counter() - start) * 1000)
            assert len(loaded) == items
        return _load_result(samples, items)
    finally:
        conn.close()


def _child(args: argparse.Namespace) -> None:
    db = Path(args.dir) / f"{args.child}-{args.scenario}.db"
    call = (args.scenario, args.items, args.turn, db, args.budget_s)
    if args.child == "ours":
        result = asyncio.run(_ours(*call))
    elif args.child == "openai-agents":
        result = asyncio.run(_openai_agents(*call))
    else:
        result = _langgraph(*call)
    result.update(complete=result["itemsDone"] == args.items, peakRssMb=_rss_mb())
    print(json.dumps(result))


# --- parent ----------------------------------------------------------------------------------


def _uv() -> str:
    uv = os.environ.get("UV") or shutil.which("uv")
    if uv is None:
        raise SystemExit("peers_storage: uv is needed (set UV or put uv on PATH)")
    return uv


def _peer_python(name: str) -> Path:
    """The interpreter of the peer's venv, created and installed on first use."""
    venv = VENVS / f"storage-{name}"
    python = venv / "bin" / "python"
    if python.exists():
        probe = subprocess.run([python, "-c", f"import {PROBES[name]}"], capture_output=True)
        if probe.returncode == 0:
            return python
    uv = _uv()
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    subprocess.run(
        [uv, "venv", "--clear", "-q", "-p", sys.executable, str(venv)], check=True, env=env
    )
    subprocess.run(
        [uv, "pip", "install", "-q", "-p", str(python), *PEERS[name]], check=True, env=env
    )
    return python


def _version(python: Path, distribution: str) -> str:
    code = f"import importlib.metadata as m; print(m.version({distribution!r}))"
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _run(python: Path, framework: str, scenario: str, args: argparse.Namespace) -> dict[str, Any]:
    command = [str(python), __file__, "--child", framework, "--scenario", scenario]
    command += ["--items", str(args.items), "--turn", str(args.turn)]
    command += ["--budget-s", str(args.budget_s), "--dir", args.dir]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:] or ["exit " + str(done.returncode)]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _per_item(result: dict[str, Any]) -> float | None:
    done = result.get("itemsDone") or 0
    return result["ms"] / done if "ms" in result and done else None


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--items", type=int, default=10000)
    parser.add_argument("--turn", type=int, default=1000)
    parser.add_argument("--budget-s", type=float, default=120.0)
    parser.add_argument("--child")
    parser.add_argument("--scenario")
    parser.add_argument("--dir")
    args = parser.parse_args()
    if args.child:
        _child(args)
        return
    if args.out is None:
        parser.error("--out is required")
    pythons = {"ours": Path(sys.executable)} | {name: _peer_python(name) for name in PEERS}
    versions = {
        "openai-agents": _version(pythons["openai-agents"], "openai-agents"),
        "langgraph": _version(pythons["langgraph"], "langgraph"),
        "langgraph-checkpoint-sqlite": _version(
            pythons["langgraph"], "langgraph-checkpoint-sqlite"
        ),
    }
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as folder:
        args.dir = folder
        for scenario in SCENARIOS:
            for framework, python in pythons.items():
                result = _run(python, framework, scenario, args)
                results.setdefault(scenario, {})[framework] = result
                print(json.dumps({"scenario": scenario, framework: result}), file=sys.stderr)
    comparisons: list[dict[str, Any]] = []
    for scenario, by_framework in results.items():
        ours = _per_item(by_framework["ours"])
        for peer in PEERS:
            theirs = _per_item(by_framework[peer])
            ratio = None if ours is None or theirs is None else theirs / ours
            comparisons.append(
                {
                    "scenario": scenario,
                    "peer": peer,
                    "ratio": ratio,
                    "lowerBound": not by_framework[peer].get("complete", False),
                    "target": TARGET,
                    "pass": ratio is not None and ratio >= TARGET,
                }
            )
    report = {
        "benchmark": "actoviq-storage-sqlite peers",
        "python": platform.python_version(),
        "platform": platform.platform(),
        "items": args.items,
        "turn": args.turn,
        "budgetSeconds": args.budget_s,
        "versions": versions,
        "results": results,
        "comparisons": comparisons,
        "allPass": all(c["pass"] for c in comparisons),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
