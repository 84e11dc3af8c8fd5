"""Peer comparison of the runtime workloads W1-W6 (``python peers_runtime.py --out peers.json``).

Installs openai-agents, pydantic-ai-slim and langgraph (+ langchain-core, the SQLite checkpointer)
at the versions pinned in :data:`PEERS` into throwaway venvs under ``.bench/venvs/<peer>`` (``uv
venv`` + ``uv pip install``; reused when the pinned versions are there) and runs the same
workloads as ``bench_runtime.py`` / ``bench_sessions.py`` with each framework's own public fake
model extension point (see ``peers/peer_*.py``); ours is ``BenchModel``, a ``BaseModelProvider``
subclass written as a user writes one:

* W1 one-turn text run, sequential (us/run);
* W2 three-turn loop, two read-only tool calls per tool turn, sequential (us/run);
* W3 1000 concurrent W2 runs on one loop (wall s, peak RSS MB);
* W4 one streamed run of 100,000 one-character text deltas from a producer that never yields to
  the loop (deltas/s, peak RSS MB); ours also at 1,000,000 deltas (memory must stay flat);
* W4y the same stream from a fake model that awaits ``asyncio.sleep(0)`` after every delta, the
  shape of a model read off the network; ours also at 1,000,000 deltas;
* W5 cold import of the framework's agent module (median of 5 fresh processes after one warm-up);
* W6 1,000 turns of one session persisted in a SQLite file by the framework's own session
  mechanism (total, mean turn time of turns 1-100 and 901-1,000), then the first load of the
  2,000-item session after opening the file again. LangGraph runs it twice: default state, and
  ``messages`` as a ``DeltaChannel`` (reported as the peer ``langgraph-delta``).

Every workload runs in a fresh subprocess. Peers run fewer W1/W2 iterations than we do (their runs
are 5-50x slower; the JSON records the counts). Ratios are ``ours / best peer`` (for W4/W4y
``ours / best peer`` deltas per second) with pass/fail against the issue's targets; the CPU-time
ratio is reported beside every wall-clock one.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, cast

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent.parent
VENVS = ROOT / ".bench" / "venvs"
PROGRAMS = HERE / "peers"
BENCH = HERE / "bench_runtime.py"
SESSIONS = HERE / "bench_sessions.py"

PEERS: dict[str, dict[str, Any]] = {
    "openai-agents": {
        "packages": ["openai-agents==0.24.0"],
        "program": "peer_openai_agents.py",
        "import": "agents",
    },
    "pydantic-ai": {
        "packages": ["pydantic-ai-slim==2.68.0"],
        "program": "peer_pydantic_ai.py",
        "import": "pydantic_ai",
    },
    "langgraph": {
        "packages": [
            "langgraph==1.2.24",
            "langchain-core",
            "langgraph-checkpoint-sqlite",
            "aiosqlite",
        ],
        "program": "peer_langgraph.py",
        "import": "langgraph.prebuilt, langgraph.checkpoint.sqlite.aio",
        "extra": {"W6delta": "langgraph-delta"},
    },
}

WORKLOADS = ("W1", "W2", "W3", "W4", "W4y", "W6")
OUR_N = {"W1": 2000, "W2": 1000, "W3": 1000, "W4": 100_000, "W4y": 100_000, "W6": 1000}
PEER_N = {"W1": 500, "W2": 200, "W3": 1000, "W4": 100_000, "W4y": 100_000, "W6": 1000}
REPEATS = 3
TIMEOUT_S = 240
W6_TIMEOUT_S = 1800


def _uv() -> str:
    found = os.environ.get("UV") or shutil.which("uv")
    if found is None:
        raise SystemExit("uv not found (set UV or put uv on PATH)")
    return found


def _venv_python(name: str) -> Path:
    return VENVS / name / "bin" / "python"


def ensure_venv(name: str, packages: list[str], module: str) -> tuple[Path, str]:
    """Create/reuse the peer's venv; returns its python and the installed versions."""
    python = _venv_python(name)
    pins = [package.split("==") for package in packages if "==" in package]
    checks = "".join(f"assert m.version({n!r}) == {v!r};" for n, v in pins)
    code = f"import importlib.metadata as m;{checks}import {module}"
    probe = [str(python), "-c", code]
    if not python.exists() or subprocess.run(probe, capture_output=True).returncode != 0:
        env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
        version = f"{sys.version_info.major}.{sys.version_info.minor}"
        uv = _uv()
        subprocess.run(
            [uv, "venv", "-q", "--allow-existing", "--python", version, str(VENVS / name)],
            check=True,
            env=env,
        )
        subprocess.run(
            [uv, "pip", "install", "-q", "--reinstall", "--python", str(python), *packages],
            check=True,
            env=env,
        )
    listed = subprocess.run(
        [_uv(), "pip", "list", "--python", str(python), "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    wanted = {package.split("==")[0].lower() for package in packages}
    versions = [
        f"{entry['name']}=={entry['version']}"
        for entry in json.loads(listed.stdout)
        if str(entry["name"]).lower() in wanted
    ]
    return python, ", ".join(sorted(versions))


def _json_line(command: list[str], timeout: float = TIMEOUT_S) -> Any:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        return {"error": " | ".join(tail)}
    return json.loads(done.stdout.strip().splitlines()[-1])


def import_ms(python: Path, module: str) -> float:
    """Median cold import time of ``module`` over 5 fresh processes (after one warm-up)."""
    module = module.split(",")[0]  # the agent module only (not the W6 checkpointer)
    code = f"import time;t=time.perf_counter();import {module};print((time.perf_counter()-t)*1000)"
    samples: list[float] = []
    for _ in range(6):
        done = subprocess.run(
            [str(python), "-W", "ignore", "-c", code], capture_output=True, text=True, check=True
        )
        samples.append(float(done.stdout.strip().splitlines()[-1]))
    return statistics.median(samples[1:])


def _best(samples: list[Any], key: str) -> Any:
    """The sample with the lowest ``key`` (errors only when every sample failed)."""
    good: list[dict[str, Any]] = [
        cast(dict[str, Any], sample)
        for sample in samples
        if isinstance(sample, dict) and key in sample
    ]
    return min(good, key=lambda sample: float(sample[key])) if good else samples[-1]


def _our_command(workload: str) -> list[str]:
    if workload == "W6":
        return [sys.executable, str(SESSIONS), "--mode", "w6", "--turns", str(OUR_N["W6"])]
    return [sys.executable, str(BENCH), "--mode", workload.lower()]


def run_all(
    names: list[str], workloads: tuple[str, ...] = WORKLOADS
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Every workload for every framework, workload by workload (similar machine load for all).

    W1 and W2 keep the best of ``REPEATS`` fresh processes (shared machines are noisy); the
    other workloads run once per framework. ``workloads`` picks a subset (W4/W4y at 1M deltas
    and W5 run with the full set only).
    """
    commands: dict[str, Any] = {}
    peers: dict[str, dict[str, Any]] = {}
    for name in names:
        spec = PEERS[name]
        try:
            python, versions = ensure_venv(name, spec["packages"], spec["import"])
        except (subprocess.CalledProcessError, OSError) as error:
            peers[name] = {"error": str(error)}
            continue
        peers[name] = {"versions": versions, "iterations": dict(PEER_N)}
        program = str(PROGRAMS / spec["program"])
        commands[name] = (python, spec["import"], program)
    ours: dict[str, Any] = {"iterations": dict(OUR_N)}
    for workload in workloads:
        repeats = REPEATS if workload in ("W1", "W2") else 1
        key = "cpu_us_per_run" if workload in ("W1", "W2") else ""
        timeout = W6_TIMEOUT_S if workload == "W6" else TIMEOUT_S
        for name, (python, _module, program) in commands.items():
            n = PEER_N[workload]
            variants = {workload: name}
            if workload == "W6":
                variants.update(PEERS[name].get("extra", {}))
            for variant, reported in variants.items():
                print(f"  {reported} {workload} (n={n}, x{repeats})", flush=True)
                command = [str(python), program, "--workload", variant, "--n", str(n)]
                samples = [_json_line(command, timeout) for _ in range(repeats)]
                result = _best(samples, key) if key else samples[0]
                peers.setdefault(reported, {"versions": peers[name]["versions"]})[workload] = result
        print(f"  actoviq {workload} (n={OUR_N[workload]}, x{repeats})", flush=True)
        samples = [_json_line(_our_command(workload), timeout) for _ in range(repeats)]
        ours[workload] = _best(samples, key) if key else samples[0]
    if workloads != WORKLOADS:
        return ours, peers
    print("  actoviq W4 and W4y at 1M deltas; W5 for everyone", flush=True)
    ours["W4_1m"] = _json_line([sys.executable, str(BENCH), "--mode", "w4-1m"])
    ours["W4y_1m"] = _json_line([sys.executable, str(BENCH), "--mode", "w4y-1m"])
    for name, (python, module, _program) in commands.items():
        peers[name]["W5"] = {"import_ms": import_ms(python, module)}
    ours["W5"] = {"import_ms": import_ms(Path(sys.executable), "actoviq.runtime")}
    return ours, peers


def _value(result: dict[str, Any], workload: str, key: str) -> float | None:
    entry = result.get(workload)
    if not isinstance(entry, dict):
        return None
    value = cast(dict[str, object], entry).get(key)
    return float(value) if isinstance(value, int | float) else None


# (workload, metric, CPU-time twin or "", lower is better, target ratio ours/best peer)
TARGETS: list[tuple[str, str, str, bool, float]] = [
    ("W1", "us_per_run", "cpu_us_per_run", True, 0.1),
    ("W2", "us_per_run", "cpu_us_per_run", True, 0.1),
    ("W3", "wall_s", "cpu_s", True, 0.3),
    ("W3", "peak_rss_mb", "", True, 0.5),
    ("W4", "deltas_per_s", "cpu_deltas_per_s", False, 3.0),
    ("W4y", "deltas_per_s", "cpu_deltas_per_s", False, 2.0),
    ("W5", "import_ms", "", True, 0.5),
    ("W6", "total_s", "cpu_s", True, 0.05),
    ("W6", "first_load_ms", "first_load_cpu_ms", True, 0.5),
]
# (workload, metric, target): limits on our own figures, not ratios to a peer
OWN_LIMITS: list[tuple[str, str, float]] = [
    ("W6", "last_over_first", 1.3),
    ("W6", "cpu_last_over_first", 1.3),
]
RSS_GROWTH_LIMIT_MB = 5.0


def compare(ours: dict[str, Any], peers: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Ratios against the best peer per metric, with pass/fail.

    Pass/fail uses the wall-clock metric of the issue; ``cpu_ratio`` (process CPU time, the same
    best peer) is reported too because shared machines make wall-clock ratios noisy.
    """
    rows: list[dict[str, Any]] = []
    for workload, key, cpu_key, lower, target in TARGETS:
        mine = _value(ours, workload, key)
        values = {
            name: value
            for name, result in peers.items()
            if (value := _value(result, workload, key)) is not None
        }
        if mine is None or not values:
            rows.append({"workload": workload, "metric": key, "status": "missing"})
            continue
        best_name = (min if lower else max)(values, key=lambda name: values[name])
        ratio = mine / values[best_name]
        ok = ratio <= target if lower else ratio >= target
        cpu_ratio = None
        if cpu_key:
            mine_cpu = _value(ours, workload, cpu_key)
            peer_cpu = _value(peers[best_name], workload, cpu_key)
            if mine_cpu is not None and peer_cpu:
                cpu_ratio = mine_cpu / peer_cpu
        rows.append(
            {
                "cpu_ratio": cpu_ratio,
                "workload": workload,
                "metric": key,
                "ours": mine,
                "best_peer": best_name,
                "best_peer_value": values[best_name],
                "ratio": ratio,
                "target": f"{'<=' if lower else '>='} {target}",
                "status": "pass" if ok else "FAIL",
                "per_peer_ratio": {name: mine / value for name, value in values.items()},
            }
        )
    return rows


def own_checks(ours: dict[str, Any]) -> list[dict[str, Any]]:
    """Targets on our own figures: W6 flatness and RSS growth from 100k to 1M deltas."""
    rows: list[dict[str, Any]] = []
    for workload, key, limit in OWN_LIMITS:
        value = _value(ours, workload, key)
        rows.append(
            {
                "workload": workload,
                "metric": key,
                "ours": value,
                "target": f"<= {limit}",
                "status": "missing" if value is None else "pass" if value <= limit else "FAIL",
            }
        )
    for stream in ("W4", "W4y"):
        big, small = (
            _value(ours, f"{stream}_1m", "peak_rss_mb"),
            _value(ours, stream, "peak_rss_mb"),
        )
        growth = None if big is None or small is None else big - small
        rows.append(
            {
                "workload": stream,
                "metric": "rss_growth_100k_to_1m_mb",
                "ours": growth,
                "target": f"<= {RSS_GROWTH_LIMIT_MB}",
                "status": "missing"
                if growth is None
                else "pass"
                if growth <= RSS_GROWTH_LIMIT_MB
                else "FAIL",
            }
        )
    return rows


def _load_average() -> list[float]:
    try:
        return [round(value, 2) for value in os.getloadavg()]
    except OSError:  # pragma: no cover - every Linux has it
        return []


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--peers", default=",".join(PEERS), help="comma-separated subset")
    parser.add_argument(
        "--workloads", default=",".join(WORKLOADS), help="comma-separated subset (e.g. W1,W2)"
    )
    args = parser.parse_args()
    workloads = tuple(w for w in WORKLOADS if w in args.workloads.split(","))
    started = time.perf_counter()
    load_before = _load_average()
    ours, peers = run_all([part for part in args.peers.split(",") if part], workloads)
    rows = compare(ours, peers)
    own = own_checks(ours)
    report: dict[str, Any] = {
        "note": (
            "Each workload runs in a fresh process, workload by workload for all frameworks; "
            "W1/W2 keep the best (lowest CPU) of 3 processes. Peers run fewer W1/W2 "
            "iterations (see iterations); ratios are ours / best peer; cpu_ratio compares "
            "process CPU time (wall clock is noisy on a shared machine)."
        ),
        "load_average_before": load_before,
        "load_average_after": _load_average(),
        "actoviq": ours,
        "peers": peers,
        "comparison": rows,
        "own_limits": own,
        "all_pass": all(row["status"] == "pass" for row in [*rows, *own]),
        "elapsed_s": time.perf_counter() - started,
    }
    for row in rows:
        if row["status"] == "missing":
            print(f"{row['workload']} {row['metric']}: missing")
            continue
        print(
            f"{row['workload']} {row['metric']}: ours {row['ours']:.4g} vs {row['best_peer']} "
            f"{row['best_peer_value']:.4g} -> ratio {row['ratio']:.3f} "
            f"(target {row['target']}) {row['status']}"
            + ("" if row["cpu_ratio"] is None else f" [cpu ratio {row['cpu_ratio']:.3f}]")
        )
    for row in own:
        value = "missing" if row["ours"] is None else f"{row['ours']:.4g}"
        print(
            f"{row['workload']} {row['metric']}: {value} (target {row['target']}) {row['status']}"
        )
    print(f"load average before {load_before}, after {report['load_average_after']}")
    text = json.dumps(report, indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    else:
        print(text)


if __name__ == "__main__":
    main()
