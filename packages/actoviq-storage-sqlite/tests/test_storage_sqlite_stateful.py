"""hypothesis stateful test: interleaved appends, loads, conflicts and compactions from several
writers keep revisions monotonic with no lost or duplicated item (in-memory and SQLite)."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from actoviq.runtime import (
    InMemorySessionStore,
    NewSessionItem,
    SessionRevisionConflictError,
    SessionStore,
)
from actoviq.storage.sqlite import SqliteStorage

T = "t"
WRITERS = st.integers(min_value=0, max_value=2)
_R = TypeVar("_R")


class SessionMachine(RuleBasedStateMachine):
    """Model: the ordered list of committed item ids and the revision count."""

    backend = "memory"

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.folder = tempfile.TemporaryDirectory()
        self.storage: SqliteStorage | None = None
        if self.backend == "sqlite":
            self.storage = self.run(SqliteStorage.open(Path(self.folder.name) / "s.db"))
            self.store: SessionStore = self.storage.sessions
        else:
            self.store = InMemorySessionStore()
        self.run(self.store.create(tenant_id=T, session_id="s"))
        self.model: list[str] = []
        self.revision = 0
        self.known = [0, 0, 0]
        self.counter = 0
        self.snapshot_through = 0
        self.seen_revisions = [0]

    def run(self, action: Coroutine[Any, Any, _R]) -> _R:
        return self.loop.run_until_complete(action)

    def teardown(self) -> None:
        if self.storage is not None:
            self.run(self.storage.aclose())
        self.loop.close()
        self.folder.cleanup()

    @rule(writer=WRITERS, size=st.integers(min_value=1, max_value=3))
    def append(self, writer: int, size: int) -> None:
        ids = [f"i{self.counter + k}" for k in range(size)]
        self.counter += size
        items = [NewSessionItem(item_id=i, kind="text", payload={"id": i}) for i in ids]
        try:
            record = self.run(
                self.store.append(
                    tenant_id=T, session_id="s", expected_revision=self.known[writer], items=items
                )
            )
        except SessionRevisionConflictError as error:
            conflict: SessionRevisionConflictError | None = error
            self.known[writer] = self.revision
        else:
            conflict = None
            assert self.known[writer] == self.revision
            self.model.extend(ids)
            self.revision += 1
            assert record.revision == self.revision
            self.known[writer] = record.revision
        if conflict is not None:
            assert conflict.actual_revision == self.revision
            assert conflict.expected_revision != self.revision
        self.seen_revisions.append(self.revision)

    @rule(writer=WRITERS)
    def retry_last_append(self, writer: int) -> None:
        """Re-sending an already committed append is a no-op (idempotent)."""
        if not self.model:
            return
        last = self.model[-1]
        record = self.run(
            self.store.append(
                tenant_id=T,
                session_id="s",
                expected_revision=self.known[writer],
                items=[NewSessionItem(item_id=last, kind="text", payload={"id": last})],
            )
        )
        assert record.revision == self.revision

    @rule(writer=WRITERS)
    def refresh(self, writer: int) -> None:
        loaded = self.run(self.store.load(tenant_id=T, session_id="s"))
        self.known[writer] = loaded.session.revision

    @precondition(lambda self: len(self.model) > self.snapshot_through)
    @rule()
    def compact(self) -> None:
        through = len(self.model)
        snap = self.run(
            self.store.compact(
                tenant_id=T,
                session_id="s",
                expected_revision=self.revision,
                through_sequence=through,
                state={"ids": list(self.model)},
            )
        )
        self.revision += 1
        self.snapshot_through = through
        assert snap.revision == self.revision
        self.seen_revisions.append(self.revision)

    @invariant()
    def journal_matches_model(self) -> None:
        full = self.run(self.store.load(tenant_id=T, session_id="s", after_sequence=0))
        assert [i.item_id for i in full.items] == self.model
        assert [i.sequence for i in full.items] == list(range(1, len(self.model) + 1))
        assert full.session.revision == self.revision
        assert self.seen_revisions == sorted(self.seen_revisions)
        tail = self.run(self.store.load(tenant_id=T, session_id="s"))
        covered = tail.snapshot.through_sequence if tail.snapshot is not None else 0
        assert [i.item_id for i in tail.items] == self.model[covered:]


class SqliteSessionMachine(SessionMachine):
    backend = "sqlite"


_SETTINGS = settings(
    max_examples=15,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestInMemorySessions = SessionMachine.TestCase
TestInMemorySessions.settings = _SETTINGS
TestSqliteSessions = SqliteSessionMachine.TestCase
TestSqliteSessions.settings = _SETTINGS
