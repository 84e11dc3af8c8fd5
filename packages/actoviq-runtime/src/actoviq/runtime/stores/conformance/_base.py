"""Shared pieces of the conformance suite: the bundle, the registry, helpers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import attrs

from actoviq.core import JsonObject
from actoviq.runtime.stores.ledgers import BudgetLedgerStore
from actoviq.runtime.stores.protocols import (
    ArtifactMetadataStore,
    CheckpointStore,
    DurableChildStore,
    MemoryStore,
    SessionStore,
)
from actoviq.runtime.stores.records import NewSessionItem
from actoviq.runtime.stores.workflow_runs import WorkflowRunStore

__all__ = [
    "CHECKS",
    "EFFECT",
    "SHA",
    "STOP",
    "T0",
    "T1",
    "T2",
    "TRACE",
    "ConformanceCheck",
    "StoreBundle",
    "expect_error",
    "register",
    "text_item",
]


@attrs.frozen(kw_only=True)
class StoreBundle:
    """One backend's stores, as handed to every check."""

    sessions: SessionStore
    checkpoints: CheckpointStore
    memory: MemoryStore
    artifacts: ArtifactMetadataStore
    children: DurableChildStore
    ledgers: BudgetLedgerStore
    workflows: WorkflowRunStore


@attrs.frozen
class ConformanceCheck:
    """A named check: ``await check.run(bundle, namespace)`` raises AssertionError on failure."""

    name: str
    run: Callable[[StoreBundle, str], Awaitable[None]]


_E = TypeVar("_E", bound=BaseException)


async def expect_error(error_type: type[_E], action: Awaitable[Any]) -> _E:
    """Await ``action`` and return the ``error_type`` it raises (AssertionError if it does not)."""
    try:
        await action
    except error_type as error:
        return error
    raise AssertionError(f"expected {error_type.__name__}")


CHECKS: list[ConformanceCheck] = []


def register(fn: Callable[[StoreBundle, str], Awaitable[None]]) -> None:
    CHECKS.append(ConformanceCheck(fn.__name__.removeprefix("check_"), fn))


def text_item(item_id: str, text: str) -> NewSessionItem:
    return NewSessionItem(item_id=item_id, kind="text", payload={"type": "text", "text": text})


T0 = "2026-01-01T00:00:00.000Z"
T1 = "2026-01-01T00:00:01.000Z"
T2 = "2026-01-01T00:00:02.000Z"

TRACE: JsonObject = {"traceId": "t1", "spanId": "s1", "traceState": "k=v", "baggage": {"b": "1"}}
EFFECT: JsonObject = {
    "sideEffectId": "call-1",
    "kind": "tool:deploy",
    "status": "pending",
    "idempotencyKey": "k1",
}
STOP: JsonObject = {
    "reason": "tool_approval",
    "resumable": True,
    "requestedAt": T0,
    "details": {"x": 1},
}

SHA = "a" * 64
