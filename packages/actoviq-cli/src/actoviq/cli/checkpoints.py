"""A checkpoint store that opens the database only when a run's state must be durable.

``actoviq run`` must reach the first model request quickly, and opening the SQL storage
(importing SQLAlchemy, checking the schema) costs more than the rest of the start-up. Until a run
has something to lose, nothing needs to be on disk: its first states are ``running`` with no
pending tool, i.e. only its input. :class:`DeferredCheckpointStore` keeps such a fresh run's
claim in memory and writes it (the newest state, with the run's lease) when the run gets a pending
tool call, pauses, ends, or anything reads the store. So every state that matters for
exactly-once and crash safety (a tool ``prepared``/``started``, an approval, the end) is written
before the runtime goes on, as with the store itself; a crash before that loses only a run
that had done nothing. Resume claims and reads always go to the store.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import cast

from actoviq.core import JsonObject
from actoviq.runtime import ClaimingRunCheckpointStore, RunLease

__all__ = ["DeferredCheckpointStore"]


def _deferrable(state: JsonObject) -> bool:
    """Only its input: running, with no pending tool call."""
    return (
        state.get("status") == "running"
        and not state.get("pendingTools")
        and not state.get("pendingTool")
    )


class DeferredCheckpointStore:
    """A :class:`ClaimingRunCheckpointStore` over one opened lazily (see the module docstring).

    Args:
        open_store: returns the real store (called at most once, when first needed).
        defer: keep fresh runs' input-only claims in memory; False writes everything at once
            (the store still opens on first use).
    """

    def __init__(
        self,
        open_store: Callable[[], Awaitable[ClaimingRunCheckpointStore]],
        *,
        defer: bool = True,
    ) -> None:
        self._open = open_store
        self._defer = defer
        self._store: ClaimingRunCheckpointStore | None = None
        self._lock = asyncio.Lock()
        self._deferred: tuple[JsonObject, RunLease] | None = None

    @property
    def opened(self) -> bool:
        """Whether the real store was opened."""
        return self._store is not None

    @property
    def deferred_run_id(self) -> str | None:
        """The run whose claim is held in memory, if any."""
        return None if self._deferred is None else cast(str, self._deferred[0].get("runId"))

    async def _ready(self) -> ClaimingRunCheckpointStore:
        if self._store is None:
            async with self._lock:
                if self._store is None:
                    self._store = await self._open()
        return self._store

    async def _flush(self) -> ClaimingRunCheckpointStore:
        store = await self._ready()
        deferred, self._deferred = self._deferred, None
        if deferred is not None:
            state, lease = deferred
            await store.claim(state, expected=None, lease=lease)
        return store

    def _holds(self, state: JsonObject, lease: RunLease | None) -> bool:
        deferred = self._deferred
        return (
            deferred is not None
            and deferred[0].get("runId") == state.get("runId")
            and deferred[1] == lease
        )

    async def claim(
        self, state: JsonObject, *, expected: JsonObject | None, lease: RunLease
    ) -> None:
        """A fresh run's claim waits in memory while its state is only its input."""
        if self._defer and expected is None and self._store is None and _deferrable(state):
            if self._deferred is not None:
                await self._flush()
            else:
                self._deferred = (state, lease)
                return
        store = await self._flush()
        await store.claim(state, expected=expected, lease=lease)

    async def save(self, state: JsonObject, *, lease: RunLease | None = None) -> None:
        """Keep a deferred run's newer input-only state in memory; write anything else."""
        if self._holds(state, lease):
            if _deferrable(state):
                self._deferred = (state, cast(RunLease, lease))
                return
            # The first state worth keeping: claim the run with it (the deferred one is older).
            self._deferred = None
            store = await self._ready()
            await store.claim(state, expected=None, lease=cast(RunLease, lease))
            return
        store = await self._flush()
        await store.save(state, lease=lease)

    async def renew(self, run_id: str, *, lease: RunLease) -> None:
        """Nothing to renew while the claim waits in memory."""
        if self._deferred is not None and self._deferred[0].get("runId") == run_id:
            return
        store = await self._flush()
        await store.renew(run_id, lease=lease)

    async def load(self, run_id: str) -> JsonObject | None:
        """Read from the store (writing a waiting claim first)."""
        store = await self._flush()
        return await store.load(run_id)

    async def delete(self, run_id: str) -> None:
        """Tombstone in the store (writing a waiting claim first)."""
        store = await self._flush()
        await store.delete(run_id)

    async def aclose(self) -> None:
        """Write a claim still waiting (a run that never got past its input), then close."""
        if self._deferred is not None:
            await self._flush()
        if self._store is not None:
            await self._store.aclose()
