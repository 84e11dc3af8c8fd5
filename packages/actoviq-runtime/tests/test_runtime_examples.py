"""Every example runs offline (scripted provider) as a subprocess and prints what it promises."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
EXPECTED = {
    "getting_started/quickstart.py": [
        "run: completed: CAS writes",
        "stream: Hello! Ask me about compare-and-set.",
    ],
    "getting_started/streaming.py": [
        "[tool get_weather started]",
        "result: completed: It is 18°C and sunny",
        "result: cancelled; last event: run.cancelled",
    ],
    "getting_started/tools_approval_resume.py": [
        ": interrupted; the state is in ",
        ": approval for send_email({'to': 'ops@example.test', 'subject': 'Deploy done'})",
        "sending 'Deploy done' to ops@example.test",
        ": completed",
    ],
    "getting_started/approval_stream.py": ["I emailed ops."],
    "getting_started/sqlite_chat.py": [
        "> My name is Ada.",
        "> What is my name?\nYour name is Ada.",
    ],
    "getting_started/structured_output.py": ["so far: {'city': 'Par'}", "Paris: 18.5 °C, sunny"],
    "runtime/middleware_timing.py": [
        "wrapModelCall[0] @10 model-timer",
        "result: completed: 12 squared",
    ],
}


SUPPORTED = {
    "getting_started/quickstart.py",
    "getting_started/streaming.py",
    "runtime/middleware_timing.py",
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs_offline(name: str) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    env["ACTOVIQ_OFFLINE"] = "1"
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    if name in SUPPORTED:  # these announce the provider they chose
        assert "provider: scripted provider (offline)" in done.stdout
    for fragment in EXPECTED[name]:
        assert fragment in done.stdout, done.stdout
    assert "Traceback" not in done.stderr
