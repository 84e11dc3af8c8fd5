"""The documentation site: strict build, API reference coverage, docstrings, internal links.

The site is built once per module with ``mkdocs build --strict`` (a warning, a broken link or an
unresolvable reference fails it) into a temporary folder; every public name (``__all__``) of every
wheel must have a docstring and an entry in the built inventory (``objects.inv``), and every
internal link of the built HTML must resolve.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import zlib
from pathlib import Path

import api_inventory
import check_site_links
import example_index
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    return site


def _inventory(site: Path) -> set[str]:
    raw = (site / "objects.inv").read_bytes()
    header_lines = 4
    body = raw.split(b"\n", header_lines)[header_lines]
    text = zlib.decompress(body).decode("utf-8")
    return {line.split(" ", 1)[0] for line in text.splitlines() if line}


def test_the_site_builds_strictly_with_the_getting_started_path(built_site: Path) -> None:
    index = (built_site / "index.html").read_text("utf-8")
    assert "Getting started" in index
    assert (built_site / "reference" / "index.html").is_file()
    # Plain file links, so the site works opened from disk (site/index.html in a browser).
    assert 'href="getting-started/install.html"' in index


def test_every_wheel_has_a_reference_page(built_site: Path) -> None:
    wheels = api_inventory.wheels()
    assert len(wheels) >= 6
    for wheel in wheels:
        assert (built_site / "reference" / f"{wheel.slug}.html").is_file(), wheel.dist


def test_every_public_name_has_a_reference_entry(built_site: Path) -> None:
    inventory = _inventory(built_site)
    wheels = api_inventory.wheels()
    missing: list[str] = []
    for wheel in wheels:
        for module in wheel.modules:
            for name in module.exports:
                # A name documented under an earlier module of the wheel counts there.
                homes = [f"{other.name}.{name}" for other in wheel.modules]
                if not any(home in inventory for home in homes):
                    missing.append(f"{module.name}.{name}")
    assert missing == []


def test_every_public_name_has_a_docstring() -> None:
    wheels = api_inventory.wheels()
    paths = [path for wheel in wheels for path in api_inventory.documented_paths(wheel)]
    assert len(paths) > 500
    missing = api_inventory.missing_docstrings(
        paths, api_inventory.source_paths(), [wheel.top for wheel in wheels]
    )
    assert missing == [], "public names without a docstring: " + ", ".join(missing)


def test_the_docstring_check_finds_undocumented_functions_and_constants(tmp_path: Path) -> None:
    package = tmp_path / "src" / "docfixture"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        '"""A fixture package."""\n'
        '__all__ = ["LIMIT", "NAMED", "documented", "bare"]\n'
        "LIMIT = 3\n"
        "NAMED = 4\n"
        '"""Documented constant."""\n'
        "def documented() -> None:\n"
        '    """Documented function."""\n'
        "def bare() -> None:\n"
        "    pass\n",
        "utf-8",
    )
    paths = ["docfixture.LIMIT", "docfixture.NAMED", "docfixture.documented", "docfixture.bare"]
    missing = api_inventory.missing_docstrings(paths, [tmp_path / "src"], ["docfixture"])
    assert missing == ["docfixture.LIMIT", "docfixture.bare"]


def test_every_internal_link_of_the_site_resolves(built_site: Path) -> None:
    assert check_site_links.broken_links(built_site) == []


def test_the_link_checker_reports_missing_pages_and_anchors(tmp_path: Path) -> None:
    (tmp_path / "guide").mkdir()
    (tmp_path / "guide" / "index.html").write_text('<h2 id="setup">Setup</h2>', "utf-8")
    (tmp_path / "index.html").write_text(
        '<a href="guide/">ok</a> <a href="guide/#setup">ok</a> <a href="https://x.test/">ext</a>'
        ' <a href="missing/">bad</a> <a href="guide/#nowhere">bad</a>'
        ' <img src="img/logo.png"> <a href="#top">bad</a> <a href="../escape.html">bad</a>',
        "utf-8",
    )
    broken = check_site_links.broken_links(tmp_path)
    assert broken == [
        "index.html: missing/ (no such file)",
        "index.html: guide/#nowhere (no anchor #nowhere)",
        "index.html: img/logo.png (no such file)",
        "index.html: #top (no anchor #top)",
        "index.html: ../escape.html (outside the site)",
    ]


README_FILES = [ROOT / "README.md", *sorted(ROOT.glob("packages/*/README.md"))]
PAGE_FILES = sorted((ROOT / "docs").rglob("*.md"))
# References to material that is not part of the repository (the contract's source files).
OUTSIDE = re.compile(
    r"spec/0\d|\.\./shared|shared/(?:golden|corpus|spec|seeds)|\b0[0-4]-[a-z-]+\.md|\b0[0-4] §"
)
# Repository paths written in backticks or links: they must exist.
REPO_PATH = re.compile(
    r"(?<![\w./-])((?:examples|docs|packages|tools|tests-integration)/[\w./*-]*[\w-]"
    r"\.(?:py|md|json|toml|sh|yml))"
)


def _exists(path: str) -> bool:
    return any(ROOT.glob(path)) if "*" in path else (ROOT / path).exists()


def _python_blocks(markdown: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", markdown, flags=re.DOTALL)


def _without_docstring(source: str) -> str:
    module = ast.parse(source)
    first = module.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
        source = "\n".join(source.splitlines()[first.end_lineno or 0 :])
    return source.strip() + "\n"


def test_the_readme_first_screen_runs_the_hello_example() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    hello = (ROOT / "examples" / "getting_started" / "hello.py").read_text("utf-8")
    blocks = _python_blocks(readme)
    assert blocks, "the README shows no Python code"
    assert blocks[0].strip() + "\n" == _without_docstring(hello)
    assert readme.index("```python") < readme.index("make test")


@pytest.mark.parametrize("path", README_FILES + PAGE_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_page_refers_to_files_outside_the_repository(path: Path) -> None:
    text = path.read_text("utf-8")
    assert OUTSIDE.findall(text) == []
    # Link targets of site pages are relative to the page (checked by the strict build).
    named = re.sub(r"\]\([^)]*\)", "]", text) if path.is_relative_to(ROOT / "docs") else text
    missing = sorted({p for p in REPO_PATH.findall(named) if not _exists(p)})
    assert missing == []


def test_every_example_of_a_built_package_is_in_the_migration_index() -> None:
    rows = example_index.load_index()
    assert example_index.index_problems(rows) == []
    assert len(rows) == example_index.LEGACY_EXAMPLES


def test_the_index_check_reports_missing_examples_and_stale_pending_marks(tmp_path: Path) -> None:
    (tmp_path / "topic").mkdir()
    (tmp_path / "topic" / "there.py").write_text("print('hi')\n", "utf-8")
    rows = [
        example_index.Row("a.ts", "x", ("topic/there.py",), ()),
        example_index.Row("b.ts", "x", ("topic/gone.py",), ()),
        example_index.Row("c.ts", "x", (), ("json",)),
        example_index.Row("d.ts", "x", (), ("actoviq.not_built_yet",)),
        example_index.Row("e.ts", "x", (), ("actoviq.core:NoSuchName",)),
        example_index.Row("f.ts", "x", (), ()),
        example_index.Row("a.ts", "x", ("topic/there.py",), ()),
    ]
    problems = example_index.index_problems(rows, tmp_path)
    assert problems == [
        f"7 rows, expected {example_index.LEGACY_EXAMPLES} (one per 0.x example)",
        "b.ts: examples/topic/gone.py does not exist",
        "c.ts: json is built now; add its example and drop it from pending",
        "f.ts: no example and nothing pending",
        "a.ts: listed twice",
    ]


def test_examples_live_in_topic_folders() -> None:
    misplaced = [p.name for p in example_index.misplaced_examples()]
    assert misplaced == [], "move these into examples/<topic>/ (runner and site skip them)"


def test_every_example_has_a_page(built_site: Path) -> None:
    for example in example_index.example_files():
        page = example_index.page_path(example).removesuffix(".md") + ".html"
        assert (built_site / page).is_file(), page
