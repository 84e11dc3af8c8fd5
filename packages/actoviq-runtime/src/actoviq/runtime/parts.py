"""What one run execution needs from its runtime and its agent (internal wiring, no behaviour)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from actoviq.core import AgentSpec, HandoffRef, ModelRefParts, RunLimits, TextItem
from actoviq.events import (
    Clock,
    EventDispatcher,
    IdFactory,
    RandomIdFactory,
    RedactionPolicy,
    SystemClock,
)
from actoviq.providers import ModelOutputSchema, ModelRegistry, ModelToolDefinition
from actoviq.runtime.concurrency import RunGate, SessionLocks
from actoviq.runtime.handle import BufferPolicy
from actoviq.runtime.middleware import MiddlewarePipeline
from actoviq.runtime.run_ledger import RunLedger
from actoviq.runtime.services import RuntimeServices
from actoviq.runtime.stores import RunCheckpointStore
from actoviq.runtime.tools import ToolRegistry, ToolRunner

__all__ = ["AgentEntry", "RuntimeParts"]


@attrs.frozen(kw_only=True, slots=True)
class RuntimeParts:
    """The runtime-owned collaborators of every run."""

    runtime: Any  # the AgentRuntime, passed to middleware contexts (typed there as object)
    models: ModelRegistry
    tools: ToolRegistry
    runner: ToolRunner
    policy_configured: bool
    services: RuntimeServices
    dispatcher: EventDispatcher
    checkpoint_store: RunCheckpointStore | None
    session_locks: SessionLocks
    gate: RunGate
    ids: IdFactory
    clock: Clock
    default_model: str | ModelRefParts | None
    buffer_policy: BufferPolicy
    lease_ms: int
    ledger: RunLedger
    redaction: RedactionPolicy | None = None  # the built-in processor's (text scanning cuts deltas)
    unobserved_events: bool = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        # No sink, no processor but the built-in redaction (``EventDispatcher.observed``), the
        # default ids and clock (an injected one sees every event stamped): an event of a run
        # without a stream reaches nobody, so it is counted (its sequence) but never built.
        unobserved = (
            not self.dispatcher.observed
            and self.ids.__class__ is RandomIdFactory
            and self.clock.__class__ is SystemClock
        )
        object.__setattr__(self, "unobserved_events", unobserved)


@attrs.define(kw_only=True, slots=True)
class AgentEntry:
    """A registered agent: its spec, digest, composed middleware and cached per-agent values.

    ``limits`` caches ``limits_base.merged(spec.limits)`` (valid while the runtime's
    ``default_limits`` is still ``limits_base``); ``system_item`` is the system message of a static
    string instruction (items are immutable, so every run can share it); ``handoffs`` maps the
    tool name the model sees to each declared handoff.
    """

    spec: AgentSpec[Any, Any]
    digest: str
    pipeline: MiddlewarePipeline | None = None
    tool_names: frozenset[str] = frozenset()
    tool_order: tuple[str, ...] = ()
    tool_definitions: tuple[ModelToolDefinition, ...] | None = None
    output_schema: ModelOutputSchema | None = None
    output_validator: Callable[[object], None] | None = None
    limits_base: RunLimits | None = None
    limits: RunLimits | None = None
    system_item: TextItem | None = None
    handoffs: Mapping[str, HandoffRef] = attrs.field(factory=lambda: {})
