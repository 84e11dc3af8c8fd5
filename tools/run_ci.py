"""`make test`: every check of the repository, the independent ones side by side.

Each check is a *leg*: one ``make`` target (``make unit``, ``make lint``, ``make pythons
PYTHONS=3.12``...), so a leg runs exactly what the target of the same name runs alone. Most legs
keep one core busy, so running them one after the other leaves the other cores idle; here up to
``--jobs`` legs (default: the number of cores) run at once, the longest first.

Isolation between legs that run together: each pytest leg gets its own ``--basetemp``; each other
Python has its own ``.venv-py3.X``; only the Python 3.11 unit leg uses the PostgreSQL test
database (``ACTOVIQ_PG_DB``); the docs leg checks the published JSON Schemas (``gen_schemas.py
--check``) instead of rewriting them under the tests that compare against them. The shared
``.venv`` is synced once, before the legs start (``ACTOVIQ_SETUP_DONE`` makes ``make setup`` a
no-op inside the legs).

Each leg's output goes to its own log, ``.ci-logs/<leg>.log`` (``ACTOVIQ_CI_LOGS`` moves it). A
leg that fails has the end of its log printed; any failure makes the exit status 1. A summary
table gives each leg's wall time and CPU time (the leg's processes, children included).

Usage: python tools/run_ci.py [--jobs N] [leg ...]   (no leg named: all of them)
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TAIL_LINES = 120
DURATIONS = 30  # a pytest leg's log ends with its slowest tests


@dataclass(frozen=True)
class Leg:
    """One check: a make target with its arguments, and its usual share of the run (seconds)."""

    name: str
    target: tuple[str, ...]
    weight: int
    pytest: bool = False


# Longest first (weights: single-core seconds measured on a 2-core machine), so the long legs
# never start last and leave one core idle at the end.
LEGS = (
    Leg("unit", ("unit",), 390, pytest=True),
    Leg("py3.12", ("pythons", "PYTHONS=3.12"), 330),
    Leg("py3.13", ("pythons", "PYTHONS=3.13"), 330),
    Leg("integration", ("integration",), 95, pytest=True),
    Leg("typecheck", ("typecheck",), 90),
    Leg("docs", ("docs", "SCHEMAS_FLAGS=--check"), 60),
    Leg("check-wheels", ("check-wheels",), 60),
    Leg("examples", ("examples",), 50),
    Leg("lint", ("lint",), 15),
    Leg("layers", ("layers",), 10),
    Leg("ranges", ("ranges",), 5),
)


@dataclass
class Running:
    """A started leg."""

    leg: Leg
    process: subprocess.Popen[bytes]
    log: Path
    started: float


@dataclass(frozen=True)
class Done:
    """A finished leg: exit status, wall and CPU seconds, start offset from the run's start."""

    leg: Leg
    code: int
    wall: float
    cpu: float
    offset: float
    log: Path


def tail(path: Path, lines: int = TAIL_LINES) -> str:
    """The last ``lines`` lines of a log."""
    return "\n".join(path.read_text("utf-8", errors="replace").splitlines()[-lines:])


def command(leg: Leg, scratch: Path) -> list[str]:
    """The ``make`` command line of a leg (a pytest leg gets its own ``--basetemp``)."""
    argv = [os.environ.get("MAKE", "make"), "--no-print-directory", *leg.target]
    if leg.pytest:
        basetemp = scratch / f"tmp-{leg.name}"
        argv.append(f"PYTEST_ARGS=--basetemp={basetemp} --durations={DURATIONS}")
    return argv


def select(names: list[str]) -> list[Leg]:
    """The legs named (all when none is), in scheduling order; an unknown name is an error."""
    if not names:
        return list(LEGS)
    known = {leg.name: leg for leg in LEGS}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise SystemExit(f"unknown leg(s): {', '.join(unknown)} (known: {', '.join(known)})")
    return [leg for leg in LEGS if leg.name in names]


