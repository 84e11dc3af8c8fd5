"""Packed tail reads (``_journal_packed``): the same items as the turn rows, or the rows decide.

A load on a SQLite file reads the tail as one row of JSON array texts joined by SQLite. These tests
hold it to the row decoder: equal items for valid journals (windows starting inside a turn, mixed
kinds, several appends), None for anything it cannot prove, and, through a real file, the same
typed ``StorageDataError`` as before for every corrupt row (bad JSON, wrong column types, a BLOB
holding valid JSON, gaps and overlaps, a payload that is not an object).
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from actoviq.runtime import NewSessionItem, StorageDataError
from actoviq.storage.sqlite import SqliteStorage
from actoviq.storage.sqlite._journal import decode_turns
from actoviq.storage.sqlite._journal_packed import decode_packed
from actoviq.storage.sqlite._journal_sql import DriverJournalSql
from actoviq.storage.sqlite._sessions import PACK_FROM_ITEMS, SqlSessionStore

T = "default"
STAMP = "2026-01-01T00:00:00.000Z"


def _items(*ids: str, kind: str = "text") -> list[NewSessionItem]:
    return [
        NewSessionItem(item_id=i, kind=kind, payload={"type": "text", "text": i, "n": 1.5})
        for i in ids
    ]


def _raw(path: Path) -> contextlib.closing[sqlite3.Connection]:
    # closing(): `with connect()` only commits, it never closes the connection
    return contextlib.closing(sqlite3.connect(path))


def _read(path: Path, after: int) -> tuple[Any, list[Any]]:
    sql = DriverJournalSql()
    with _raw(path) as raw, raw:
        packed = sql.packed_turns(raw, T, "s", after)
        rows = sql.turns(raw, T, "s", after, None)
    return packed, rows


async def _journal(path: Path) -> None:
    async with await SqliteStorage.open(path) as storage:
        sessions = storage.sessions
        await sessions.create(tenant_id=T, session_id="s")
        await sessions.create(tenant_id=T, session_id="other")
        await sessions.append(
            tenant_id=T, session_id="other", expected_revision=0, items=_items("o")
        )
        batches = [
            _items("a", "b"),
            [*_items("c"), *_items("d", kind="tool_call")],  # kinds stored as an array
            _items("e"),
            _items("f", "g", "h"),
        ]
        for revision, batch in enumerate(batches):
            await sessions.append(
                tenant_id=T, session_id="s", expected_revision=revision, items=batch
            )


async def test_packed_tails_decode_to_the_row_decoders_items(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    await _journal(path)
    for after in range(9):  # every window start, inside turns and on their edges
        packed, rows = _read(path, after)
        items = decode_packed(packed, after, None)
        assert items is not None  # the fast path took it (None would mean the rows decided)
        assert items == decode_turns(rows, after, None)
        assert items.sequences == range(after + 1, 9)
        assert items.item_ids == tuple("abcdefgh"[after:])
    packed, rows = _read(path, 1)
    assert decode_packed(packed, 1, 5) == decode_turns(rows, 1, 5)  # cut at an end too
    assert decode_packed(packed, 1, 5) is not None
    async with await SqliteStorage.open(path) as storage:
        loaded = await storage.sessions.load(tenant_id=T, session_id="s")
        assert [i.kind for i in loaded.items] == ["text"] * 3 + ["tool_call"] + ["text"] * 4
        assert loaded.items[0].payload == {"type": "text", "text": "a", "n": 1.5}
        assert isinstance(storage.sessions, SqlSessionStore)
        changes = await storage.sessions.load_changes(tenant_id=T, session_id="s", after_sequence=3)
        assert [i.item_id for i in changes.items] == ["d", "e", "f", "g", "h"]


async def test_an_empty_tail_is_packed_as_no_items(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    await _journal(path)
    packed, _ = _read(path, 8)
    assert packed[0] == 0
    items = decode_packed(packed, 8, None)
    assert items is not None and len(items) == 0 and items.sequences == range(9, 9)


async def test_rows_the_packed_form_cannot_prove_load_through_the_rows(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    stamps = ['2026-01-01T00:00:00.000Z"', "back\\slash", 'x","y']
    async with await SqliteStorage.open(path) as storage:
        sessions = storage.sessions
        await sessions.create(tenant_id=T, session_id="s")
        mixed = [
            NewSessionItem(item_id="a", kind="text", payload={}, created_at="T-a"),
            NewSessionItem(item_id="b", kind="text", payload={}),
        ]
        await sessions.append(
            tenant_id=T, session_id="s", expected_revision=0, items=mixed, updated_at=STAMP
        )
        for revision, stamp in enumerate(stamps, start=1):
            await sessions.append(
                tenant_id=T,
                session_id="s",
                expected_revision=revision,
                items=[NewSessionItem(item_id=f"i{revision}", kind="text", payload={})],
                updated_at=stamp,
            )
        packed, rows = _read(path, 0)
        assert decode_packed(packed, 0, None) is None  # per-item stamps: the rows decide
        for after in (2, 3, 4):  # each odd stamp alone
            assert decode_packed(_read(path, after)[0], after, None) is None
        loaded = await sessions.load(tenant_id=T, session_id="s")
        assert loaded.items == decode_turns(rows, 0, None)
        assert [i.created_at for i in loaded.items] == ["T-a", STAMP, *stamps]


# Each case: the SQL that damages the journal of a session holding items 1-2 (one turn), and the
# message of the typed error. The row decoder's message proves the rows decided.
_CORRUPT = [
    (  # valid JSON in a BLOB: the join would read it as text
        "INSERT INTO storage_v2_session_turns VALUES "
        "('default', 's', @N, @N, 'T', '[\"c\"]', '\"text\"', NULL, CAST('[{}]' AS BLOB))",
        "payloads_json must be text",
    ),
    (
        "INSERT INTO storage_v2_session_turns VALUES "
        "('default', 's', CAST('@N' AS BLOB), @N, 'T', '[\"c\"]', '\"text\"', NULL, '[{}]')",
        "last_sequence must be an integer",
    ),
    (
        "INSERT INTO storage_v2_session_turns VALUES "
        "('default', 's', @N, 2.5, 'T', '[\"c\"]', '\"text\"', NULL, '[{}]')",
        "first_sequence must be an integer",
    ),
    (
        "INSERT INTO storage_v2_session_turns VALUES "
        "('default', 's', @N, @N, CAST('T' AS BLOB), '[\"c\"]', '\"text\"', NULL, '[{}]')",
        "created_at must be text",
    ),
    (
        "INSERT INTO storage_v2_session_turns VALUES "
        "('default', 's', @N, @N, 'T', '[\"c\"]', '\"text\"', NULL, '[{\"a\":NaN}]')",
        "not valid JSON",
    ),
    (
        "INSERT INTO storage_v2_session_turns VALUES "
        "('default', 's', @N, @N, 'T', '[\"c\"]', '\"text\"', NULL, '[{}],[{}]')",
        "not valid JSON",
    ),
    (
        "INSERT INTO storage_v2_session_turns VALUES "
        "('default', 's', @N, @N, 'T', '[\"c\"]', '\"text\"', NULL, '[[1]]')",
        "the turn's payload objects",
    ),
    (
        "INSERT INTO storage_v2_session_turns VALUES "
        "('default', 's', @N, @N, 'T', '[\"c\"]', '\"text\"', NULL, '[\"not an object\"]')",
        "the turn's payload objects",
    ),
    (
        "INSERT INTO storage_v2_session_turns VALUES "
        "('default', 's', @N, @N, 'T', '[7]', '\"text\"', NULL, '[{}]')",
        "the turn's item ids",
    ),
    (
        "INSERT INTO storage_v2_session_turns VALUES "
        "('default', 's', @N, @N, 'T', '[\"c\"]', '7', NULL, '[{}]')",
        "the turn's kinds",
    ),
    (  # a gap: two items missing
        "INSERT INTO storage_v2_session_turns VALUES "
        "('default', 's', @G, @G, 'T', '[\"c\"]', '\"text\"', NULL, '[{}]')",
        "gap or overlap",
    ),
    (  # an overlap: the last item again
        "INSERT INTO storage_v2_session_turns VALUES "
        "('default', 's', @N, @P, 'T', '[\"c\",\"d\"]', '\"text\"', NULL, '[{},{}]')",
        "gap or overlap",
    ),
]


@pytest.mark.parametrize(("damage", "message"), _CORRUPT)
async def test_corrupt_rows_fail_closed_through_the_packed_read(
    tmp_path: Path, damage: str, message: str
) -> None:
    path = tmp_path / "c.db"
    async with await SqliteStorage.open(path) as storage:
        sessions = storage.sessions
        assert isinstance(sessions, SqlSessionStore)
        await sessions.create(tenant_id=T, session_id="s")
        first = [f"a{n}" for n in range(PACK_FROM_ITEMS)]  # long enough to be read packed
        await sessions.append(
            tenant_id=T, session_id="s", expected_revision=0, items=_items(*first)
        )
        with _raw(path) as raw, raw:
            n = PACK_FROM_ITEMS + 1
            raw.execute(
                damage.replace("@N", str(n)).replace("@G", str(n + 2)).replace("@P", str(n - 1))
            )
            raw.execute(
                "UPDATE storage_v2_sessions SET revision = 2, "
                f"last_sequence = {PACK_FROM_ITEMS + 1}"
            )
        packed, _ = _read(path, 0)
        assert decode_packed(packed, 0, None) is None
        # StorageDataError (STORAGE_DATA_INVALID), the row decoder's message: never skipped
        with pytest.raises(StorageDataError, match=message) as caught:
            await sessions.load(tenant_id=T, session_id="s")
        assert caught.value.code == "STORAGE_DATA_INVALID"
        with pytest.raises(StorageDataError, match=message):
            await sessions.load_changes(tenant_id=T, session_id="s", after_sequence=0)
        good = await sessions.load(tenant_id=T, session_id="s", limit=PACK_FROM_ITEMS)
        assert [i.item_id for i in good.items] == first  # the rows before it


def test_turn_checks_shared_by_both_decoders() -> None:
    one_kind = [
        (1, 1, STAMP, '["a"]', '"text"', None, "[{}]"),
        (2, 3, STAMP, '["b","c"]', '"text"', None, "[{},{}]"),
    ]
    assert decode_turns(one_kind, 0, None).kinds == ("text", "text", "text")
    two_kinds = [one_kind[0], (2, 3, STAMP, '["b","c"]', '"tool_call"', None, "[{},{}]")]
    assert decode_turns(two_kinds, 0, None).kinds == ("text", "tool_call", "tool_call")
    # StorageDataError: a turn that ends before it starts, right after the one before it
    empty = [one_kind[0], (2, 1, STAMP, "[]", '"text"', None, "[]")]
    with pytest.raises(StorageDataError, match="gap or overlap"):
        decode_turns(empty, 0, None)


async def test_long_tails_are_read_packed_and_short_ones_from_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    row_reads: list[int] = []
    read_rows = DriverJournalSql.turns

    def counted(self: DriverJournalSql, conn: Any, *args: Any) -> list[Any]:
        row_reads.append(args[2])  # the ``after`` of the read
        return read_rows(self, conn, *args)

    monkeypatch.setattr(DriverJournalSql, "turns", counted)
    async with await SqliteStorage.open(tmp_path / "l.db") as storage:
        sessions = storage.sessions
        assert isinstance(sessions, SqlSessionStore)
        await sessions.create(tenant_id=T, session_id="s")
        for revision in range(PACK_FROM_ITEMS // 2 + 1):
            batch = _items(f"q{revision}", f"r{revision}")
            await sessions.append(
                tenant_id=T, session_id="s", expected_revision=revision, items=batch
            )
        row_reads.clear()
        loaded = await sessions.load(tenant_id=T, session_id="s")
        assert len(loaded.items) == PACK_FROM_ITEMS + 2 and row_reads == []  # one packed read
        changes = await sessions.load_changes(tenant_id=T, session_id="s", after_sequence=31)
        assert [i.item_id for i in changes.items] == ["r15", "q16", "r16"]
        assert row_reads == [31]  # a short tail reads its rows
