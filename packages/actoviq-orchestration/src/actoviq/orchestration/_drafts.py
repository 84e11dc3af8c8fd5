"""Frozen attrs objects filled as mutable drafts, then switched to their class (internal).

attrs' frozen constructor stores each field through ``object.__setattr__``, a separate call per
field. The orchestration's per-child objects (scope, outcome, node context) are instead filled
into a plain twin class with the same slots and then given the frozen class by ``__class__``
assignment. :func:`check_draft` runs at import: it refuses a frozen class that gained what a
draft would skip (a validator, a converter, a post-init hook, an instance dict) or whose layout
no longer accepts the assignment, so a change to the class fails loudly instead of building
unchecked objects.
"""

from __future__ import annotations

from typing import Any

import attrs

__all__ = ["check_draft"]


def check_draft(frozen: type[Any], draft: type[Any]) -> None:
    """Raise TypeError unless instances of ``draft`` can become instances of ``frozen``."""
    if (
        hasattr(frozen, "__attrs_post_init__")
        or any(field.validator or field.converter for field in attrs.fields(frozen))
        or frozen.__dictoffset__
    ):
        raise TypeError(f"{frozen.__name__} can no longer be built from {draft.__name__}.")
    draft().__class__ = frozen
