"""The twelve middleware stages, in their fixed order (spec 03 §3.1; part of the 1.0 contract).

Example:
    >>> middleware_stage_index("beforeRun")
    1
    >>> is_middleware_stage("bad")
    False
"""

from __future__ import annotations

import enum
from typing import Final

from actoviq.runtime.middleware.errors import UnknownMiddlewareStageError

__all__ = [
    "MIDDLEWARE_STAGE_ORDER",
    "MiddlewareStage",
    "as_middleware_stage",
    "is_middleware_stage",
    "middleware_stage_index",
]


class MiddlewareStage(enum.StrEnum):
    """A middleware stage; the values are the reference camelCase names."""

    PREPARE_INPUT = "prepareInput"
    BEFORE_RUN = "beforeRun"
    WRAP_MODEL_CALL = "wrapModelCall"
    AFTER_MODEL_RESPONSE = "afterModelResponse"
    BEFORE_TOOL_CALL = "beforeToolCall"
    WRAP_TOOL_CALL = "wrapToolCall"
    AFTER_TOOL_CALL = "afterToolCall"
    BEFORE_HANDOFF = "beforeHandoff"
    AFTER_TURN = "afterTurn"
    FINALIZE_OUTPUT = "finalizeOutput"
    AFTER_RUN = "afterRun"
    ON_ERROR = "onError"


MIDDLEWARE_STAGE_ORDER: Final[tuple[MiddlewareStage, ...]] = tuple(MiddlewareStage)
"""The middleware stages in the order a run passes through them."""
_INDEX: Final[dict[str, int]] = {stage.value: index for index, stage in enumerate(MiddlewareStage)}


def is_middleware_stage(value: object) -> bool:
    """True only for the twelve stage names (or members)."""
    return isinstance(value, str) and value in _INDEX


def as_middleware_stage(value: object) -> MiddlewareStage:
    """The :class:`MiddlewareStage` for ``value``.

    Raises:
        UnknownMiddlewareStageError: ``value`` is not a stage name.
    """
    if isinstance(value, MiddlewareStage):
        return value
    if isinstance(value, str) and value in _INDEX:
        return MiddlewareStage(value)
    raise UnknownMiddlewareStageError(f"Unknown middleware stage: {value}.")


def middleware_stage_index(stage: object) -> int:
    """The position of ``stage`` in :data:`MIDDLEWARE_STAGE_ORDER`.

    Raises:
        UnknownMiddlewareStageError: ``stage`` is not a stage name.
    """
    return _INDEX[as_middleware_stage(stage).value]
