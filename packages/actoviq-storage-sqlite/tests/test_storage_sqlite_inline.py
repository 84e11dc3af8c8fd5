"""Inline journal transactions: on the loop's thread when they cannot block, else on a thread.

Every test drives :class:`Database` directly with small transactions on a scratch table, and
checks the result through a separate ``sqlite3`` connection. "Another process" is another
``sqlite3`` connection in this process that takes the write lock with ``BEGIN IMMEDIATE``: to
SQLite's locks it is indistinguishable from another process.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable, Generator
from pathlib import Path
from typing import Any

import attrs
import pytest
from sqlalchemy import event

from actoviq.runtime import StorageUnavailableError
from actoviq.storage.sqlite import SqliteStorage
from actoviq.storage.sqlite._engine import (
    INLINE_CHECKPOINT_EVERY,
    Database,
    DatabaseStats,
    open_database,
    sqlite_url,
)

DEADLINE = 10.0  # seconds; a deadline for waits, never an assertion about speed

Work = Callable[[sqlite3.Connection], Any]


def _path(tmp_path: Path) -> Path:
    return tmp_path / "inline.db"


def _create_notes(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE IF NOT EXISTS notes (k INTEGER PRIMARY KEY, v TEXT NOT NULL)")


def _insert(key: int, value: str) -> Callable[[sqlite3.Connection], int]:
    def work(conn: sqlite3.Connection) -> int:
        conn.execute("INSERT INTO notes (k, v) VALUES (?, ?)", (key, value))
        return key

    return work


def _select(conn: sqlite3.Connection) -> list[tuple[int, str]]:
    return [(int(k), str(v)) for k, v in conn.execute("SELECT k, v FROM notes ORDER BY k")]


def _committed(path: Path) -> list[tuple[int, str]]:
    """The committed rows, read through a connection of its own."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return _select(conn)


