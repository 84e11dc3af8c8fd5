"""Errors of the DBOS engine: each an ``ActoviqError`` with a stable ``code``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from actoviq.core import ActoviqError

__all__ = [
    "DbosConfigurationError",
    "DbosError",
    "DbosRunNotFoundError",
    "DbosRuntimeNotRegisteredError",
    "DurableDecisionError",
]


class DbosError(ActoviqError):
    """Root of the errors of ``actoviq.dbos``."""

    default_code: ClassVar[str] = "DBOS_ERROR"


class DbosConfigurationError(DbosError):
    """A durable runtime or engine was configured in a way DBOS cannot run durably.

    Examples: a checkpoint store (DBOS is the checkpoint), two runtimes under one name, DBOS not
    configured or launched when a durable run starts.
    """

    default_code: ClassVar[str] = "DBOS_CONFIGURATION"


class DbosRuntimeNotRegisteredError(DbosError):
    """A workflow names a durable runtime that this process has not created (yet).

    Recovery runs the workflows of a crashed process in a new one: that process must create the
    same :class:`~actoviq.dbos.DbosRuntime` (same ``name``) before ``DBOS.launch()``.
    """

    default_code: ClassVar[str] = "DBOS_RUNTIME_NOT_REGISTERED"

    def __init__(self, name: str, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(
            f'No durable runtime named "{name}" exists in this process; create it before '
            "DBOS.launch() so recovered workflows find it.",
            details={"runtime": name, **(details or {})},
        )
        self.runtime_name = name


class DbosRunNotFoundError(DbosError):
    """No durable run (DBOS workflow) has that id."""

    default_code: ClassVar[str] = "DBOS_RUN_NOT_FOUND"

    def __init__(self, run_id: str) -> None:
        super().__init__(f'Unknown durable run "{run_id}".', details={"runId": run_id})
        self.run_id = run_id


class DurableDecisionError(DbosError):
    """A decision names no open interruption of the durable run (or is malformed).

    ``reason`` is ``"not_waiting"`` (the run is not waiting for that call: never interrupted
    there, already decided, or finished), ``"invalid"`` (bad outcome or payload) or
    ``"not_found"`` (no such run).
    """

    default_code: ClassVar[str] = "DURABLE_DECISION_INVALID"

    def __init__(self, message: str, *, run_id: str, call_id: str | None, reason: str) -> None:
        super().__init__(message, details={"runId": run_id, "callId": call_id, "reason": reason})
        self.run_id = run_id
        self.call_id = call_id
        self.reason = reason
