"""The names a durable run uses in DBOS: its workflow, its event keys and its message topics.

They are part of the cross-process contract (a second process reads the events and sends the
messages), so they never change within a major version.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "DECISION_TOPIC_PREFIX",
    "EVENTS_STREAM_KEY",
    "PENDING_EVENT_KEY",
    "RUN_WORKFLOW_NAME",
    "WAITING_EVENT_PREFIX",
    "decision_key",
    "decision_topic",
    "waiting_event_key",
]

RUN_WORKFLOW_NAME: Final = "actoviq.durable_run"
"""The DBOS workflow name of a durable agent run."""
PENDING_EVENT_KEY: Final = "actoviq.pending"
"""The DBOS event a waiting run publishes: ``{"interruptions": [...], "round": n}`` (wire JSON)."""
DECISION_TOPIC_PREFIX: Final = "actoviq.decision:"
"""Prefix of the DBOS message topic a decision for one interruption is sent on."""
WAITING_EVENT_PREFIX: Final = "actoviq.waiting:"
"""Prefix of the per-call DBOS event: ``{"interruption": {...}, "open": bool}`` (wire JSON)."""
EVENTS_STREAM_KEY: Final = "actoviq.events"
"""The DBOS stream a durable run writes its run events to (wire JSON envelopes)."""


def decision_topic(interruption_id: str, wait: int = 1) -> str:
    """The message topic of one interruption: each waits on its own (a duplicate is never read).

    ``wait`` counts the run's waits: a call id a model reuses in a later turn gives the same
    interruption id again, and its later wait gets a topic of its own (``#<wait>``), so no
    decision meant for an earlier wait is read there.
    """
    topic = f"{DECISION_TOPIC_PREFIX}{interruption_id}"
    return topic if wait == 1 else f"{topic}#{wait}"


def decision_key(interruption_id: str, wait: int = 1) -> str:
    """The DBOS idempotency key of a decision: one stored decision per interruption and wait."""
    return interruption_id if wait == 1 else f"{interruption_id}#{wait}"


def waiting_event_key(call_id: str) -> str:
    """The DBOS event key a run publishes while it waits for a decision on ``call_id``."""
    return f"{WAITING_EVENT_PREFIX}{call_id}"
