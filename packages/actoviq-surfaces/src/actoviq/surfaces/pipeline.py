"""``LegacySurfaceEventPipeline``: legacy events → every surface target (spec 03 §6.7).

The migration path for products still fed by the 0.x ``AgentEvent`` stream: each product (a
terminal UI, a web page, a legacy bridge) builds one pipeline and asks for its own target.

Example:
    >>> pipeline = LegacySurfaceEventPipeline()
    >>> event = {"type": "response.text.delta", "runId": "r1", "timestamp": 0,
    ...          "iteration": 1, "delta": "hi", "snapshot": "hi"}
    >>> [s.type.value for s in pipeline.project_for(event, "tui")]
    ['text.delta']
    >>> pipeline.project_for(event, "tui")  # the same object again: a replay
    ()
"""

from __future__ import annotations

from actoviq.surfaces.legacy_adapter import LegacyAdapterOptions, LegacyAgentEventRunEventAdapter
from actoviq.surfaces.legacy_types import LegacyAgentEvent
from actoviq.surfaces.projector import ProjectorOptions
from actoviq.surfaces.shared import SharedRunEventSurfaceProjector
from actoviq.surfaces.types import (
    SharedSurfaceProjection,
    SurfaceSemanticEvent,
    SurfaceTarget,
    check_target,
)

__all__ = ["LegacySurfaceEventPipeline"]

_EMPTY = SharedSurfaceProjection()


class LegacySurfaceEventPipeline:
    """One legacy adapter feeding one shared projector.

    Args:
        legacy: options of the owned :class:`LegacyAgentEventRunEventAdapter`.
        projector: options of the owned :class:`SharedRunEventSurfaceProjector`.
    """

    def __init__(
        self,
        legacy: LegacyAdapterOptions | None = None,
        projector: ProjectorOptions | None = None,
    ) -> None:
        self.adapter = LegacyAgentEventRunEventAdapter(legacy)
        self.projector = SharedRunEventSurfaceProjector(projector)

    def project(self, event: LegacyAgentEvent) -> SharedSurfaceProjection:
        """Adapt and project one legacy event (an empty fan-out for a replay).

        Raises:
            LegacyEventError / LegacyEventIdentityCollisionError / LegacyRunContextError: the
                adapter refused the event.
            SurfaceError: the projector refused the adapted event.
        """
        adapted = self.adapter.adapt(event)
        return _EMPTY if adapted is None else self.projector.project(adapted)

    def project_for(
        self, event: LegacyAgentEvent, target: SurfaceTarget
    ) -> tuple[SurfaceSemanticEvent, ...]:
        """Adapt and project one legacy event for one target.

        Raises:
            SurfaceTargetError: ``target`` is not a surface target (checked first).
            LegacyEventError / SurfaceError: see :meth:`project`.
        """
        check_target(target)
        adapted = self.adapter.adapt(event)
        return () if adapted is None else self.projector.project_for(adapted, target)

    def reset(self) -> None:
        """Reset the adapter and the projector."""
        self.adapter.reset()
        self.projector.reset()
