"""Start-up of the ``actoviq`` command (issue 18 targets).

Scenarios, each a fresh process of the installed console script, ``--repeat`` times after
``--warmup`` runs (bytecode compiled, as after ``pip install``; ``PYTHONDONTWRITEBYTECODE`` is
removed from the children's environment):

* ``help``: ``actoviq --help``, wall time from just before the process is started to its exit.
  Target: median <= 150 ms.
* ``run-first-request``: ``actoviq run bench hi --model bench:m`` in a project whose provider
  (``[providers.bench] factory = ...``, the scripted provider behind a factory) writes
  ``time.time()`` and the process's CPU time when it receives the model request; the figure is
  that instant minus the instant just before the process was started. Target: median <= 400 ms.
* ``run-total``: the same process to its exit (the answer printed, the checkpoint written).
* ``run-session-first-request``: as ``run-first-request`` with ``--session`` (the session must be
  loaded from SQLite before the model is called; informational).

CPU time (user + system) of each child is reported too: on a shared machine it is the stable
figure, wall time moves with the load (the 1-minute load average is recorded).

Usage: python bench_cli.py --out result.json [--repeat 15] [--warmup 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGETS_MS = {"help": 150.0, "run-first-request": 400.0}

PROVIDER = """
import time
from pathlib import Path

from actoviq.providers.testing import ScriptedProvider, ScriptedTurn

MARK = Path(__file__).with_name("first-request.txt")


def make():
    def answer(request):
        if not MARK.exists():  # wall clock now, and the CPU the process used to get here
            MARK.write_text(f"{time.time()!r} {time.process_time()!r}")
        return ScriptedTurn(text="hello from the bench")

    return ScriptedProvider([answer], id="bench", repeat_last=True)
"""
CONFIG = """
[providers.bench]
factory = "bench_provider:make"

[agents.bench]
name = "Bench"
instructions = "Answer."
"""


def _script() -> str:
    found = shutil.which("actoviq", path=str(Path(sys.executable).parent)) or shutil.which(
        "actoviq"
    )
    if found is None:
        raise SystemExit("the actoviq console script is not installed (make setup)")
    return found


def _child(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, float, str]:
    """(start epoch, wall ms, child CPU ms, stdout) of one run."""
    started_epoch = time.time()
    started = time.perf_counter()
    process = subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert process.stdout is not None
    output = process.stdout.read().decode("utf-8", "replace")
    _, status, usage = os.wait4(process.pid, 0)
    wall = (time.perf_counter() - started) * 1000
    process.returncode = os.waitstatus_to_exitcode(status)
    process.stdout.close()
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {process.returncode}: {output[-500:]}")
    return started_epoch, wall, (usage.ru_utime + usage.ru_stime) * 1000, output


def _stats(samples: list[float]) -> dict[str, Any]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "samples": [round(s, 1) for s in samples],
        "min": round(ordered[0], 1),
        "median": round(statistics.median(ordered), 1),
        "p95": round(p95, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    script = _script()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ACTOVIQ_CONFIG", "ACTOVIQ_DB"):
        env.pop(name, None)
    env["NO_COLOR"] = "1"
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        project = Path(tmp)
        (project / "actoviq.toml").write_text(CONFIG, "utf-8")
        (project / "bench_provider.py").write_text(PROVIDER, "utf-8")
        mark = project / "first-request.txt"
        scenarios: dict[str, list[str]] = {
            "help": [script, "--help"],
            "run": [script, "run", "bench", "hi", "--model", "bench:m"],
            "run-session": [script, "run", "bench", "hi", "--model", "bench:m", "-s", "bench"],
        }
        for name, argv in scenarios.items():
            walls: list[float] = []
            cpus: list[float] = []
            firsts: list[float] = []
            first_cpus: list[float] = []
            for index in range(args.warmup + args.repeat):
                mark.unlink(missing_ok=True)
                epoch, wall, cpu, output = _child(argv, project, env)
                first = first_cpu = 0.0
                if name != "help":
                    assert "hello from the bench" in output, output
                    at, cpu_at = (float(part) for part in mark.read_text("utf-8").split())
                    first, first_cpu = (at - epoch) * 1000, cpu_at * 1000
                if index < args.warmup:
                    continue
                walls.append(wall)
                cpus.append(cpu)
                if name != "help":
                    firsts.append(first)
                    first_cpus.append(first_cpu)
            if name == "help":
                results["help"] = {"wallMs": _stats(walls), "cpuMs": _stats(cpus)}
            else:
                key = "run" if name == "run" else "run-session"
                results[f"{key}-first-request"] = {
                    "wallMs": _stats(firsts),
                    "cpuMs": _stats(first_cpus),
                }
                results[f"{key}-total"] = {"wallMs": _stats(walls), "cpuMs": _stats(cpus)}
    checks = {
        name: {
            "targetMs": target,
            "medianMs": results[name]["wallMs"]["median"],
            "passed": results[name]["wallMs"]["median"] <= target,
        }
        for name, target in TARGETS_MS.items()
    }
    report = {
        "benchmark": "actoviq-cli start-up",
        "python": platform.python_version(),
        "cpuCount": os.cpu_count(),
        "loadAverage1m": round(os.getloadavg()[0], 2),
        "repeat": args.repeat,
        "warmup": args.warmup,
        "results": results,
        "targets": checks,
    }
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n", "utf-8")
    for name, value in results.items():
        wall = value["wallMs"]
        cpu = value.get("cpuMs")
        extra = f", cpu median {cpu['median']} ms" if cpu else ""
        print(f"{name:28} wall median {wall['median']:7.1f} ms (min {wall['min']}){extra}")
    for name, check in checks.items():
        verdict = "pass" if check["passed"] else "FAIL"
        print(f"target {name}: median {check['medianMs']} ms <= {check['targetMs']} ms: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
