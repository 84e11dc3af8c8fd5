"""Run import-linter over the D1 contracts in the root pyproject.toml.

Contracts are written for every package of the design, including ones that do not exist yet.
import-linter refuses a contract whose *source* package is missing, so this wrapper drops exactly
those contracts (saying so) and runs every other one unchanged. Layers use optional "(pkg)" entries
and need no filtering.

Usage: python tools/check_layers.py
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _exists(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def _ini_value(value: Any) -> str:
    if isinstance(value, list):
        return "\n" + "\n".join(f"    {entry}" for entry in value)  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, bool):
        return "True" if value else "False"
    return str(value)


def main() -> int:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["importlinter"]
    contracts: list[dict[str, Any]] = config["contracts"]
    kept: list[dict[str, Any]] = []
    for contract in contracts:
        sources: list[str] = contract.get("source_modules", [])
        missing = [module for module in sources if not _exists(module)]
        if sources and len(missing) == len(sources):
            print(f"skipped (package not present yet): {contract['name']}")
            continue
        if missing:
            contract = {**contract, "source_modules": [m for m in sources if m not in missing]}
        kept.append(contract)
    lines = ["[importlinter]"]
    for key, value in config.items():
        if key != "contracts":
            lines.append(f"{key} = {_ini_value(value)}")
    for index, contract in enumerate(kept):
        lines.append(f"\n[importlinter:contract:{index}]")
        for key, value in contract.items():
            lines.append(f"{key} = {_ini_value(value)}")
    with tempfile.NamedTemporaryFile("w", suffix=".ini", delete=False) as handle:
        handle.write("\n".join(lines) + "\n")
        ini = handle.name
    try:
        return subprocess.call(
            [str(Path(sys.executable).parent / "lint-imports"), "--config", ini, "--no-cache"],
            cwd=ROOT,
        )
    finally:
        Path(ini).unlink(missing_ok=True)


if __name__ == "__main__":
    sys.exit(main())
