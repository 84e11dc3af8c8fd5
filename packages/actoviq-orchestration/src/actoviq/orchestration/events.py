"""Orchestration events in the parent's trace (issue 15 point 10).

Child runs adopt their scope's trace verbatim (same trace id, their own span, the parent's span as
parent), so every run of a tree lands in one OpenTelemetry trace. On top, each primitive emits
``RunEvent``s *in the parent*: when the parent is a run executing on the runtime (a manager whose
agent tool starts a child), the event joins that run's own sequence and stream; when the parent
is an orchestration root opened with :meth:`ChildRunner.open_root
<actoviq.orchestration.child_runner.ChildRunner.open_root>` (no agent run of its own), it goes
to the root's emitter, which ``orchestration.completed`` (terminal) closes. A parent that is
neither (a finished run, e.g. the source of a handoff) passes the event to its nearest live
ancestor.

Types (all registered with :func:`actoviq.events.register_event_type`):

* ``orchestration.started`` / ``orchestration.completed`` — an orchestration root opened/closed.
* ``orchestration.child.started`` — ``{childRunId, parentRunId, agentId, depth, attempt,
  sessionMode}``.
* ``orchestration.child.completed`` — ``{childRunId, parentRunId, agentId, status, attempts}``
  (status ``completed``, ``interrupted`` or ``cancelled``).
* ``orchestration.child.failed`` — ``{childRunId, parentRunId, agentId, attempts, error}``.
* ``orchestration.handoff.started`` / ``orchestration.handoff.completed`` — ``{handoffId,
  fromAgentId, toAgentId, fromRunId, toRunId, status?}``.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from actoviq.core import JsonObject
from actoviq.events import EventEmitter, register_event_type

if TYPE_CHECKING:
    from actoviq.runtime import AgentRuntime

__all__ = ["ORCHESTRATION_EVENT_TYPES", "ScopeEvents"]

ORCHESTRATION_EVENT_TYPES: Final = (
    "orchestration.started",
    "orchestration.completed",
    "orchestration.child.started",
    "orchestration.child.completed",
    "orchestration.child.failed",
    "orchestration.handoff.started",
    "orchestration.handoff.completed",
)
"""Every event type orchestration emits."""

_SHARED: weakref.WeakValueDictionary[int, ScopeEvents] = weakref.WeakValueDictionary()

for _name in ORCHESTRATION_EVENT_TYPES:
    register_event_type(
        _name,
        terminal=_name == "orchestration.completed",
        description="Actoviq orchestration (actoviq.orchestration.events).",
    )


class ScopeEvents:
    """Routes orchestration events to the run that is their parent (see the module doc).

    One instance serves a runtime (:meth:`for_runtime`): every ``ChildRunner`` on it shares the
    opened roots, and code that only holds a scope (a workflow graph) finds it with :meth:`find`.
    """

    def __init__(self, runtime: AgentRuntime) -> None:
        self._runtime = runtime
        self._roots: dict[str, EventEmitter] = {}

    @classmethod
    def for_runtime(cls, runtime: AgentRuntime) -> ScopeEvents:
        """The instance of ``runtime`` (created on first use, kept while a runner holds it)."""
        services = runtime.services
        found = _SHARED.get(id(services))
        if found is not None and found._runtime is runtime:
            return found
        events = cls(runtime)
        _SHARED[id(services)] = events
        return events

    @staticmethod
    def find(services: object) -> ScopeEvents | None:
        """The instance of the runtime whose service container is ``services``, if any."""
        found = _SHARED.get(id(services))
        if found is not None and found._runtime.services is services:
            return found
        return None

    def attach_root(self, run_id: str, emitter: EventEmitter) -> None:
        """Send events of ``run_id`` (an orchestration root) to ``emitter``."""
        self._roots[run_id] = emitter

    def detach_root(self, run_id: str) -> None:
        """Stop routing ``run_id`` to its emitter."""
        self._roots.pop(run_id, None)

    def routes(self, run_id: str, ancestors: Sequence[str] = ()) -> bool:
        """Whether an event of ``run_id`` (or its nearest live ancestor) has somewhere to go."""
        runtime = self._runtime
        roots = self._roots
        for candidate in (run_id, *ancestors):
            if candidate in roots or runtime.is_run_active(candidate):
                return True
        return False

    async def emit(
        self, run_id: str, type: str, data: JsonObject, *, ancestors: Sequence[str] = ()
    ) -> bool:
        """Emit ``type`` in run ``run_id``, else in its nearest live ancestor.

        ``ancestors`` are root first; the nearest that is a live run or an opened root gets the
        event. Returns False when none is.
        """
        for candidate in (run_id, *reversed(ancestors)):
            if await self._runtime.emit_run_event(candidate, type, data):
                return True
            emitter = self._roots.get(candidate)
            if emitter is not None:
                await emitter.emit(type, data)
                return True
        return False
