"""Check every internal link of a built MkDocs site (``make docs``; the docs tests run it too).

Every ``href``/``src`` of every HTML page that is not external (no scheme, not ``//host``) must
point to a file of the site, and a ``#fragment`` must name an ``id`` in the target page. External
links are not fetched (no network). Exit status 1 lists the broken links.

Usage: python tools/check_site_links.py site
"""

from __future__ import annotations

import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class _PageParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name == "id" or (name == "name" and tag == "a"):
                self.ids.add(value)
            elif (name == "href" and tag in {"a", "link"}) or (
                name == "src" and tag in {"img", "script", "source"}
            ):
                self.links.append(value)


def _parse(page: Path) -> _PageParser:
    parser = _PageParser()
    parser.feed(page.read_text("utf-8", errors="replace"))
    return parser


def _target(site: Path, page: Path, path: str) -> Path:
    base = page.parent if path and not path.startswith("/") else site
    resolved = (base / unquote(path.lstrip("/"))).resolve() if path else page
    if resolved.is_dir():
        resolved = resolved / "index.html"
    return resolved


def broken_links(site: Path) -> list[str]:
    """Every broken internal link of the site under ``site``, as ``page: link (reason)``."""
    site = site.resolve()
    pages = sorted(site.rglob("*.html"))
    parsed = {page: _parse(page) for page in pages}
    broken: list[str] = []
    for page, parser in parsed.items():
        for link in parser.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "javascript:")):
                continue
            target = _target(site, page, parts.path)
            where = f"{page.relative_to(site).as_posix()}: {link}"
            if not target.is_relative_to(site):
                broken.append(f"{where} (outside the site)")
                continue
            if not target.is_file():
                broken.append(f"{where} (no such file)")
                continue
            fragment = unquote(parts.fragment)
            if fragment and target.suffix == ".html":
                ids = parsed[target].ids if target in parsed else _parse(target).ids
                if fragment not in ids:
                    broken.append(f"{where} (no anchor #{fragment})")
    return broken


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    site = Path(sys.argv[1])
    if not (site / "index.html").is_file():
        print(f"{site} is not a built site (no index.html)")
        return 2
    broken = broken_links(site)
    for line in broken:
        print(f"broken link: {line}")
    pages = len(list(site.rglob("*.html")))
    print(f"links: {pages} pages checked, {len(broken)} broken internal links")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
