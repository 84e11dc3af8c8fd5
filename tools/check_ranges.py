"""Check that workspace members depend on each other through ranges (>=x,<y), never == pins.

Usage: python tools/check_ranges.py   (exit 1 and a list of offending lines on failure)
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_REQ = re.compile(r"^\s*(actoviq-[a-z0-9-]+)\s*(\[[^\]]*\])?\s*(?P<spec>[^;]*)")


def problems_in(pyproject: Path, members: set[str]) -> list[str]:
    data = tomllib.loads(pyproject.read_text("utf-8"))
    project = data.get("project", {})
    requirements: list[str] = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        requirements.extend(extra)
    for group in data.get("dependency-groups", {}).values():
        requirements.extend(entry for entry in group if isinstance(entry, str))
    found: list[str] = []
    for requirement in requirements:
        match = _REQ.match(requirement)
        if match is None or match.group(1) not in members:
            continue
        spec = match.group("spec").replace(" ", "")
        clauses = [clause for clause in spec.split(",") if clause]
        lower = [c for c in clauses if c.startswith(">=")]
        upper = [c for c in clauses if c.startswith("<") and not c.startswith("<=")]
        pinned = [c for c in clauses if c.startswith(("==", "===", "~="))]
        if pinned or len(lower) != 1 or len(upper) != 1 or len(clauses) != 2:
            rel = pyproject.relative_to(ROOT)
            found.append(f"{rel}: {requirement!r} must be a range '>=x,<y'")
    return found


def main() -> int:
    pyprojects = sorted(ROOT.glob("packages/*/pyproject.toml"))
    members = {tomllib.loads(p.read_text("utf-8"))["project"]["name"] for p in pyprojects}
    problems = [line for p in pyprojects for line in problems_in(p, members)]
    for line in problems:
        print(line)
    print(f"checked {len(pyprojects)} members: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
