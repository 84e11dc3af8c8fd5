"""The exit codes of the ``actoviq`` command (stable: scripts test them).

Imports nothing heavy: ``actoviq --help`` loads this module.
"""

from __future__ import annotations

import enum

__all__ = ["ExitCode"]


class ExitCode(enum.IntEnum):
    """What the process exit status of an ``actoviq`` command means.

    Attributes:
        OK: the command did what was asked.
        FAILED: the operation failed (a failed run, a verification with problems, a bug).
        USAGE: bad arguments or configuration (unknown agent, model, tool, missing key or extra).
        INTERRUPTED: the run waits for a decision; ``actoviq resume RUN_ID`` continues it.
        NOT_FOUND: the session, run or checkpoint named does not exist.
        REFUSED: refused to avoid doing something twice or over newer data (a stale or
            duplicate resume, a revision conflict).
        CANCELLED: cancelled by the user (Ctrl-C); the run's state was kept consistent.
    """

    OK = 0
    FAILED = 1
    USAGE = 2
    INTERRUPTED = 3
    NOT_FOUND = 4
    REFUSED = 5
    CANCELLED = 130
