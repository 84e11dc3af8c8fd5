"""The legacy event adapters of :mod:`actoviq.surfaces`, as compat symbols (spec 04 §5.2 item 5).

The reference's ``/compat`` re-exports its surfaces module; here the three classes are
subclasses of the :mod:`actoviq.surfaces` ones that only record their use in the compat
diagnostics (one mapping, never a second one):

* :class:`LegacyAgentEventRunEventAdapter`: legacy ``AgentEvent`` s → versioned ``RunEvent`` s
  (per-run sequence, replay deduplication, signatures dropped);
* :class:`RunEventLegacyCompatAdapter`: ``RunEvent`` s → legacy ``AgentEvent`` s (what
  ``AgentClient.stream`` uses);
* :class:`LegacySurfaceEventPipeline`: legacy events → the shared surface projections.
"""

from __future__ import annotations

from actoviq import surfaces as _surfaces
from actoviq.compat.diagnostics import compat_symbol

__all__ = [
    "LegacyAgentEventRunEventAdapter",
    "LegacySurfaceEventPipeline",
    "RunEventLegacyCompatAdapter",
]


@compat_symbol(
    "LegacyAgentEventRunEventAdapter",
    "RunEvents from AgentRuntime.stream, or actoviq.surfaces.LegacyAgentEventRunEventAdapter for "
    "stored 0.x events",
)
class LegacyAgentEventRunEventAdapter(_surfaces.LegacyAgentEventRunEventAdapter):
    """Legacy ``AgentEvent`` s → ``RunEvent`` s.

    See :class:`actoviq.surfaces.LegacyAgentEventRunEventAdapter`.

    Example:
        >>> adapter = LegacyAgentEventRunEventAdapter()  # doctest: +SKIP
        >>> run_event = adapter.adapt({"type": "run.started", ...})  # doctest: +SKIP
    """


@compat_symbol(
    "RunEventLegacyCompatAdapter",
    "RunEvents (actoviq.events) consumed directly, e.g. through actoviq.surfaces projectors",
)
class RunEventLegacyCompatAdapter(_surfaces.RunEventLegacyCompatAdapter):
    """``RunEvent`` s → legacy ``AgentEvent`` s.

    See :class:`actoviq.surfaces.RunEventLegacyCompatAdapter`.

    Example:
        >>> adapter = RunEventLegacyCompatAdapter()  # doctest: +SKIP
        >>> legacy_events = adapter.adapt(run_event)  # doctest: +SKIP
    """


@compat_symbol(
    "LegacySurfaceEventPipeline",
    "actoviq.surfaces.SharedRunEventSurfaceProjector fed with RunEvents",
)
class LegacySurfaceEventPipeline(_surfaces.LegacySurfaceEventPipeline):
    """Legacy ``AgentEvent`` s → the shared CLI/TUI/GUI/bridge projections.

    See :class:`actoviq.surfaces.LegacySurfaceEventPipeline`.

    Example:
        >>> pipeline = LegacySurfaceEventPipeline()  # doctest: +SKIP
        >>> projection = pipeline.project(legacy_event)  # doctest: +SKIP
    """