@contextlib.contextmanager
def _lock_holder(path: Path) -> Generator[sqlite3.Connection]:
    """Another connection holding the write lock (``BEGIN IMMEDIATE``) until the block ends."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        yield conn
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        conn.close()


def _delta(after: DatabaseStats, before: DatabaseStats) -> dict[str, int]:
    """The counters that changed, and by how much."""
    old = attrs.asdict(before)
    return {
        name: value - old[name] for name, value in attrs.asdict(after).items() if value != old[name]
    }


async def _open(tmp_path: Path, *, inline: bool = True) -> Database:
    database = await open_database(sqlite_url(_path(tmp_path)), inline=inline)
    await database.run_journal_write(_create_notes, inline=False)
    return database


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await _open(tmp_path)
    try:
        yield database
    finally:
        await database.aclose()


async def _until(predicate: Callable[[], bool]) -> None:
    async with asyncio.timeout(DEADLINE):
        while True:
            if predicate():
                return
            await asyncio.sleep(0.001)  # the counters have no event to wait on


async def test_uncontended_transactions_run_inline_and_commit(db: Database, tmp_path: Path) -> None:
    before = db.stats
    seen: list[sqlite3.Connection] = []

    def pragmas(conn: sqlite3.Connection) -> list[Any]:
        seen.append(conn)
        names = ("busy_timeout", "wal_autocheckpoint", "journal_mode", "synchronous")
        names += ("foreign_keys",)
        return [conn.execute(f"PRAGMA {name}").fetchone()[0] for name in names]

    assert db.inline
    assert await db.run_journal_write(_insert(1, "a")) == 1
    assert await db.run_journal_write(_insert(2, "b")) == 2
    # busy_timeout and auto-checkpoint off; WAL, synchronous=NORMAL (1), foreign keys on.
    assert await db.run_journal_read(pragmas) == [0, 0, "wal", 1, 1]
    assert await db.run_journal_read(_select) == [(1, "a"), (2, "b")]
    assert _committed(_path(tmp_path)) == [(1, "a"), (2, "b")]
    assert _delta(db.stats, before) == {"inline_writes": 2, "inline_reads": 2}
    assert seen[0].in_transaction is False  # every inline transaction is finished


@pytest.mark.parametrize("other_outcome", ["COMMIT", "ROLLBACK"])
async def test_a_write_waits_for_another_writer_on_a_thread_not_on_the_loop(
    db: Database, tmp_path: Path, other_outcome: str
) -> None:
    path = _path(tmp_path)
    before = db.stats
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.001)  # the ticker measures loop liveness; nothing waits on it

    with _lock_holder(path) as other:
        other.execute("INSERT INTO notes (k, v) VALUES (100, 'other')")
        async with asyncio.TaskGroup() as group:
            ticking = group.create_task(ticker())
            write = group.create_task(db.run_journal_write(_insert(1, "ours")))
            await _until(lambda: db.stats.busy_fallbacks > before.busy_fallbacks)
            # Our write now waits for the lock on a worker thread; the loop keeps running.
            seen = ticks
            await _until(lambda: ticks >= seen + 5)
            assert not write.done()
            other.execute(other_outcome)
            async with asyncio.timeout(DEADLINE):
                assert await write == 1
            ticking.cancel()
    expected = [(1, "ours"), (100, "other")] if other_outcome == "COMMIT" else [(1, "ours")]
    assert _committed(path) == expected
    assert _delta(db.stats, before) == {"busy_fallbacks": 1, "thread_writes": 1}
    # The lock is free again: the next write is inline.
    await db.run_journal_write(_insert(2, "next"))
    assert _delta(db.stats, before) == {"busy_fallbacks": 1, "thread_writes": 1, "inline_writes": 1}


async def test_a_read_runs_inline_while_another_connection_holds_the_write_lock(
    db: Database, tmp_path: Path
) -> None:
    await db.run_journal_write(_insert(1, "committed"))
    before = db.stats
    with _lock_holder(_path(tmp_path)) as other:
        other.execute("INSERT INTO notes (k, v) VALUES (2, 'uncommitted')")
        assert await db.run_journal_read(_select) == [(1, "committed")]
        other.execute("COMMIT")
    assert await db.run_journal_read(_select) == [(1, "committed"), (2, "uncommitted")]
    assert _delta(db.stats, before) == {"inline_reads": 2}


def _raise_value_error(conn: sqlite3.Connection) -> None:
    conn.execute("INSERT INTO notes (k, v) VALUES (7, 'doomed')")
    raise ValueError("work failed")


def _raise_integrity_error(conn: sqlite3.Connection) -> None:
    conn.execute("INSERT INTO notes (k, v) VALUES (7, 'doomed')")
    conn.execute("INSERT INTO notes (k, v) VALUES (1, 'duplicate key')")  # IntegrityError


def _raise_operational_error(conn: sqlite3.Connection) -> None:
    conn.execute("INSERT INTO notes (k, v) VALUES (7, 'doomed')")
    conn.execute("SELECT * FROM no_such_table")  # OperationalError, not a busy one


@pytest.mark.parametrize(
    ("failing", "raised"),
    [
        (_raise_value_error, ValueError),
        (_raise_integrity_error, sqlite3.IntegrityError),  # the session store catches this type
        (_raise_operational_error, StorageUnavailableError),
    ],
)
async def test_failing_work_rolls_back_and_keeps_its_error_type(
    db: Database, tmp_path: Path, failing: Work, raised: type[Exception]
) -> None:
    await db.run_journal_write(_insert(1, "kept"))
    before = db.stats
    calls: list[sqlite3.Connection] = []
    committed: list[object] = []

    def work(conn: sqlite3.Connection) -> None:
        calls.append(conn)
        failing(conn)

    with pytest.raises(raised):
        await db.run_journal_write(work, on_commit=committed.append)
    assert len(calls) == 1  # not re-run on a thread: only busy errors are
    assert committed == []
    assert _committed(_path(tmp_path)) == [(1, "kept")]
    assert _delta(db.stats, before) == {}
    # The inline connection was left clean: the next write commits inline.
    await db.run_journal_write(_insert(2, "after"))
    assert _committed(_path(tmp_path)) == [(1, "kept"), (2, "after")]
    assert _delta(db.stats, before) == {"inline_writes": 1}


async def test_a_failing_read_propagates_and_leaves_no_transaction(db: Database) -> None:
    seen: list[sqlite3.Connection] = []

    def work(conn: sqlite3.Connection) -> None:
        seen.append(conn)
        raise LookupError("read failed")

    with pytest.raises(LookupError):
        await db.run_journal_read(work)
    assert not seen[0].in_transaction


def _busy_error() -> sqlite3.OperationalError:
    """What ``sqlite3`` raises when a statement meets another connection's lock."""
    error = sqlite3.OperationalError("database is locked")
    error.sqlite_errorcode = sqlite3.SQLITE_BUSY
    error.sqlite_errorname = "SQLITE_BUSY"
    return error


