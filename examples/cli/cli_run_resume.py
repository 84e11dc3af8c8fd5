"""The ``actoviq`` command on a small project: run, pause for approval, resume once, sessions.

It writes a throwaway project (``actoviq.toml``, a tools module, a script for the offline model)
and drives the real console commands, as a shell script would:

1. ``actoviq run payer "Please pay INV-42" --interrupt`` stops at the approval, prints the run
   id and exits 3 (the paused state is in the project's SQLite file);
2. ``actoviq resume RUN_ID --approve call_pay`` pays, exactly once; a second resume is refused
   (exit 5) and pays nothing;
3. ``actoviq --json sessions export`` shows the session as canonical items.

Offline (``ACTOVIQ_OFFLINE=1`` or no API key) the ``scripted:`` provider plays the model; with
``OPENAI_API_KEY`` or ``ANTHROPIC_API_KEY`` the same commands run against the real model, which
decides itself whether to call the tool.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

TOOLS = '''
from pathlib import Path

from actoviq.runtime import tool


@tool(effect="side-effect", requires_approval=True)
def send_payment(invoice: str, amount: int) -> dict[str, object]:
    """Pay an invoice (needs approval).

    Args:
        invoice: the invoice number.
        amount: the amount in cents.
    """
    with (Path(__file__).parent / "payments.log").open("a") as log:
        log.write(invoice + "\\n")
    return {"paid": amount, "invoice": invoice}
'''
SCRIPT = {
    "turns": [
        {
            "match": "pay",
            "toolCalls": [
                {
                    "id": "call_pay",
                    "name": "send_payment",
                    "input": {"invoice": "INV-42", "amount": 1250},
                }
            ],
        },
        {"match": "pay", "text": "Invoice INV-42 is paid."},
    ]
}
CONFIG = """
model = "{model}"
tools = ["payments:send_payment"]

[providers.scripted]
script = "script.json"

[agents.payer]
name = "Payer"
instructions = "Pay invoice INV-42 (1250 cents) with send_payment, then confirm in one sentence."
tools = ["send_payment"]
"""


def model() -> str:
    """A real model when a key is set (and not offline), else the scripted one."""
    if os.environ.get("ACTOVIQ_OFFLINE") != "1":
        if os.environ.get("OPENAI_API_KEY"):
            return "openai-responses:" + os.environ.get("ACTOVIQ_OPENAI_MODEL", "gpt-4.1-mini")
        if os.environ.get("ANTHROPIC_API_KEY"):
            name = os.environ.get("ACTOVIQ_ANTHROPIC_MODEL", "claude-3-5-haiku-latest")
            return f"anthropic:{name}"
    return "scripted:demo"


def actoviq(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``actoviq ARGS`` in the project, as a user would in a shell."""
    done = subprocess.run(
        [sys.executable, "-m", "actoviq.cli", *args],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    print(f"$ actoviq {' '.join(args)}   -> exit {done.returncode}")
    for line in done.stdout.strip().splitlines()[-4:]:
        print(f"  {line}")
    return done


def main() -> None:
    chosen = model()
    print(f"model: {chosen}")
    with tempfile.TemporaryDirectory(prefix="actoviq-cli-example-") as tmp:
        project = Path(tmp)
        (project / "actoviq.toml").write_text(CONFIG.format(model=chosen), "utf-8")
        (project / "payments.py").write_text(TOOLS, "utf-8")
        (project / "script.json").write_text(json.dumps(SCRIPT), "utf-8")

        paused = actoviq(
            project, "run", "payer", "Please pay INV-42.", "--interrupt", "--session", "billing"
        )
        if paused.returncode != 3:
            print("the model did not ask to pay; nothing to approve")
            return
        run_id = paused.stdout.strip().splitlines()[-1]
        assert actoviq(project, "resume", run_id, "--approve", "call_pay").returncode == 0
        again = actoviq(project, "resume", run_id, "--approve", "call_pay")
        assert again.returncode == 5, again.stderr  # refused: the run already completed
        print(f"  {again.stderr.strip()}")
        payments = (project / "payments.log").read_text("utf-8").split()
        print(f"payments made: {len(payments)} (exactly once)")
        assert payments == ["INV-42"]

        exported = actoviq(project, "sessions", "export", "billing")
        kinds = [json.loads(line)["type"] for line in exported.stdout.splitlines()]
        print(f"session 'billing' holds: {', '.join(kinds)}")


if __name__ == "__main__":
    main()
