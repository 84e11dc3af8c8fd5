"""docs/newcomers.md stays honest (issue 14 "done when").

The page compares the three newcomer programs with their openai-agents equivalents by line count.
These tests recount every code block (code lines only: no blank lines, comments or docstrings)
and compare the table with the count, and check that each Actoviq block is the shipped example
(``examples/<topic>/*.py``) without its offline ``models()`` helper, so neither the figures nor
the code can drift from what ``make examples`` runs and ``make typecheck`` checks.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "newcomers.md"
EXAMPLES = ROOT / "examples"
TABLE_ROW = re.compile(
    r"^\| (?P<name>[^|]+?) \| (?P<ours>\d+) \(`examples/(?P<file>[\w/]+\.py)`\) "
    r"\| (?P<peer>\d+) \|$"
)
_NOT_CODE = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENCODING,
    tokenize.ENDMARKER,
}


def code_lines(source: str) -> int:
    """Lines holding code: not blank, not only a comment, not part of a docstring."""
    docstrings: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                docstrings.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in _NOT_CODE:
            lines.update(range(token.start[0], token.end[0] + 1))
    return len(lines - docstrings)


def page_sections() -> list[tuple[str, str, int, int, str, str]]:
    """(program, example file, our figure, peer figure, our block, peer block) per table row."""
    text = PAGE.read_text("utf-8")
    rows = [m for line in text.splitlines() if (m := TABLE_ROW.match(line))]
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(rows) == 3, "the table lists the three newcomer programs"
    assert len(blocks) == 2 * len(rows), "each program has an Actoviq and an openai-agents block"
    return [
        (
            row["name"],
            row["file"],
            int(row["ours"]),
            int(row["peer"]),
            blocks[2 * index],
            blocks[2 * index + 1],
        )
        for index, row in enumerate(rows)
    ]


def test_the_counter_skips_blank_lines_comments_and_docstrings() -> None:
    source = '"""Module doc\nover two lines."""\n\nimport os  # a comment\n\n# only a comment\n'
    source += 'def f(\n    x: int,\n) -> int:\n    """Doc."""\n    return x\n'
    assert code_lines(source) == 5  # import, the three lines of the signature, return


@pytest.mark.parametrize("section", page_sections(), ids=lambda section: section[1])
def test_the_table_counts_the_blocks_on_the_page(
    section: tuple[str, str, int, int, str, str],
) -> None:
    name, _, ours, peer, our_block, peer_block = section
    assert (code_lines(our_block), code_lines(peer_block)) == (ours, peer), name


@pytest.mark.parametrize("section", page_sections(), ids=lambda section: section[1])
def test_each_actoviq_block_is_the_shipped_example_without_its_offline_helper(
    section: tuple[str, str, int, int, str, str],
) -> None:
    _, file, _, _, our_block, _ = section
    example = (EXAMPLES / file).read_text("utf-8")
    # what the offline helper adds to the program's own lines
    offline_only = ("models=models(), ", ", models=models()", "models=models()", "OFFLINE or ")
    for piece in offline_only:
        example = example.replace(piece, "")
    example_lines = [line for line in example.splitlines() if line.strip()]
    position = 0
    for line in (line for line in our_block.splitlines() if line.strip()):
        assert line in example_lines[position:], f"{file}: {line!r} is not in the example"
        position = example_lines.index(line, position) + 1
    program = example.split("# --- the program ---", 1)[1]
    program_code = [line for line in program.splitlines()[1:] if line.strip()]
    block_code = [line for line in our_block.splitlines() if line.strip()]
    assert block_code[-len(program_code) :] == program_code, f"{file}: the program differs"
