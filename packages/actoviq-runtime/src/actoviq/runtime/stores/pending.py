"""What an interrupted run waits for, read from a checkpoint store alone (issue 14 §5).

A host that persisted a run (any :class:`~actoviq.runtime.stores.RunCheckpointStore`) can list
the run's open interruptions in another process, build decisions from them and resume, without
the :class:`~actoviq.core.RunResult` of the first leg:

Example:
    >>> # waiting = await pending_interruptions(checkpoints, "deploy-1")
    >>> # decisions = [InterruptionDecision.approve(entry.id) for entry in waiting]
    >>> # handle = runtime.resume(await checkpoints.load("deploy-1"), decisions)
"""

from __future__ import annotations

from typing import cast

from actoviq.core import Interruption, JsonValue, from_json
from actoviq.runtime.stores.errors import StorageDataError
from actoviq.runtime.stores.protocols import RunCheckpointStore

__all__ = ["interruptions_of", "pending_interruptions"]


def interruptions_of(state: object) -> tuple[Interruption, ...]:
    """The open interruptions of a serialised run state (empty unless it is ``interrupted``).

    Each :class:`~actoviq.core.Interruption` names its ``id`` (what a decision answers), ``kind``
    (``approval`` or ``reconciliation``), ``reason``, the tool call (``call_id``, ``tool_name``,
    ``input``) and the policy's ``metadata``.

    Raises:
        StorageDataError: the state or one of its interruptions is malformed.
    """
    if type(state) is not dict:
        raise StorageDataError("A run state must be a JSON object.")
    mapping = cast(dict[str, JsonValue], state)
    if mapping.get("status") != "interrupted":
        return ()
    entries = mapping.get("interruptions", [])
    if type(entries) is not list:
        raise StorageDataError("Run state interruptions must be a list.")
    try:
        return tuple(from_json(Interruption, entry) for entry in entries)
    except Exception as error:
        raise StorageDataError(f"Malformed interruption in run state: {error}") from error


async def pending_interruptions(store: RunCheckpointStore, run_id: str) -> tuple[Interruption, ...]:
    """The open interruptions of ``run_id`` in ``store`` (empty when it waits for nothing).

    Empty too when the store holds no state for the run or the run is not interrupted.

    Raises:
        StorageDataError: the stored state is malformed.
    """
    state = await store.load(run_id)
    return () if state is None else interruptions_of(state)
