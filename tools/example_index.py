"""The examples as documentation: one page per example, and the migration example index.

Every ``examples/<topic>/<name>.py`` gets a generated page (its module docstring, how to run it,
the whole file included), grouped by topic. ``examples/migration_index.toml`` maps every 0.x
example of the migration guide's example table (section 13.1) to the 1.0 example(s) replacing
it; :func:`index_problems` is what the tests enforce: every listed example exists, and a row
stays pending only while something it needs is not in the workspace.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
INDEX = EXAMPLES / "migration_index.toml"
LEGACY_EXAMPLES = 27
TOPICS = {
    "getting_started": "Getting started",
    "runtime": "Runtime",
    "providers": "Providers",
    "orchestration": "Orchestration",
    "workflow": "Workflow",
    "mcp": "MCP",
    "surfaces": "Surfaces",
    "cli": "Command line",
    "profiles": "Profiles",
    "storage": "Storage",
    "compat": "Compat",
    "migration": "Migration",
}


@dataclass(frozen=True)
class Row:
    """One 0.x example, its 1.0 replacement, the examples showing it and what is pending."""

    legacy: str
    replacement: str
    examples: tuple[str, ...]
    pending: tuple[str, ...]


def example_files() -> list[Path]:
    """Every runnable example: ``examples/<topic>/*.py`` (files starting with ``_`` excluded)."""
    return sorted(
        path
        for path in EXAMPLES.glob("*/*.py")
        if not path.name.startswith("_") and path.parent.name != "__pycache__"
    )


def misplaced_examples() -> list[Path]:
    """Python files directly under ``examples/``: the runner and the site only see topic folders."""
    return sorted(EXAMPLES.glob("*.py"))


def page_path(example: Path) -> str:
    """The site page of an example, relative to ``docs/``."""
    relative = example.relative_to(EXAMPLES).with_suffix(".md")
    return f"examples/{relative.as_posix()}"


def _docstring(example: Path) -> str:
    module = ast.parse(example.read_text("utf-8"))
    return ast.get_docstring(module) or ""


def example_title(example: Path) -> str:
    """The first line of the example's docstring (its file name when there is none)."""
    first = _docstring(example).split("\n\n", 1)[0].replace("\n", " ").strip()
    return first.rstrip(".") or example.stem.replace("_", " ")


def example_page(example: Path) -> str:
    """The Markdown page of one example (the file is included, so it is what ``make test`` runs)."""
    relative = example.relative_to(ROOT).as_posix()
    body = _docstring(example).split("\n\n", 1)
    rest = body[1] if len(body) > 1 else ""
    return "\n".join(
        [
            f"# {example_title(example)}",
            "",
            rest,
            "",
            f"Run it from a checkout: `uv run python {relative}` (offline by default; see",
            "[the examples overview](../index.md) for the API keys it reads).",
            "",
            f'```python title="{relative}"',
            f'--8<-- "{relative}"',
            "```",
            "",
        ]
    )


def load_index(path: Path = INDEX) -> list[Row]:
    """The rows of the migration example index."""
    data = tomllib.loads(path.read_text("utf-8"))
    rows: list[Row] = []
    for raw in data.get("row", []):
        rows.append(
            Row(
                legacy=str(raw["legacy"]),
                replacement=str(raw["replacement"]),
                examples=tuple(str(e) for e in raw.get("examples", [])),
                pending=tuple(str(p) for p in raw.get("pending", [])),
            )
        )
    return rows


def is_available(requirement: str) -> bool:
    """Whether ``"module"`` or ``"module:Name"`` is importable in this workspace."""
    module_name, _, attribute = requirement.partition(":")
    try:
        if importlib.util.find_spec(module_name) is None:
            return False
    except ModuleNotFoundError:
        return False
    if not attribute:
        return True
    return hasattr(importlib.import_module(module_name), attribute)


def index_problems(rows: list[Row], examples_dir: Path = EXAMPLES) -> list[str]:
    """What is wrong with the index: missing examples, stale pending marks, missing rows."""
    problems: list[str] = []
    if len(rows) != LEGACY_EXAMPLES:
        problems.append(f"{len(rows)} rows, expected {LEGACY_EXAMPLES} (one per 0.x example)")
    seen: set[str] = set()
    for row in rows:
        if row.legacy in seen:
            problems.append(f"{row.legacy}: listed twice")
        seen.add(row.legacy)
        for example in row.examples:
            if not (examples_dir / example).is_file():
                problems.append(f"{row.legacy}: examples/{example} does not exist")
        built = [req for req in row.pending if is_available(req)]
        for requirement in built:
            problems.append(
                f"{row.legacy}: {requirement} is built now; add its example and drop it "
                "from pending"
            )
        if not row.examples and not row.pending:
            problems.append(f"{row.legacy}: no example and nothing pending")
    return problems


def _link(example: str) -> str:
    page = page_path(EXAMPLES / example).removeprefix("examples/")
    return f"[`{example}`]({page})"


def index_page(rows: list[Row], examples: list[Path]) -> str:
    """The examples overview: every example by topic, then the migration table."""
    lines = [
        "# Examples",
        "",
        "Every example is a self-contained file under `examples/` (copy it alone and it runs).",
        "`make demo` runs them all; `make test` runs them offline. Offline (no API key, or",
        "`ACTOVIQ_OFFLINE=1`) the scripted provider plays the model; with `OPENAI_API_KEY`",
        "(model `ACTOVIQ_OPENAI_MODEL`, default `gpt-4.1-mini`) or `ANTHROPIC_API_KEY`",
        "(`ACTOVIQ_ANTHROPIC_MODEL`) the same code talks to the real model.",
        "",
    ]
    by_topic: dict[str, list[Path]] = {}
    for example in examples:
        by_topic.setdefault(example.parent.name, []).append(example)
    for topic, files in by_topic.items():
        lines += [f"## {TOPICS.get(topic, topic.replace('_', ' ').capitalize())}", ""]
        for example in files:
            relative = example.relative_to(EXAMPLES).as_posix()
            lines.append(f"- {_link(relative)}: {example_title(example)}.")
        lines.append("")
    lines += [
        "## From the 0.x examples",
        "",
        "Every example of the 0.x TypeScript SDK and where its 1.0 replacement is shown. A row",
        "marked *pending* names the package (or name) it waits for; it gets its example when",
        "that lands, and `make test` fails if it does not.",
        "",
        "| 0.x example | 1.0 replacement | example(s) |",
        "|---|---|---|",
    ]
    for row in rows:
        shown = ", ".join(_link(example) for example in row.examples) or "—"
        if row.pending:
            waiting = ", ".join(f"`{req}`" for req in row.pending)
            shown += f" (*pending*: {waiting})"
        lines.append(f"| `{row.legacy}` | {row.replacement} | {shown} |")
    return "\n".join(lines) + "\n"
