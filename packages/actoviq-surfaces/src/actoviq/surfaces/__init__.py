"""actoviq.surfaces: product-neutral semantic events for every host that renders a run.

A terminal, a full-screen TUI, a web page and an IDE bridge all render one stream of
:class:`SurfaceSemanticEvent` s instead of parsing raw ``RunEvent`` s: text and reasoning
snapshots per model call, tool input rebuilt from streamed arguments, approvals, errors and
usage, all redacted with the surface mode of the one engine of ``actoviq.events``.

Example:
    >>> from actoviq.events import RunEventSequencer, create_root_trace_context
    >>> sequencer = RunEventSequencer(create_root_trace_context("run-1"))
    >>> projector = RunEventSemanticProjector()
    >>> semantics = projector.project_many([
    ...     sequencer.next("model.text.delta", {"delta": "Use Bearer abc.def"}),
    ...     sequencer.next("run.completed", {"status": "completed", "usage": {"requests": 1}}),
    ... ])
    >>> print("".join(render_text(semantics)), end="")
    Use Bearer [REDACTED]
    [usage] 1 request
"""

from actoviq.surfaces.bridge import AgentRuntimeBridgeAdapter, BridgeRuntime, BridgeStream
from actoviq.surfaces.errors import (
    LegacyEventError,
    LegacyEventIdentityCollisionError,
    LegacyRunContextError,
    SurfaceError,
    SurfaceEventIdentityCollisionError,
    SurfaceEventSchemaVersionError,
    SurfaceEventSequenceError,
    SurfaceEventTraceError,
    SurfaceEventValidationError,
    SurfaceTargetError,
)
from actoviq.surfaces.identity import (
    DEFAULT_DEDUPE_WINDOW_SIZE,
    IdentityWindow,
    fingerprint,
    stable_serialize,
)
from actoviq.surfaces.legacy_adapter import LegacyAdapterOptions, LegacyAgentEventRunEventAdapter
from actoviq.surfaces.legacy_compat import (
    LegacyCompatReport,
    LegacyOmission,
    RunEventLegacyCompatAdapter,
    surface_semantic_to_legacy_agent_event,
)
from actoviq.surfaces.legacy_types import (
    LEGACY_AGENT_EVENT_TYPES,
    LEGACY_ENVELOPE_KEYS,
    LegacyAgentEvent,
    legacy_run_event_payload,
)
from actoviq.surfaces.pipeline import LegacySurfaceEventPipeline
from actoviq.surfaces.projector import (
    DEFAULT_MAX_RUNS,
    DEFAULT_MAX_SNAPSHOT_CHARS,
    ProjectorOptions,
    RunEventSemanticProjector,
)
from actoviq.surfaces.redaction import (
    SurfaceRedaction,
    redact_surface_text,
    redact_surface_value,
    surface_redactor,
)
from actoviq.surfaces.render import (
    APPROVAL_MARKER,
    TextRenderer,
    TextRenderOptions,
    arender_text,
    escape_terminal_controls,
    render_text,
)
from actoviq.surfaces.schema import surface_semantic_event_json_schema
from actoviq.surfaces.shared import (
    SharedRunEventSurfaceProjector,
    clone_semantic,
    clone_semantics,
    fan_out_surface_semantics,
)
from actoviq.surfaces.types import (
    SEMANTIC_VERSION,
    SURFACE_TARGETS,
    SharedSurfaceProjection,
    SurfaceSemanticCategory,
    SurfaceSemanticEvent,
    SurfaceSemanticType,
    SurfaceTarget,
    check_target,
    surface_event_from_json,
    surface_event_to_json,
    surface_events_to_json,
)

__all__ = [
    "APPROVAL_MARKER",
    "DEFAULT_DEDUPE_WINDOW_SIZE",
    "DEFAULT_MAX_RUNS",
    "DEFAULT_MAX_SNAPSHOT_CHARS",
    "LEGACY_AGENT_EVENT_TYPES",
    "LEGACY_ENVELOPE_KEYS",
    "SEMANTIC_VERSION",
    "SURFACE_TARGETS",
    "AgentRuntimeBridgeAdapter",
    "BridgeRuntime",
    "BridgeStream",
    "IdentityWindow",
    "LegacyAdapterOptions",
    "LegacyAgentEvent",
    "LegacyAgentEventRunEventAdapter",
    "LegacyCompatReport",
    "LegacyEventError",
    "LegacyEventIdentityCollisionError",
    "LegacyOmission",
    "LegacyRunContextError",
    "LegacySurfaceEventPipeline",
    "ProjectorOptions",
    "RunEventLegacyCompatAdapter",
    "RunEventSemanticProjector",
    "SharedRunEventSurfaceProjector",
    "SharedSurfaceProjection",
    "SurfaceError",
    "SurfaceEventIdentityCollisionError",
    "SurfaceEventSchemaVersionError",
    "SurfaceEventSequenceError",
    "SurfaceEventTraceError",
    "SurfaceEventValidationError",
    "SurfaceRedaction",
    "SurfaceSemanticCategory",
    "SurfaceSemanticEvent",
    "SurfaceSemanticType",
    "SurfaceTarget",
    "SurfaceTargetError",
    "TextRenderOptions",
    "TextRenderer",
    "arender_text",
    "check_target",
    "clone_semantic",
    "clone_semantics",
    "escape_terminal_controls",
    "fan_out_surface_semantics",
    "fingerprint",
    "legacy_run_event_payload",
    "redact_surface_text",
    "redact_surface_value",
    "render_text",
    "stable_serialize",
    "surface_event_from_json",
    "surface_event_to_json",
    "surface_events_to_json",
    "surface_redactor",
    "surface_semantic_event_json_schema",
    "surface_semantic_to_legacy_agent_event",
]
