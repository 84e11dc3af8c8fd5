"""What one runtime knows about its runs' newest states: the in-process half of exactly-once.

``AgentRuntime.resume`` consults the ledger synchronously, before it launches anything. The ledger
refuses what it knows for certain: a state older than one this runtime already claimed or ended
with (same incarnation, lower ``stateRevision``), a state of a run that completed here, and a
state whose status is ``completed``. Without a checkpoint store this is the whole guard; with one,
the store's atomic claim decides across processes and the ledger only answers early.

The ledger keeps the newest :data:`LEDGER_CAPACITY` runs that were interrupted, cancelled,
failed or resumed here (a run that simply completed leaves no entry); older entries are evicted.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Final

from actoviq.core import JsonObject
from actoviq.runtime.errors import RunStateStaleError
from actoviq.runtime.state import SerializedRunState
from actoviq.runtime.stores import state_version

__all__ = ["LEDGER_CAPACITY", "RunLedger"]

LEDGER_CAPACITY: Final = 65_536


class RunLedger:
    """Run id → ``(span, stateRevision, status)`` of the newest state seen in this runtime."""

    __slots__ = ("_capacity", "_entries")

    def __init__(self, capacity: int = LEDGER_CAPACITY) -> None:
        self._capacity = capacity
        self._entries: OrderedDict[str, tuple[str | None, int, str]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def knows(self, run_id: str) -> bool:
        """Whether the ledger holds an entry for ``run_id``."""
        return run_id in self._entries

    def refusal(self, state: SerializedRunState) -> RunStateStaleError | None:
        """Why ``state`` may not be resumed, as far as this runtime knows (None: it may)."""
        run_id = state.run_id
        if state.status == "completed":
            return RunStateStaleError(run_id, stored_status="completed", reason="completed")
        entry = self._entries.get(run_id)
        if entry is None:
            return None
        span, revision, status = entry
        if span != state.trace.span_id:
            return None  # another incarnation: the store (if any) decides
        if status == "completed" and state.state_revision <= revision:
            return RunStateStaleError(run_id, stored_status=status, reason="completed")
        if state.state_revision < revision:
            reason = "consumed" if status == "running" else "superseded"
            return RunStateStaleError(run_id, stored_status=status, reason=reason)
        return None

    def record(self, state: JsonObject, *, always: bool) -> None:
        """Remember ``state`` as its run's newest (``always``: even a plain completion)."""
        run_id = state.get("runId")
        status = state.get("status")
        if not isinstance(run_id, str) or not isinstance(status, str):
            return
        if status == "completed" and not always and run_id not in self._entries:
            return
        span, revision = state_version(state)
        entries = self._entries
        entries[run_id] = (span, revision, status)
        entries.move_to_end(run_id)
        while len(entries) > self._capacity:
            entries.popitem(last=False)
