"""Run every example under examples/<topic>/ (the `make demo` job; `--offline` in `make test`).

Each example runs as a copy of its file alone in a fresh temporary folder, so an example that
imports a sibling helper, or reads a file next to it, fails here as it would for a user who
copied it. Offline, the examples use the scripted provider: API keys are removed from their
environment and ACTOVIQ_OFFLINE=1 is set. Online (no flag), an example picks OpenAI or Anthropic
when OPENAI_API_KEY or ANTHROPIC_API_KEY is set. Arguments other than flags select examples by
path substring (`python tools/run_examples.py --offline orchestration/`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SECRETS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")


def examples(selectors: list[str]) -> list[Path]:
    """The example files, ``examples/<topic>/*.py``, optionally filtered by substrings."""
    found = sorted(
        path for path in (ROOT / "examples").glob("*/*.py") if not path.name.startswith("_")
    )
    if selectors:
        found = [p for p in found if any(s in p.relative_to(ROOT).as_posix() for s in selectors)]
    return found


def run_alone(example: Path, env: dict[str, str]) -> int:
    """Run a copy of ``example`` alone in a fresh folder; return its exit status."""
    with tempfile.TemporaryDirectory(prefix="actoviq-example-") as folder:
        copy = Path(folder) / example.name
        shutil.copyfile(example, copy)
        return subprocess.call([sys.executable, str(copy)], env=env, cwd=folder, timeout=300)


def main() -> int:
    args = sys.argv[1:]
    offline = "--offline" in args
    selected = examples([a for a in args if not a.startswith("--")])
    if not selected:
        print("no examples selected (examples/<topic>/*.py)")
        return 1
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if offline:
        for name in SECRETS:
            env.pop(name, None)
        env["ACTOVIQ_OFFLINE"] = "1"
    failed: list[str] = []
    for example in selected:
        print(f"\n=== {example.relative_to(ROOT)} ===", flush=True)
        code = run_alone(example, env)
        if code:
            failed.append(f"{example.relative_to(ROOT)} exited {code}")
    for line in failed:
        print(f"FAILED: {line}")
    print(f"\nexamples: {len(selected) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
