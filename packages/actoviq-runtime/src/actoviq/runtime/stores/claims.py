"""Run claims: the rule that makes ``resume()`` exactly-once (decision D10).

A run state names its version with two fields: ``trace.spanId`` (the run's incarnation: a fresh
run that reuses a run id gets a new span) and ``stateRevision`` (incremented by every save of
that run, in any process). An execution may continue a state only while the stored checkpoint
is that very version, the run is not completed and no other live execution holds it.

Holding is a lease on the checkpoint record: ``leaseOwner`` names one execution attempt (unique
per attempt) and ``leaseExpiresAt`` (epoch ms) when a crashed holder's run may be taken over.
The holder renews the lease while it runs and releases it with its terminal save; every save it
makes is fenced on its owner, so an execution whose run was taken over cannot write again.

:func:`claim_refusal` is the one decision, shared by the store adapters (which apply it under a
compare-and-set on the record's revision) and by the runtime for stores without claims.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Mapping
from typing import Any, cast

import attrs

from actoviq.core import JsonObject
from actoviq.runtime.errors import RunStateStaleError

__all__ = [
    "DEFAULT_LEASE_MS",
    "RunLease",
    "claim_refusal",
    "new_lease_owner",
    "state_status",
    "state_version",
]

DEFAULT_LEASE_MS = 30_000
"""How long a claim outlives its holder's last renewal (the holder renews every third of it)."""


def _check_owner(_: object, __: object, value: object) -> None:
    if type(value) is not str or not value.strip():
        raise ValueError("RunLease.owner must be a non-empty string.")


def _check_duration(_: object, __: object, value: object) -> None:
    if type(value) is not int or value < 1:
        raise ValueError("RunLease.duration_ms must be a positive int.")


@attrs.frozen(kw_only=True, slots=True)
class RunLease:
    """One execution attempt's hold on a run.

    Attributes:
        owner: unique per attempt (see :func:`new_lease_owner`); saves are fenced on it.
        duration_ms: how long the hold lasts after each write or renewal.
    """

    owner: str = attrs.field(validator=_check_owner)
    duration_ms: int = attrs.field(default=DEFAULT_LEASE_MS, validator=_check_duration)


def new_lease_owner() -> str:
    """A fresh owner token: ``<host>:<pid>:<random>`` (readable in diagnostics, never reused)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:16]}"


def state_version(state: Mapping[str, Any]) -> tuple[str | None, int]:
    """``(trace.spanId, stateRevision)``: which incarnation of the run and which save of it."""
    trace = state.get("trace")
    span = cast(Mapping[str, Any], trace).get("spanId") if isinstance(trace, Mapping) else None
    revision = state.get("stateRevision", 0)
    return (
        span if isinstance(span, str) else None,
        revision if type(revision) is int else -1,
    )


def state_status(state: Mapping[str, Any] | None) -> str | None:
    """The run status a state records (None when unknown)."""
    if state is None:
        return None
    status = state.get("status")
    return status if isinstance(status, str) else None


def claim_refusal(
    run_id: str,
    stored: JsonObject | None,
    *,
    expected: Mapping[str, Any] | None,
    lease_owner: str | None = None,
    lease_expires_at: int | None = None,
    owner: str | None = None,
    now_ms: float = 0.0,
    completed: bool = False,
) -> RunStateStaleError | None:
    """Why an execution may not take the run (None: it may).

    Args:
        run_id: the run.
        stored: the newest stored state of the run (None: the store has no record of it).
        expected: the state the execution continues (None: a fresh run, which may replace any
            record that no live lease holds).
        lease_owner: who holds the stored record (None: nobody).
        lease_expires_at: until when (epoch ms).
        owner: the claiming execution's owner token.
        now_ms: the current time (epoch ms) of the claiming side.
        completed: the record is a ``completed`` tombstone whatever its state says.
    """
    if stored is None:
        return None
    status = "completed" if completed else state_status(stored)
    if (
        lease_owner is not None
        and lease_owner != owner
        and lease_expires_at is not None
        and lease_expires_at > now_ms
    ):
        return RunStateStaleError(
            run_id,
            stored_status=status,
            reason="claimed",
            details={"leaseOwner": lease_owner, "leaseExpiresAt": lease_expires_at},
        )
    if expected is None:
        return None
    if status == "completed":
        return RunStateStaleError(run_id, stored_status=status, reason="completed")
    if state_version(stored) != state_version(expected):
        return RunStateStaleError(run_id, stored_status=status, reason="superseded")
    return None
