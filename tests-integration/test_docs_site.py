"""The documentation site: strict build, API reference coverage, docstrings, internal links.

The site is built once per module with ``mkdocs build --strict`` (a warning, a broken link or an
unresolvable reference fails it) into a temporary folder; every public name (``__all__``) of every
wheel must have a docstring and an entry in the built inventory (``objects.inv``), and every
internal link of the built HTML must resolve.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zlib
from pathlib import Path

import api_inventory
import check_site_links
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


def test_every_wheel_has_a_reference_page(built_site: Path) -> None:
    wheels = api_inventory.wheels()
    assert len(wheels) >= 6
    for wheel in wheels:
        assert (built_site / "reference" / wheel.slug / "index.html").is_file(), wheel.dist


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
