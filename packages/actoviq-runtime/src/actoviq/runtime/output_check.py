"""The verdict on one response's structured output (a leaf type shared by the run and its steps)."""

from __future__ import annotations

from typing import Any

import attrs

from actoviq.providers import ModelResponse

__all__ = ["OutputCheck"]


@attrs.frozen(slots=True)
class OutputCheck:
    """The verdict on one response: the parsed output, or the errors the model will see."""

    response: ModelResponse
    value: Any = None
    errors: tuple[str, ...] = ()
    missing: bool = False

    @property
    def valid(self) -> bool:
        """True when the output matched the schema and parsed."""
        return not self.errors
