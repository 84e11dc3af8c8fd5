"""``Invocation``: the global options of one command invocation.

Its own module so the command implementations (``actoviq.cli.cmd_*``), which ``app`` imports when
a command runs, can name it without importing ``app`` back (the package's modules form a DAG).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Invocation"]


@dataclass(frozen=True, slots=True)
class Invocation:
    """The global options of one command invocation."""

    config: str | None
    db: str | None
    json_mode: bool
    debug: bool
