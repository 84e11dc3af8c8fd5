"""The ``actoviq`` console script (``python -m actoviq.cli`` too)."""

from __future__ import annotations

__all__ = ["main"]


def main() -> None:
    """Run the ``actoviq`` command line on ``sys.argv`` and exit with its status."""
    from actoviq.cli.app import cli

    cli.main(prog_name="actoviq")
