"""Run every example under examples/ (the `make demo` job; `--offline` in `make test`).

Offline, the examples use the scripted provider: API keys are removed from their environment.
Online (no flag), an example picks OpenAI or Anthropic when OPENAI_API_KEY or
ANTHROPIC_API_KEY is set.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SECRETS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")


def main() -> int:
    offline = "--offline" in sys.argv[1:]
    # every example file, sub-folders included (examples/profiles/...); support/ holds helpers
    examples = sorted(
        path
        for path in (ROOT / "examples").rglob("*.py")
        if "support" not in path.relative_to(ROOT / "examples").parts and path.name != "__init__.py"
    )
    if not examples:
        print("no examples yet (examples/*.py)")
        return 0
    env = dict(os.environ)
    if offline:
        for name in SECRETS:
            env.pop(name, None)
        env["ACTOVIQ_OFFLINE"] = "1"
    failed: list[str] = []
    for example in examples:
        print(f"\n=== {example.relative_to(ROOT)} ===", flush=True)
        code = subprocess.call([sys.executable, str(example)], env=env, cwd=ROOT, timeout=300)
        if code:
            failed.append(f"{example.relative_to(ROOT)} exited {code}")
    for line in failed:
        print(f"FAILED: {line}")
    print(f"\nexamples: {len(examples) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
