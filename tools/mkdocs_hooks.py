"""MkDocs hooks: generate the API reference pages at build time (see ``tools/api_inventory.py``).

One page per wheel, ``reference/<slug>.md``, plus ``reference/index.md``, and one page per
example, ``examples/<topic>/<name>.md``, plus the examples overview with the migration example
index (``tools/example_index.py``); the "API reference" and "Examples" entries of the nav in
``mkdocs.yml`` are filled with them, so a new wheel or a new public name
appears on the site without editing anything.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, cast

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

sys.path.insert(0, str(Path(__file__).resolve().parent))

import api_inventory
import example_index

NAV_TITLE = "API reference"
EXAMPLES_TITLE = "Examples"
MORE_TITLE = "More"
_pages: dict[str, str] = {}


def _index(wheels: list[api_inventory.Wheel]) -> str:
    lines = [
        "# API reference",
        "",
        "Generated from the docstrings of every public name (`__all__`) of every wheel.",
        "",
        "| wheel | import | what it is |",
        "|---|---|---|",
    ]
    for wheel in wheels:
        lines.append(f"| [{wheel.dist}]({wheel.slug}.md) | `{wheel.top}` | {wheel.description} |")
    return "\n".join(lines) + "\n"


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """Build the reference pages and put them into the nav."""
    wheels = api_inventory.wheels()
    _pages.clear()
    _pages["reference/index.md"] = _index(wheels)
    for wheel in wheels:
        _pages[f"reference/{wheel.slug}.md"] = api_inventory.reference_page(wheel)
    entries: list[Any] = [{"Overview": "reference/index.md"}]
    entries += [{wheel.dist: f"reference/{wheel.slug}.md"} for wheel in wheels]
    nav = cast(list[Any], config["nav"] or [])
    _fill(nav, EXAMPLES_TITLE, _example_pages())
    _fill(nav, NAV_TITLE, entries)
    listed = set(_nav_paths(nav))
    docs_dir = Path(config.docs_dir)
    extra = [
        path.relative_to(docs_dir).as_posix()
        for path in sorted(docs_dir.rglob("*.md"))
        if path.relative_to(docs_dir).as_posix() not in listed
        and not path.relative_to(docs_dir).as_posix().startswith(("reference/", "snippets/"))
    ]
    if extra:
        nav.append({MORE_TITLE: [{_title(docs_dir / path): path} for path in extra]})
    config.nav = nav
    return config


def _example_pages() -> list[Any]:
    examples = example_index.example_files()
    rows = example_index.load_index()
    _pages["examples/index.md"] = example_index.index_page(rows, examples)
    topics: dict[str, list[Any]] = {}
    for example in examples:
        page = example_index.page_path(example)
        _pages[page] = example_index.example_page(example)
        topic = example_index.TOPICS.get(example.parent.name, example.parent.name)
        topics.setdefault(topic, []).append({example_index.example_title(example): page})
    return [{"Overview": "examples/index.md"}, *({k: v} for k, v in topics.items())]


def _fill(nav: list[Any], title: str, entries: list[Any]) -> None:
    for entry in nav:
        if isinstance(entry, dict) and title in entry:
            entry[title] = entries
            return
    nav.append({title: entries})


def _nav_paths(nav: object) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [path for entry in nav for path in _nav_paths(entry)]  # type: ignore[union-attr]
    if isinstance(nav, dict):
        return [path for value in nav.values() for path in _nav_paths(value)]  # type: ignore[union-attr]
    return []


def _title(page: Path) -> str:
    for line in page.read_text("utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return page.stem.replace("-", " ").capitalize()


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the generated pages to the site's files."""
    for src_uri, content in _pages.items():
        files.append(File.generated(config, src_uri, content=content))
    return files