def start(leg: Leg, logs: Path, scratch: Path, env: dict[str, str], t0: float) -> Running:
    """Start one leg with its output going to its log."""
    log = logs / f"{leg.name}.log"
    argv = command(leg, scratch)
    print(f"[{time.monotonic() - t0:6.0f} s] start {leg.name}: {' '.join(argv)}", flush=True)
    with log.open("wb") as out:
        process = subprocess.Popen(
            argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    return Running(leg, process, log, time.monotonic())


def reap(running: dict[int, Running], t0: float) -> Done:
    """Wait for the next leg to finish; its CPU time comes from the kernel's accounting."""
    pid, status, usage = os.wait4(-1, 0)
    while pid not in running:  # pragma: no cover - a stray child of ours: not a leg
        pid, status, usage = os.wait4(-1, 0)
    entry = running.pop(pid)
    entry.process.returncode = code = os.waitstatus_to_exitcode(status)
    now = time.monotonic()
    done = Done(
        entry.leg,
        code,
        now - entry.started,
        usage.ru_utime + usage.ru_stime,
        entry.started - t0,
        entry.log,
    )
    verdict = "ok" if code == 0 else f"FAILED (exit {code})"
    print(
        f"[{now - t0:6.0f} s] {verdict}: {done.leg.name} "
        f"({done.wall:.0f} s wall, {done.cpu:.0f} s CPU): {tail(entry.log, 1)[:120]}",
        flush=True,
    )
    return done


def summary(results: list[Done], total: float, loads: tuple[float, float]) -> str:
    """The per-leg table printed at the end."""
    lines = [
        "",
        f"{'leg':<14}{'result':<9}{'start':>8}{'wall':>8}{'CPU':>8}  log",
    ]
    for done in sorted(results, key=lambda d: d.offset):
        verdict = "ok" if done.code == 0 else "FAILED"
        lines.append(
            f"{done.leg.name:<14}{verdict:<9}{done.offset:>7.0f}s{done.wall:>7.0f}s"
            f"{done.cpu:>7.0f}s  {done.log}"
        )
    cpu = sum(done.cpu for done in results)
    lines.append(
        f"legs: {total:.0f} s wall, {cpu:.0f} s CPU; load average {loads[0]:.2f} at the start, "
        f"{loads[1]:.2f} at the end"
    )
    return "\n".join(lines)


def run(legs: list[Leg], jobs: int, logs: Path) -> int:
    """Run ``legs``, at most ``jobs`` at a time; print failures' log tails and the summary."""
    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir(parents=True)
    env = {**os.environ, "ACTOVIQ_SETUP_DONE": "1"}
    load_start = os.getloadavg()[0]
    t0 = time.monotonic()
    results: list[Done] = []
    with tempfile.TemporaryDirectory(prefix="actoviq-ci-") as tmp:
        scratch = Path(tmp)
        waiting = list(legs)
        running: dict[int, Running] = {}
        try:
            while waiting or running:
                while waiting and len(running) < jobs:
                    entry = start(waiting.pop(0), logs, scratch, env, t0)
                    running[entry.process.pid] = entry
                results.append(reap(running, t0))
        finally:
            for entry in running.values():  # interrupted: stop what still runs
                entry.process.terminate()
                entry.process.wait()
    total = time.monotonic() - t0
    failed = [done for done in results if done.code != 0]
    for done in failed:
        print(f"\n--- the end of {done.log} (leg {done.leg.name}, exit {done.code}) ---")
        print(tail(done.log))
    print(summary(results, total, (load_start, os.getloadavg()[0])))
    if failed:
        print(f"FAILED legs: {', '.join(done.leg.name for done in failed)}")
        return 1
    return 0


def main(argv: list[str]) -> int:
    """Parse the arguments and run the legs."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="legs at a time")
    names = ", ".join(leg.name for leg in LEGS)
    parser.add_argument("legs", nargs="*", help=f"legs to run (default: all): {names}")
    args = parser.parse_args(argv)
    logs = Path(os.environ.get("ACTOVIQ_CI_LOGS") or ROOT / ".ci-logs")
    return run(select(args.legs), max(1, args.jobs), logs)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
