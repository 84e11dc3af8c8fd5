"""Bump one package's version and add a changelog entry.

Usage:
    python tools/bump_version.py actoviq-core 1.0.1 "Fixed usage aggregation of cost."
    python tools/bump_version.py actoviq-core --part minor "New item helper."

Only that package's pyproject.toml and CHANGELOG.md change; members that depend on it keep their
ranges (check with tools/check_ranges.py).
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_VERSION = re.compile(r'^version\s*=\s*"([^"]+)"', re.MULTILINE)


def next_version(current: str, part: str) -> str:
    match = re.match(r"^(\d+)\.(\d+)\.(\d+)", current)
    if match is None:
        raise SystemExit(f"cannot bump non-semantic version {current!r}; give it explicitly")
    major, minor, patch = (int(x) for x in match.groups())
    is_pre = current != match.group(0)
    if part == "major":
        return f"{major + 1}.0.0"
    if part == "minor":
        return f"{major}.{minor + 1}.0"
    return f"{major}.{minor}.{patch if is_pre else patch + 1}"


def bump(package: str, version: str | None, part: str, note: str, today: dt.date) -> str:
    directory = ROOT / "packages" / package
    pyproject = directory / "pyproject.toml"
    if not pyproject.is_file():
        raise SystemExit(f"no such package: {package} (looked for {pyproject})")
    text = pyproject.read_text("utf-8")
    match = _VERSION.search(text)
    if match is None:
        raise SystemExit(f"{pyproject} has no version line")
    new = version or next_version(match.group(1), part)
    pyproject.write_text(_VERSION.sub(f'version = "{new}"', text, count=1), "utf-8")
    changelog = directory / "CHANGELOG.md"
    lines = (
        changelog.read_text("utf-8").splitlines()
        if changelog.exists()
        else [f"# Changelog — {package}"]
    )
    entry = [f"## {new} — {today.isoformat()}", f"- {note}", ""]
    insert_at = 1
    while insert_at < len(lines) and not lines[insert_at].startswith("## "):
        insert_at += 1
    lines[insert_at:insert_at] = entry
    changelog.write_text("\n".join(lines).rstrip() + "\n", "utf-8")
    return new


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Bump one package's version.")
    parser.add_argument("package")
    parser.add_argument("version", nargs="?", help="explicit new version")
    parser.add_argument("note", help="changelog line")
    parser.add_argument("--part", choices=("major", "minor", "patch"), default="patch")
    args = parser.parse_args(argv)
    new = bump(args.package, args.version, args.part, args.note, dt.date.today())
    print(f"{args.package} -> {new}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
