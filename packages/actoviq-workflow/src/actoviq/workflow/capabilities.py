"""Capability names, handler maps and the host side of a capability call (spec 04 §2.4).

Calling a capability is not an authorisation mechanism: the handler must apply its own tenant,
workspace and policy checks. This module only guarantees that a script reaches nothing but the
handlers granted to its run, and that values crossing the boundary are cloned strict JSON within
the message limit.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Iterable, Mapping
from typing import Final

from actoviq.core import AbortSignal, JsonValue, assert_json_value, dumps_compact
from actoviq.workflow.errors import (
    WorkflowAbortedError,
    WorkflowCapabilityNotAllowedError,
    WorkflowConfigurationError,
    WorkflowMessageLimitError,
)
from actoviq.workflow.types import CapabilityCallContext, CapabilityHandler

__all__ = [
    "CAPABILITY_NAME_PATTERN",
    "clone_json_within",
    "invoke_capability",
    "resolve_capability_handlers",
    "resolve_requested_capabilities",
    "validate_capability_name",
]

CAPABILITY_NAME_PATTERN: Final = re.compile(r"^[A-Za-z][A-Za-z0-9_.:-]{0,127}\Z")
"""The pattern a host capability name must match."""
_RESERVED: Final = frozenset({"constructor", "prototype", "__proto__"})


def validate_capability_name(name: object) -> str:
    """Return ``name`` if it is a valid capability name.

    Raises:
        WorkflowConfigurationError: ``"Invalid workflow capability name: X."``.
    """
    if not isinstance(name, str) or name in _RESERVED or not CAPABILITY_NAME_PATTERN.match(name):
        raise WorkflowConfigurationError(f"Invalid workflow capability name: {name}.")
    return name


def resolve_capability_handlers(
    handlers: Mapping[str, CapabilityHandler] | None,
) -> dict[str, CapabilityHandler]:
    """Validate an executor's configured handler map (names and callability)."""
    if handlers is not None and not isinstance(handlers, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise WorkflowConfigurationError("capabilities must map capability names to handlers.")
    resolved: dict[str, CapabilityHandler] = {}
    for name, handler in (handlers or {}).items():
        validate_capability_name(name)
        if not callable(handler):
            raise WorkflowConfigurationError(f"Workflow capability {name} must be callable.")
        resolved[name] = handler
    return resolved


def resolve_requested_capabilities(
    requested: Iterable[str], configured: Mapping[str, CapabilityHandler]
) -> tuple[str, ...]:
    """Check a run's requested names against the configured ones; return them deduplicated, sorted.

    Raises:
        WorkflowConfigurationError: an invalid name.
        WorkflowCapabilityNotAllowedError: a valid name that is not configured.
    """
    names: set[str] = set()
    for name in requested:
        validate_capability_name(name)
        if name not in configured:
            raise WorkflowCapabilityNotAllowedError(name)
        names.add(name)
    return tuple(sorted(names))


def clone_json_within(value: object, *, limit: int, label: str) -> JsonValue:
    """Validate ``value`` as strict JSON and deep-copy it, refusing more than ``limit`` bytes.

    Raises:
        JsonValueError: not a finite, acyclic strict JSON value.
        WorkflowMessageLimitError: the compact UTF-8 encoding is larger than ``limit``.
    """
    checked = assert_json_value(value, label)
    encoded = dumps_compact(checked).encode("utf-8")
    if len(encoded) > limit:
        raise WorkflowMessageLimitError(label, limit)
    return json.loads(encoded)


async def invoke_capability(
    handler: CapabilityHandler,
    value: JsonValue,
    *,
    context: CapabilityCallContext,
    signal: AbortSignal,
    max_message_bytes: int,
) -> JsonValue:
    """Call one handler with a cloned input and return its cloned output.

    The signal is checked before the call and after it returns (spec 04 §2.4).

    Raises:
        WorkflowAbortedError: the signal fired.
        WorkflowMessageLimitError: the input or output is larger than ``max_message_bytes``.
        JsonValueError: the handler returned a non-JSON value.
    """
    if signal.aborted:
        raise WorkflowAbortedError(signal.reason)
    argument = clone_json_within(
        value, limit=max_message_bytes, label=f"Workflow capability {context.name} input"
    )
    outcome = handler(argument, context)
    if inspect.isawaitable(outcome):
        outcome = await outcome
    if signal.aborted:
        raise WorkflowAbortedError(signal.reason)
    return clone_json_within(
        outcome, limit=max_message_bytes, label=f"Workflow capability {context.name} output"
    )
