"""``module:attribute`` references: agents, tools, middleware and provider factories in user code.

The project folder (the configuration file's folder) and the working directory are put on
``sys.path`` first, so ``myapp.tools:lookup`` imports the project's own module as ``python -m``
would. A failure is a :class:`CliReferenceError` that says which reference and why.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from actoviq.cli.errors import CliReferenceError

__all__ = ["is_reference", "load_reference"]


def is_reference(text: str) -> bool:
    """Whether ``text`` looks like ``module:attribute`` (not a plain name or a model ref)."""
    module, sep, attribute = text.partition(":")
    return bool(sep and module and attribute) and all(
        part.isidentifier() for part in (*module.split("."), *attribute.split("."))
    )


def _extend_path(roots: tuple[Path, ...]) -> None:
    for root in reversed(roots):
        entry = str(root)
        if entry not in sys.path:
            sys.path.insert(0, entry)


def load_reference(reference: str, what: str, *, roots: tuple[Path, ...] = ()) -> object:
    """Import ``module`` and return ``attribute`` (dotted attributes are followed).

    Args:
        reference: ``"package.module:attribute"``.
        what: what the reference should be, for messages (``"agent"``, ``"tool"``).
        roots: folders to import from first (the project folder).

    Raises:
        CliReferenceError: a malformed reference, an import error, a missing attribute.
    """
    if not is_reference(reference):
        raise CliReferenceError(
            f"{what} reference {reference!r} must look like 'package.module:attribute'.",
            details={"reference": reference},
        )
    module_name, _, attribute = reference.partition(":")
    _extend_path(roots)
    try:
        value: object = importlib.import_module(module_name)
    except Exception as error:
        raise CliReferenceError(
            f"Cannot import {module_name!r} for {what} {reference!r}: "
            f"{type(error).__name__}: {error}",
            details={"reference": reference},
        ) from error
    for part in attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise CliReferenceError(
                f"{what} reference {reference!r}: {module_name!r} has no attribute {attribute!r}.",
                details={"reference": reference},
            ) from None
    return value
