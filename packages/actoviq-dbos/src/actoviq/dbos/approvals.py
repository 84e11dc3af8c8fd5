"""Decisions for waiting durable runs, from any process: ``approve``, ``reject``, ``decide``.

A durable run that needs a decision publishes, for each open interruption, the DBOS event
``actoviq.waiting:<callId>`` and waits on the message topic of that interruption. These
functions read the event (waiting up to ``timeout_seconds`` for it), check that the decision fits
the interruption, and send it with the interruption id as DBOS idempotency key: a decision
delivered twice is stored once, and the run reads exactly one decision per interruption, so the
approved tool runs once.

They work in a process where DBOS is launched (``DBOS.launch()``) or through a
:class:`dbos.DBOSClient` (``client=``) from a process that only talks to the system database.
"""

from __future__ import annotations

from typing import Any, cast

from actoviq.core import Interruption, JsonObject, JsonValue, from_json, to_json
from actoviq.dbos.errors import DurableDecisionError
from actoviq.dbos.names import (
    PENDING_EVENT_KEY,
    decision_key,
    decision_topic,
    waiting_event_key,
)
from dbos import DBOS, DBOSClient

__all__ = ["approve", "decide", "pending", "reject"]

_FITS = {
    "approval": ("approve", "reject"),
    "reconciliation": ("committed", "failed", "retry"),
}


async def _event(run_id: str, key: str, wait: float, client: DBOSClient | None) -> Any:
    if client is not None:
        return await client.get_event_async(run_id, key, timeout_seconds=wait)
    return await DBOS.get_event_async(run_id, key, timeout_seconds=wait)


async def pending(
    run_id: str, *, timeout_seconds: float = 0.0, client: DBOSClient | None = None
) -> tuple[Interruption, ...]:
    """The interruptions durable run ``run_id`` is waiting on (empty when it waits on none).

    Waits up to ``timeout_seconds`` for the run's first wait to be published. Every
    interruption listed already accepts a decision: :func:`decide` needs no wait after this.
    """
    data = await _event(run_id, PENDING_EVENT_KEY, timeout_seconds, client)
    if not isinstance(data, dict):
        return ()
    entries = cast(list[Any], cast(dict[str, Any], data).get("interruptions") or [])
    return tuple(from_json(Interruption, entry) for entry in entries)


async def decide(
    run_id: str,
    call_id: str,
    outcome: str,
    *,
    reason: str | None = None,
    output: JsonValue = None,
    metadata: JsonObject | None = None,
    timeout_seconds: float = 0.0,
    client: DBOSClient | None = None,
) -> Interruption:
    """Send the decision ``outcome`` for the call ``call_id`` of durable run ``run_id``.

    ``approve``/``reject`` answer an approval; ``committed`` (with ``output``), ``failed`` and
    ``retry`` answer a reconciliation. Sending the same decision again is harmless (stored
    once); a later, different decision for an interruption already answered is never read.

    Returns:
        The interruption the decision answers.

    Raises:
        DurableDecisionError: the run never waited on ``call_id`` within ``timeout_seconds``
            (``not_waiting``), or ``outcome`` does not fit the interruption (``invalid``).
    """
    data = await _event(run_id, waiting_event_key(call_id), timeout_seconds, client)
    if not isinstance(data, dict):
        raise DurableDecisionError(
            f'Durable run "{run_id}" is not waiting for a decision on call "{call_id}".',
            run_id=run_id,
            call_id=call_id,
            reason="not_waiting",
        )
    interruption = from_json(Interruption, cast(dict[str, Any], data)["interruption"])
    if outcome not in _FITS.get(interruption.kind, ()):
        raise DurableDecisionError(
            f'Outcome "{outcome}" does not answer a {interruption.kind} interruption.',
            run_id=run_id,
            call_id=call_id,
            reason="invalid",
        )
    message: JsonObject = {"outcome": outcome}
    if reason is not None:
        message["reason"] = reason
    if outcome == "committed":
        message["output"] = output
    if metadata is not None:
        message["metadata"] = cast(JsonValue, to_json(metadata))
    # The wait the event belongs to: a call id reused in a later turn is a new wait, with its
    # own topic and idempotency key (else its decision is deduplicated away as the first's).
    raw_wait = cast(dict[str, Any], data).get("wait", 1)
    wait = raw_wait if type(raw_wait) is int and raw_wait >= 1 else 1
    topic = decision_topic(interruption.id, wait)
    key = decision_key(interruption.id, wait)
    if client is not None:
        await client.send_async(run_id, message, topic, idempotency_key=key)
    else:
        await DBOS.send_async(run_id, message, topic, idempotency_key=key)
    return interruption


async def approve(
    run_id: str,
    call_id: str,
    *,
    metadata: JsonObject | None = None,
    timeout_seconds: float = 0.0,
    client: DBOSClient | None = None,
) -> Interruption:
    """Approve the call ``call_id`` that durable run ``run_id`` waits on (see :func:`decide`)."""
    return await decide(
        run_id,
        call_id,
        "approve",
        metadata=metadata,
        timeout_seconds=timeout_seconds,
        client=client,
    )


async def reject(
    run_id: str,
    call_id: str,
    reason: str | None = None,
    *,
    timeout_seconds: float = 0.0,
    client: DBOSClient | None = None,
) -> Interruption:
    """Reject the call ``call_id`` (the model sees a ``denied`` result; see :func:`decide`)."""
    return await decide(
        run_id, call_id, "reject", reason=reason, timeout_seconds=timeout_seconds, client=client
    )
