"""One projection, one independent copy per renderer (spec 03 §6.4).

Example:
    >>> from actoviq.events import RunEventSequencer, create_root_trace_context
    >>> sequencer = RunEventSequencer(create_root_trace_context("run-1"))
    >>> shared = SharedRunEventSurfaceProjector()
    >>> fan = shared.project(sequencer.next("run.started", {"agentId": "a"}))
    >>> fan.cli == fan.gui, fan.cli[0] is fan.gui[0], fan.cli[0].data is fan.gui[0].data
    (True, False, False)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

from actoviq.core import JsonObject, JsonValue
from actoviq.events import RunEvent
from actoviq.surfaces.projector import ProjectorOptions, RunEventSemanticProjector
from actoviq.surfaces.types import (
    SharedSurfaceProjection,
    SurfaceSemanticEvent,
    SurfaceTarget,
    check_target,
)

__all__ = [
    "SharedRunEventSurfaceProjector",
    "clone_semantic",
    "clone_semantics",
    "fan_out_surface_semantics",
]


def _clone(value: Any) -> Any:
    kind = value.__class__
    if kind is dict:
        return {key: _clone(child) for key, child in value.items()}
    if kind is list:
        return [_clone(child) for child in value]
    return value  # str, int, float, bool, None: immutable


def clone_semantic(event: SurfaceSemanticEvent) -> SurfaceSemanticEvent:
    """A copy of ``event`` whose ``data`` shares no container with the original."""
    return event.with_data(cast(JsonObject, _clone(event.data)))


def clone_semantics(events: Iterable[SurfaceSemanticEvent]) -> tuple[SurfaceSemanticEvent, ...]:
    """Independent copies of several events."""
    return tuple(clone_semantic(event) for event in events)


def fan_out_surface_semantics(events: Iterable[SurfaceSemanticEvent]) -> SharedSurfaceProjection:
    """Copy ``events`` once into ``semantics`` and once more for each target."""
    semantics = clone_semantics(events)
    return SharedSurfaceProjection(
        semantics=semantics,
        cli=clone_semantics(semantics),
        tui=clone_semantics(semantics),
        gui=clone_semantics(semantics),
        bridge=clone_semantics(semantics),
    )


_EMPTY = SharedSurfaceProjection()


class SharedRunEventSurfaceProjector:
    """Wraps exactly one :class:`RunEventSemanticProjector` and fans its output out.

    Args:
        options: the projector options (or pass ``projector``).
        projector: an existing projector to wrap (its state is shared, not copied).
    """

    __slots__ = ("_projector",)

    def __init__(
        self,
        options: ProjectorOptions | None = None,
        *,
        projector: RunEventSemanticProjector | None = None,
    ) -> None:
        self._projector = projector if projector is not None else RunEventSemanticProjector(options)

    @property
    def projector(self) -> RunEventSemanticProjector:
        """The one state machine behind every target."""
        return self._projector

    def project(self, event: RunEvent) -> SharedSurfaceProjection:
        """Project ``event`` once and copy the result for every target (empty on replay).

        Raises:
            SurfaceError: see :meth:`RunEventSemanticProjector.project`.
        """
        semantics = self._projector.project(event)
        return fan_out_surface_semantics(semantics) if semantics else _EMPTY

    def project_for(
        self, event: RunEvent, target: SurfaceTarget
    ) -> tuple[SurfaceSemanticEvent, ...]:
        """Project ``event`` and return only ``target``'s copy (cheaper than :meth:`project`).

        Raises:
            SurfaceTargetError: ``target`` is not a surface target.
            SurfaceError: see :meth:`RunEventSemanticProjector.project`.
        """
        check_target(target)
        return clone_semantics(self._projector.project(event))

    def reset(self) -> None:
        """Reset the wrapped projector."""
        self._projector.reset()


def json_clone(value: JsonValue) -> JsonValue:
    """A deep copy of a strict-JSON value (dicts and lists copied, scalars shared)."""
    return cast(JsonValue, _clone(value))
