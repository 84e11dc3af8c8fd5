"""Write the published JSON Schemas (decision D2) into docs/schemas/.

Each entry names a module and a function returning a schema; entries whose package is not part of
the workspace yet are skipped with a note. `--check` compares instead of writing (used by tests).
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "schemas"
SCHEMAS = [
    ("actoviq.core", "items_json_schema", "items.schema.json"),
    ("actoviq.events.schema", "run_event_json_schema", "run-event.schema.json"),
    ("actoviq.runtime.schema", "run_state_json_schema", "run-state.schema.json"),
    (
        "actoviq.surfaces.schema",
        "surface_semantic_event_json_schema",
        "surface-semantic-event.schema.json",
    ),
    ("actoviq.cli.schema", "cli_output_json_schema", "cli-output.schema.json"),
]


def render(module_name: str, function: str) -> str | None:
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError:
        return None
    make = getattr(module, function, None)
    if make is None:
        return None
    return json.dumps(make(), indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def main() -> int:
    check = "--check" in sys.argv[1:]
    OUT.mkdir(parents=True, exist_ok=True)
    stale: list[str] = []
    for module_name, function, filename in SCHEMAS:
        text = render(module_name, function)
        if text is None:
            print(f"skipped {filename}: {module_name}.{function} not available")
            continue
        target = OUT / filename
        if check:
            if not target.is_file() or target.read_text("utf-8") != text:
                stale.append(filename)
            continue
        target.write_text(text, "utf-8")
        print(f"wrote {target.relative_to(ROOT)}")
    if stale:
        print(f"stale schemas (run `make docs`): {', '.join(stale)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
