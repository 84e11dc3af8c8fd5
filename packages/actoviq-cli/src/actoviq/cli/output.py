"""Where a command writes: JSON documents (``--json``) or styled text (``rich``), and errors.

With ``--json`` stdout carries only JSON: one document, or one document per line for streams
(NDJSON), each with a ``kind`` (schema: ``docs/schemas/cli-output.schema.json``). Without it,
text goes to stdout through a ``rich`` console (colours only on a terminal, ``NO_COLOR``
honoured) and notes to stderr. An error is always one line on stderr; with ``--json`` its
document is also written to stdout. ``rich`` is imported on first styled write only.
"""

from __future__ import annotations

import contextlib
import functools
import json
import sys
import traceback
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TextIO

from actoviq.cli.errors import error_document, exit_code_for, one_line
from actoviq.cli.exit_codes import ExitCode

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["Output", "dumps_line"]


def _escape(text: str, *, single_line: bool = False) -> str:
    """:func:`actoviq.surfaces.escape_terminal_controls`, imported on first use (start-up)."""
    from actoviq.surfaces import escape_terminal_controls as escape

    return escape(text, single_line=single_line)


def dumps_line(document: Mapping[str, Any]) -> str:
    """One compact JSON line (strict JSON: non-finite numbers are refused)."""
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n"


class Output:
    """One command's output channels.

    Args:
        json_mode: ``--json``.
        debug: ``--debug`` (tracebacks on errors).
        stdout: defaults to ``sys.stdout`` at construction time.
        stderr: defaults to ``sys.stderr`` at construction time.
    """

    def __init__(
        self,
        *,
        json_mode: bool = False,
        debug: bool = False,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
    ) -> None:
        self.json_mode = json_mode
        self.debug = debug
        self.stdout = stdout if stdout is not None else sys.stdout
        self.stderr = stderr if stderr is not None else sys.stderr
        self._console: Console | None = None
        self._err_console: Console | None = None

    # -- JSON --------------------------------------------------------------------------------

    def emit(self, document: Mapping[str, Any]) -> None:
        """Write one JSON document as a line and flush (a stream's consumer sees it at once)."""
        self.stdout.write(dumps_line(document))
        self.stdout.flush()

    # -- text --------------------------------------------------------------------------------

    @property
    def console(self) -> Console:
        """The rich console on stdout."""
        if self._console is None:
            from rich.console import Console

            self._console = Console(file=self.stdout, highlight=False, soft_wrap=True)
        return self._console

    @property
    def err_console(self) -> Console:
        """The rich console on stderr."""
        if self._err_console is None:
            from rich.console import Console

            self._err_console = Console(file=self.stderr, highlight=False, soft_wrap=True)
        return self._err_console

    @functools.cached_property
    def is_terminal(self) -> bool:
        """Whether stdout is a terminal (then model text is shown with controls escaped)."""
        isatty = getattr(self.stdout, "isatty", None)
        try:
            return bool(isatty()) if callable(isatty) else False
        except (OSError, ValueError):
            return False

    def write(self, text: str, style: str | None = None) -> None:
        """Write a text chunk to stdout as given (no markup), styled, without a newline.

        The chunks come from the terminal sink's renderer, which already shows control
        characters as visible escapes when stdout is a terminal (:attr:`is_terminal`).
        """
        if not text:
            return
        if style is None:
            self.stdout.write(text)
        else:
            from rich.text import Text

            self.console.print(Text(text, style=style), end="")
        self.stdout.flush()

    def print(self, renderable: Any = "", *, style: str | None = None) -> None:
        """Print a rich renderable (a table, a ``Text``) or a plain line to stdout.

        A plain line shows control characters as visible escapes on a terminal.
        """
        if isinstance(renderable, str) and self.is_terminal:
            renderable = _escape(renderable)
        self.console.print(renderable, style=style, markup=False)

    def note(self, text: str, style: str | None = "dim") -> None:
        """A line for the human on stderr (kept out of stdout, so pipes get only results).

        Control characters always show as visible escapes (stderr is for people).
        """
        from rich.text import Text

        self.err_console.print(Text(_escape(text), style=style or ""))

    # -- errors ------------------------------------------------------------------------------

    def fail(self, error: BaseException) -> ExitCode:
        """Report ``error`` (one line; a traceback with ``--debug``) and return its exit code."""
        if self.debug:
            traceback.print_exception(error, file=self.stderr)
        if self.json_mode:
            with contextlib.suppress(OSError, ValueError):  # stdout closed: stderr still says it
                self.emit(error_document(error))
        self.stderr.write(f"actoviq: {_escape(one_line(error), single_line=True)}\n")
        self.stderr.flush()
        return exit_code_for(error)
