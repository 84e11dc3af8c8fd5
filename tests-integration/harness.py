"""The ADR-001 release-gate registry.

Every canonical item type must pass, in every package that handles items:
  * JSON round-trip (core, always);
  * provider mapping: mapped by every adapter, every field under the adapter's documented key
    (``wire_shapes``), or refused with a typed unsupported/capability error before any network
    call;
  * persistence round-trip through every store;
  * redaction: a secret in a sensitive key never survives.

Packages plug in from ``tests-integration/plugins/<package>.py`` by calling the ``register_*``
functions at import time. ``test_release_gate.py`` imports every plugin and runs every check
against every item type, so the gate is one command:
``uv run python -m pytest tests-integration``.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from wire_shapes import WireShapes

from actoviq.core import CanonicalItem

ProviderMapper = Callable[[Sequence[CanonicalItem]], Awaitable[Any]]
"""Build the provider request body for a transcript (no network). Returns the body (JSON);
raises ``CapabilityError``/``UnsupportedItemError`` for items it does not map."""

PersistenceRoundTrip = Callable[[Sequence[CanonicalItem]], Awaitable[Sequence[CanonicalItem]]]
"""Write a transcript to a store and read it back."""

RedactionCheck = Callable[[CanonicalItem, str], Awaitable[Any]]
"""Put the item (carrying the secret under a sensitive key in its metadata) through the redaction
path and return what would be delivered (JSON); the gate asserts the secret is absent."""


@dataclass
class Registry:
    """What the plugins registered."""

    provider_mappers: dict[str, ProviderMapper] = field(default_factory=lambda: {})
    provider_shapes: dict[str, WireShapes] = field(default_factory=lambda: {})
    persistence: dict[str, PersistenceRoundTrip] = field(default_factory=lambda: {})
    redaction: dict[str, RedactionCheck] = field(default_factory=lambda: {})


REGISTRY = Registry()


def _add(table: dict[str, Any], name: str, fn: Any) -> None:
    if name in table:
        raise ValueError(f"release-gate check {name!r} registered twice")
    table[name] = fn


def register_provider_mapping(name: str, mapper: ProviderMapper, shapes: WireShapes) -> None:
    """Register one adapter's request mapper (e.g. ``"openai-responses"``) and, for every item
    type it maps, where each field of the item goes in the body (``wire_shapes``)."""
    _add(REGISTRY.provider_mappers, name, mapper)
    _add(REGISTRY.provider_shapes, name, shapes)


def register_persistence(name: str, roundtrip: PersistenceRoundTrip) -> None:
    """Register one store's write-then-read round-trip (e.g. ``"sqlite-sessions"``)."""
    _add(REGISTRY.persistence, name, roundtrip)


def register_redaction(name: str, check: RedactionCheck) -> None:
    """Register one redaction path (e.g. ``"events"``)."""
    _add(REGISTRY.redaction, name, check)


def load_plugins() -> Registry:
    """Import every module in ``plugins/`` once (their imports register the checks)."""
    import plugins

    for module in pkgutil.iter_modules(plugins.__path__):
        importlib.import_module(f"{plugins.__name__}.{module.name}")
    return REGISTRY
