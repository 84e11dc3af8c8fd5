"""Promises checked from outside: real ``actoviq`` processes on one SQLite file."""

from __future__ import annotations

import os
import queue
import subprocess
import threading
import time
from pathlib import Path

from cli_testkit import Project, validated


def _run(project: Project, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        project.command(*args),
        cwd=project.root,
        env=project.env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_two_processes_resuming_one_paused_run_pay_exactly_once(project: Project) -> None:
    paused = _run(project, "run", "payer", "please pay INV-42", "--interrupt")
    assert paused.returncode == 3, paused.stderr
    run_id = paused.stdout.strip().splitlines()[-1]

    # The approval is delivered twice, to two processes started together.
    racers = [
        subprocess.Popen(
            project.command("--json", "resume", run_id, "--approve", "call_pay"),
            cwd=project.root,
            env=project.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outcomes = [racer.communicate(timeout=120) for racer in racers]
    codes = sorted(racer.returncode for racer in racers)
    assert codes == [0, 5], outcomes
    loser = next(out for out, racer in zip(outcomes, racers, strict=True) if racer.returncode == 5)
    error = validated(loser[0].strip().splitlines()[-1])
    assert error["error"]["code"] == "RUN_STATE_STALE" and error["exitCode"] == 5

    late = _run(project, "resume", run_id, "--approve", "call_pay")
    assert late.returncode == 5 and "error[RUN_STATE_STALE]" in late.stderr
    assert project.ledger() == ["pay INV-42 1250"]


def test_console_script_help_and_python_m_agree(project: Project) -> None:
    via_module = _run(project, "--help")
    assert via_module.returncode == 0
    assert "Exit codes: 0 ok" in via_module.stdout
    for command in ("run", "resume", "chat", "sessions", "migrate", "inspect", "serve", "mcp"):
        assert command in via_module.stdout


def test_interrupted_run_in_a_pipe_prints_only_the_run_id_last(project: Project) -> None:
    paused = _run(project, "run", "payer", "pay", "--interrupt")
    lines = paused.stdout.strip().splitlines()
    assert paused.returncode == 3
    assert len(lines[-1]) == 36 and lines[-1].count("-") == 4  # a UUID, alone on the line
    assert "is waiting for a decision" in paused.stderr


def test_a_reader_closing_the_pipe_ends_the_command_quietly(project: Project) -> None:
    process = subprocess.Popen(
        project.command("--json", "run", "payer", "slow please"),
        cwd=project.root,
        env=project.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stderr is not None
    validated(process.stdout.readline())  # like `| head -1`: one line, then the pipe closes
    process.stdout.close()
    errors = process.stderr.read()
    process.stderr.close()
    assert process.wait(timeout=120) == 141
    assert "Traceback" not in errors and "error[" not in errors, errors


def _tool_started(fifo: Path, process: subprocess.Popen[str]) -> str:
    """The line the tool writes to ``fifo`` once it runs (fails if the process ends first)."""
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        with open(fifo, encoding="utf-8") as started:  # opens when the tool opens its end
            lines.put(started.readline())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + 120
    while True:
        try:
            return lines.get(timeout=0.5)
        except queue.Empty:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            with open(fifo, "w", encoding="utf-8"):  # releases the reader
                pass
            reader.join(timeout=10)
            raise AssertionError(f"the tool never started (exit status {process.returncode})")


def test_a_run_killed_inside_a_tool_is_reconciled_by_resume(
    project: Project, tmp_path: Path
) -> None:
    config = (project.root / "actoviq.toml").read_text("utf-8")
    config = config.replace(
        '"cli_test_tools:shout"]', '"cli_test_tools:shout", "cli_test_tools:hang_payment"]'
    )
    project.write_config(
        "lease_seconds = 3\n"
        + config
        + '\n[agents.crasher]\ninstructions = "Pay."\ntools = ["hang_payment"]\n'
    )
    fifo = tmp_path / "started.fifo"
    os.mkfifo(fifo)
    env = project.env(ACTOVIQ_TEST_FIFO=str(fifo))
    process = subprocess.Popen(
        project.command("--json", "run", "crasher", "crash now"),
        cwd=project.root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    assert _tool_started(fifo, process) == "started\n"
    first = validated(process.stdout.readline())
    run_id = first["event"]["runId"]

    # While the process lives it renews its claim: the run is not taken, and the hint says when
    # the claim would lapse.
    held = _run(project, "resume", run_id)
    assert held.returncode == 5, held.stderr
    assert "another execution holds the run" in held.stderr and "lapses in" in held.stderr

    process.kill()  # SIGKILL inside the tool: no cleanup, the claim stays on the row
    process.wait(timeout=60)
    process.stdout.close()
    deadline = time.monotonic() + 60
    while held.returncode == 5 and time.monotonic() < deadline:  # the 3 s lease runs out
        held = _run(project, "resume", run_id)
    assert held.returncode == 3, held.stderr
    assert "may have started" in held.stdout and "--failed call_hang" in held.stderr

    wrong = _run(project, "resume", run_id, "--approve", "call_hang")
    assert wrong.returncode == 2 and "--retry/--failed" in wrong.stderr
    done = _run(project, "--json", "resume", run_id, "--failed", "call_hang")
    assert done.returncode == 0, done.stderr
    result = validated(done.stdout.strip().splitlines()[-1])
    assert result["status"] == "completed" and result["output"] == "Payment INV-7 is marked failed."
    assert project.ledger() == ["begin INV-7"]  # the tool never ran a second time