async def test_on_commit_runs_once_per_committed_transaction(db: Database, tmp_path: Path) -> None:
    committed: list[int] = []
    attempts: list[int] = []
    await db.run_journal_write(_insert(1, "a"), on_commit=committed.append)

    failed: list[None] = []
    with pytest.raises(ValueError, match="work failed"):
        await db.run_journal_write(_raise_value_error, on_commit=failed.append)
    assert failed == []

    def busy_once(conn: sqlite3.Connection) -> int:
        # Busy inside the work: the inline attempt (row written, then the error) must roll back
        # and the whole transaction must run again on a worker thread.
        attempts.append(threading.get_ident())
        conn.execute("INSERT INTO notes (k, v) VALUES (3, 'c')")
        if len(attempts) == 1:
            raise _busy_error()
        return 3

    before = db.stats
    await db.run_journal_write(busy_once, on_commit=committed.append)
    assert len(attempts) == 2
    assert attempts[0] == threading.get_ident() != attempts[1]  # inline, then a worker thread
    assert _delta(db.stats, before) == {"busy_fallbacks": 1, "thread_writes": 1}

    with _lock_holder(_path(tmp_path)) as other:
        fallback = asyncio.create_task(
            db.run_journal_write(_insert(4, "d"), on_commit=committed.append)
        )
        await _until(lambda: db.stats.busy_fallbacks > before.busy_fallbacks + 1)
        assert committed == [1, 3]
        other.execute("ROLLBACK")
        async with asyncio.timeout(DEADLINE):
            await fallback
    await db.run_journal_write(_insert(5, "e"), on_commit=committed.append, inline=False)
    assert committed == [1, 3, 4, 5]
    assert _committed(_path(tmp_path)) == [(1, "a"), (3, "c"), (4, "d"), (5, "e")]


async def test_checkpoints_run_on_a_thread_and_aclose_leaves_nothing_behind(
    tmp_path: Path,
) -> None:
    database = await _open(tmp_path)
    loop_thread = threading.get_ident()
    checkouts: list[int] = []
    captured: list[sqlite3.Connection] = []

    def on_checkout(*_: Any) -> None:
        checkouts.append(threading.get_ident())

    # All writes below are inline: only a checkpoint checks a pooled connection out.
    event.listen(database.session_engine, "checkout", on_checkout)
    try:
        before = database.stats
        for key in range(INLINE_CHECKPOINT_EVERY + 1):
            await database.run_journal_write(_insert(key, "x"))
        await database.run_journal_read(captured.append)
        assert _delta(database.stats, before).get("inline_writes") == INLINE_CHECKPOINT_EVERY + 1
    finally:
        await database.aclose()
    stats = database.stats
    assert stats.checkpoints >= 1
    assert stats.checkpoint_failures == 0
    assert checkouts
    assert loop_thread not in checkouts
    assert asyncio.all_tasks() == {asyncio.current_task()}
    with pytest.raises(sqlite3.ProgrammingError):
        captured[0].execute("SELECT 1")
    assert len(_committed(_path(tmp_path))) == INLINE_CHECKPOINT_EVERY + 1


async def test_a_failed_checkpoint_is_counted_and_harmless(tmp_path: Path) -> None:
    database = await _open(tmp_path)

    def refuse(*_: Any) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    event.listen(database.session_engine, "checkout", refuse)
    try:
        for key in range(INLINE_CHECKPOINT_EVERY + 1):
            await database.run_journal_write(_insert(key, "x"))
    finally:
        await database.aclose()
    assert (database.stats.checkpoints, database.stats.checkpoint_failures) == (0, 1)
    assert len(_committed(_path(tmp_path))) == INLINE_CHECKPOINT_EVERY + 1


async def test_inline_false_on_the_call_uses_the_thread_path(db: Database, tmp_path: Path) -> None:
    before = db.stats
    threads: list[int] = []

    def where(conn: sqlite3.Connection) -> list[tuple[int, str]]:
        threads.append(threading.get_ident())
        return _select(conn)

    await db.run_journal_write(_insert(1, "a"), inline=False)
    assert await db.run_journal_read(where, inline=False) == [(1, "a")]
    assert threads[0] != threading.get_ident()
    assert _delta(db.stats, before) == {"thread_writes": 1, "thread_reads": 1}
    assert _committed(_path(tmp_path)) == [(1, "a")]


async def test_inline_false_on_open_uses_the_thread_path(tmp_path: Path) -> None:
    database = await _open(tmp_path, inline=False)
    try:
        assert not database.inline
        before = database.stats
        await database.run_journal_write(_insert(1, "a"))
        assert await database.run_journal_read(_select) == [(1, "a")]
        assert _delta(database.stats, before) == {"thread_writes": 1, "thread_reads": 1}
    finally:
        await database.aclose()


async def test_storage_open_threads_inline_transactions(tmp_path: Path) -> None:
    async with await SqliteStorage.open(tmp_path / "on.db") as storage:
        assert storage.database.inline
    async with await SqliteStorage.open(tmp_path / "off.db", inline_transactions=False) as storage:
        assert not storage.database.inline
    async with await SqliteStorage.open(":memory:") as storage:
        assert not storage.database.inline  # nothing to gain: no thread hop to save


async def test_another_thread_takes_the_thread_path(db: Database) -> None:
    await db.run_journal_write(_insert(1, "a"))
    before = db.stats
    rows = await asyncio.to_thread(asyncio.run, db.run_journal_read(_select))
    assert rows == [(1, "a")]
    assert _delta(db.stats, before) == {"thread_reads": 1}
