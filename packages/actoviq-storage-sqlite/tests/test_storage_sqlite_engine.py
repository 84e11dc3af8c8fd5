"""Engine: lazy imports, PRAGMAs, schema versions, fault injection, fail-closed reads."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import Connection

from actoviq.runtime import (
    NewSessionItem,
    StorageDataError,
    StorageUnavailableError,
)
from actoviq.storage.sqlite import SqliteStorage, StorageSchemaError
from actoviq.storage.sqlite._journal_sql import (
    CoreJournalSql,
    DriverJournalSql,
    TurnInsert,
)

T = "default"
PACKAGE = Path(__file__).resolve().parents[1]


def _items(*ids: str) -> list[NewSessionItem]:
    return [
        NewSessionItem(item_id=i, kind="text", payload={"type": "text", "text": i}) for i in ids
    ]


def test_import_does_not_load_sqlalchemy_or_drivers() -> None:
    code = (
        "import sys, actoviq.storage.sqlite as m; "
        "bad = [n for n in ('sqlalchemy', 'aiosqlite', 'asyncpg', 'alembic') if n in sys.modules]; "
        "print(','.join(bad))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


async def test_pragmas_and_wal(tmp_path: Path) -> None:
    async with await SqliteStorage.open(tmp_path / "nested" / "dir" / "a.db") as storage:
        async with storage.database.read() as conn:
            mode = (await conn.execute(text("PRAGMA journal_mode"))).scalar_one()
            busy = (await conn.execute(text("PRAGMA busy_timeout"))).scalar_one()
            keys = (await conn.execute(text("PRAGMA foreign_keys"))).scalar_one()
        assert (mode, busy, keys) == ("wal", 5000, 1)
        assert storage.dialect == "sqlite"


async def test_memory_database_shares_one_connection() -> None:
    async with await SqliteStorage.open(":memory:") as storage:
        await storage.sessions.create(tenant_id=T, session_id="s")
        assert await storage.sessions.get(tenant_id=T, session_id="s") is not None


async def test_empty_filename_and_missing_driver(tmp_path: Path) -> None:
    with pytest.raises(StorageDataError, match="filename must be a non-empty string"):
        await SqliteStorage.open("")
    with pytest.raises(StorageUnavailableError) as caught:
        await SqliteStorage.open("mysql+nosuchdriver://u@h/db")
    assert caught.value.code == "STORAGE_UNAVAILABLE"
    assert caught.value.retryable


async def test_reopen_is_idempotent_and_newer_schema_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "v.db"
    async with await SqliteStorage.open(db) as storage:
        await storage.sessions.create(tenant_id=T, session_id="s")
    async with await SqliteStorage.open(db) as storage:
        assert await storage.sessions.get(tenant_id=T, session_id="s") is not None
        async with storage.database.write() as conn:
            await conn.execute(text("UPDATE alembic_version SET version_num = '9999_future'"))
    with pytest.raises(StorageSchemaError, match="newer actoviq-storage-sqlite") as caught:
        await SqliteStorage.open(db)
    assert caught.value.code == "STORAGE_DATA_INVALID"
    from actoviq.storage.sqlite._schema import _upgrade_sync  # pyright: ignore[reportPrivateUsage]

    async with await SqliteStorage.open(":memory:") as storage, storage.database.write() as conn:
        await conn.execute(text("UPDATE storage_v2_schema SET version = 3"))
        with pytest.raises(StorageSchemaError, match="schema version 3"):
            await conn.run_sync(_upgrade_sync)


def _indexes(conn: Connection) -> set[str]:
    rows = conn.exec_driver_sql(
        "SELECT name FROM sqlite_master WHERE type = 'index' "
        "AND tbl_name = 'storage_v2_session_items'"
    )
    return {str(row[0]) for row in rows}


def _tables(conn: Connection) -> set[str]:
    rows = conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type = 'table'")
    return {str(row[0]) for row in rows}


_V1_ITEMS = [
    ("s", 1, "a", "text", '{"type":"text","text":"a"}', "2026-01-01T00:00:00.000Z"),
    ("s", 2, "b", "tool_call", '{"args":[1,2.5]}', "2026-01-01T00:00:01.000Z"),
    ("s", 3, "c", "text", '{"type":"text","text":"c"}', "2026-01-01T00:00:01.000Z"),
    ("t", 1, "a", "text", '{"type":"text","text":"other session"}', "2026-01-01T00:00:00.000Z"),
]


def _v1_database(db: Path, target: str) -> None:
    """A database at Alembic revision ``target`` (0001 or 0002) holding :data:`_V1_ITEMS`."""
    from alembic import command

    from actoviq.storage.sqlite._schema import _alembic_config  # pyright: ignore[reportPrivateUsage]

    engine = create_engine(f"sqlite:///{db}")
    with engine.begin() as conn:
        config = _alembic_config()
        config.attributes["connection"] = conn
        command.upgrade(config, target)
        for session, last in (("s", 3), ("t", 1)):
            conn.exec_driver_sql(
                "INSERT INTO storage_v2_sessions VALUES (?, ?, 1, '{}', "
                "'2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', ?)",
                (T, session, last),
            )
        for row in _V1_ITEMS:
            conn.exec_driver_sql(
                "INSERT INTO storage_v2_session_items VALUES (?, ?, ?, ?, ?, ?, ?)", (T, *row)
            )
    engine.dispose()


async def test_a_version_1_database_is_upgraded_to_turns(tmp_path: Path) -> None:
    from actoviq.storage.sqlite._schema import SHIPPED_REVISIONS, known_revisions

    db = tmp_path / "old.db"
    _v1_database(db, "0001")
    engine = create_engine(f"sqlite:///{db}")
    with engine.connect() as conn:
        assert "storage_v2_session_items_tail" in _indexes(conn)
    engine.dispose()
    assert known_revisions() == (set(SHIPPED_REVISIONS), SHIPPED_REVISIONS[-1])
    assert SHIPPED_REVISIONS[-1] == "0006"
    async with await SqliteStorage.open(db) as storage:
        async with storage.database.read() as conn:
            version = (await conn.execute(text("SELECT version_num FROM alembic_version"))).all()
            marker = (await conn.execute(text("SELECT version FROM storage_v2_schema"))).all()
            tables = await conn.run_sync(_tables)
            turns = (
                await conn.execute(
                    text(
                        "SELECT session_id, first_sequence, last_sequence, kinds_json, "
                        "item_created_at_json FROM storage_v2_session_turns ORDER BY session_id"
                    )
                )
            ).all()
        assert [row[0] for row in version] == [SHIPPED_REVISIONS[-1]]
        assert [row[0] for row in marker] == [2]
        assert "storage_v2_session_items" not in tables
        assert [tuple(row) for row in turns] == [
            (
                "s",
                1,
                3,
                '["text","tool_call","text"]',
                json.dumps([r[5] for r in _V1_ITEMS[:3]], separators=(",", ":")),
            ),
            ("t", 1, 1, '"text"', None),
        ]
        loaded = await storage.sessions.load(tenant_id=T, session_id="s")
        assert [
            (
                i.sequence,
                i.item_id,
                i.kind,
                json.dumps(i.payload, separators=(",", ":")),
                i.created_at,
            )
            for i in loaded.items
        ] == [row[1:] for row in _V1_ITEMS[:3]]
        # Ids from before the upgrade still count: a clash is refused, a replay is a no-op.
        with pytest.raises(StorageDataError, match="already exist with different content"):
            await storage.sessions.append(
                tenant_id=T, session_id="s", expected_revision=1, items=_items("b")
            )
        replay = await storage.sessions.append(
            tenant_id=T,
            session_id="s",
            expected_revision=0,
            items=[NewSessionItem(item_id="a", kind="text", payload={"type": "text", "text": "a"})],
        )
        assert (replay.revision, replay.last_sequence) == (1, 3)
        record = await storage.sessions.append(
            tenant_id=T, session_id="s", expected_revision=1, items=_items("d")
        )
        assert (record.revision, record.last_sequence) == (2, 4)
    # Re-opening at head is a no-op; turn reads use the primary key.
    async with await SqliteStorage.open(db) as storage:
        async with storage.database.read() as conn:
            plan = (
                await conn.execute(
                    text(
                        "EXPLAIN QUERY PLAN SELECT * FROM storage_v2_session_turns "
                        "WHERE tenant_id = 'default' AND session_id = 's' AND last_sequence > 1 "
                        "ORDER BY last_sequence"
                    )
                )
            ).all()
        assert any("sqlite_autoindex_storage_v2_session_turns_1" in str(row[-1]) for row in plan)
        loaded = await storage.sessions.load(tenant_id=T, session_id="s")
        assert [i.item_id for i in loaded.items] == ["a", "b", "c", "d"]


async def test_the_turns_upgrade_downgrades_back_to_the_items(tmp_path: Path) -> None:
    from alembic import command

    from actoviq.storage.sqlite._schema import _alembic_config  # pyright: ignore[reportPrivateUsage]

    db = tmp_path / "down.db"
    _v1_database(db, "0002")
    async with await SqliteStorage.open(db):
        pass
    engine = create_engine(f"sqlite:///{db}")
    with engine.begin() as conn:
        config = _alembic_config()
        config.attributes["connection"] = conn
        command.downgrade(config, "0002")
        rows = conn.exec_driver_sql(
            "SELECT session_id, sequence, item_id, kind, payload_json, created_at "
            "FROM storage_v2_session_items ORDER BY session_id, sequence"
        ).all()
        marker = conn.exec_driver_sql("SELECT version FROM storage_v2_schema").scalar_one()
        assert "storage_v2_session_turns" not in _tables(conn)
        columns = [r[1] for r in conn.exec_driver_sql("PRAGMA table_info(storage_v2_sessions)")]
    engine.dispose()
    assert [tuple(r) for r in rows] == _V1_ITEMS
    assert marker == 1
    assert "incarnation" not in columns


def test_opening_a_database_at_head_does_not_import_alembic(tmp_path: Path) -> None:
    db = tmp_path / "head.db"

    async def create() -> None:
        async with await SqliteStorage.open(db) as storage:
            await storage.sessions.create(tenant_id=T, session_id="s")

    asyncio.run(create())
    code = (
        "import asyncio, sys\n"
        "from actoviq.storage.sqlite import SqliteStorage\n"
        "async def main():\n"
        f"    async with await SqliteStorage.open({str(db)!r}) as storage:\n"
        f"        assert await storage.sessions.get(tenant_id={T!r}, session_id='s')\n"
        "asyncio.run(main())\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] == 'alembic'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


class DiskFull(OSError):
    code = "ENOSPC"


async def test_failed_item_insert_rolls_back_and_propagates_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with await SqliteStorage.open(tmp_path / "f.db") as storage:
        await storage.sessions.create(tenant_id=T, session_id="s")
        state = {"armed": True}
        real_insert = DriverJournalSql.insert_turn

        def fail_turn(self: DriverJournalSql, conn: Any, row: TurnInsert) -> None:
            # The row really goes in, then the "disk" fails: all of it must roll back.
            real_insert(self, conn, row)
            if state["armed"]:
                raise DiskFull("disk full")

        assert isinstance(storage.database.journal_sql, DriverJournalSql)
        monkeypatch.setattr(DriverJournalSql, "insert_turn", fail_turn)
        with pytest.raises(DiskFull) as caught:
            await storage.sessions.append(
                tenant_id=T, session_id="s", expected_revision=0, items=_items("a", "b")
            )
        assert caught.value.code == "ENOSPC"
        record = await storage.sessions.get(tenant_id=T, session_id="s")
        assert record is not None
        assert (record.revision, record.last_sequence) == (0, 0)
        state["armed"] = False
        again = await storage.sessions.append(
            tenant_id=T, session_id="s", expected_revision=0, items=_items("a", "b")
        )
        assert (again.revision, again.last_sequence) == (1, 2)


async def test_failed_core_insert_rolls_back_and_propagates_unchanged() -> None:
    # ``:memory:`` runs the journal in SQLAlchemy Core (the PostgreSQL path), where cursor events
    # fire for every statement.
    async with await SqliteStorage.open(":memory:") as storage:
        assert isinstance(storage.database.journal_sql, CoreJournalSql)
        await storage.sessions.create(tenant_id=T, session_id="s")
        state = {"armed": True}

        def fail_items(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
            if state["armed"] and statement.startswith("INSERT INTO storage_v2_session_turns"):
                raise DiskFull("disk full")

        event.listen(storage.database.session_engine, "before_cursor_execute", fail_items)
        with pytest.raises(DiskFull):
            await storage.sessions.append(
                tenant_id=T, session_id="s", expected_revision=0, items=_items("a", "b")
            )
        record = await storage.sessions.get(tenant_id=T, session_id="s")
        assert record is not None
        assert (record.revision, record.last_sequence) == (0, 0)
        state["armed"] = False
        again = await storage.sessions.append(
            tenant_id=T, session_id="s", expected_revision=0, items=_items("a", "b")
        )
        assert (again.revision, again.last_sequence) == (1, 2)
        loaded = await storage.sessions.load(tenant_id=T, session_id="s")
        assert [item.item_id for item in loaded.items] == ["a", "b"]


async def test_corrupt_rows_fail_closed(tmp_path: Path) -> None:
    async with await SqliteStorage.open(tmp_path / "c.db") as storage:
        await storage.sessions.create(tenant_id=T, session_id="s")
        await storage.sessions.append(
            tenant_id=T, session_id="s", expected_revision=0, items=_items("a")
        )
        async with storage.database.write() as conn:
            await conn.execute(
                text(
                    "INSERT INTO storage_v2_session_snapshots VALUES "
                    "(:t, 's', 1, 2, '{not-json', '2026-01-01T00:00:00.000Z')"
                ),
                {"t": T},
            )
            await conn.execute(text("UPDATE storage_v2_sessions SET revision = 2"))
        with pytest.raises(StorageDataError) as caught:
            await storage.sessions.load(tenant_id=T, session_id="s")
        assert caught.value.code == "STORAGE_DATA_INVALID"
        full = await storage.sessions.load(tenant_id=T, session_id="s", after_sequence=0)
        assert [i.item_id for i in full.items] == ["a"]
        async with storage.database.write() as conn:
            await conn.execute(text("UPDATE storage_v2_sessions SET metadata_json = '[1]'"))
        with pytest.raises(StorageDataError, match="must be a JSON object"):
            await storage.sessions.get(tenant_id=T, session_id="s")


async def test_journal_rows_are_append_only(tmp_path: Path) -> None:
    async with await SqliteStorage.open(tmp_path / "a.db") as storage:
        await storage.sessions.create(tenant_id=T, session_id="s")
        await storage.sessions.append(
            tenant_id=T, session_id="s", expected_revision=0, items=_items("a")
        )
        with pytest.raises(Exception, match="append-only"):
            async with storage.database.write() as conn:
                await conn.execute(text("UPDATE storage_v2_session_turns SET kinds_json = '\"x\"'"))


@pytest.mark.slow
def test_wheel_ships_the_migrations(tmp_path: Path) -> None:
    uv = os.environ.get("UV") or shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not on PATH (and UV is not set)")
    done = subprocess.run(
        [uv, "build", "--wheel", "-o", str(tmp_path), str(PACKAGE)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    [wheel] = list(tmp_path.glob("actoviq_storage_sqlite-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    base = "actoviq/storage/sqlite/migrations/"
    assert {
        base + "env.py",
        base + "script.py.mako",
        base + "versions/0001_initial.py",
        base + "versions/0002_drop_tail_index.py",
        base + "versions/0003_session_turns.py",
        base + "versions/0004_checkpoint_lease.py",
        base + "versions/0005_ledgers_and_workflow_runs.py",
        base + "versions/0006_artifact_blobs.py",
        base + "schema_v1.py",
    } <= names
    assert "actoviq/__init__.py" not in names
    assert "actoviq/storage/__init__.py" not in names
    assert "actoviq/storage/sqlite/py.typed" in names


@pytest.mark.parametrize(
    ("payloads_json", "message"),
    [
        ('[{"a":1}],[{"b":2}]', "not valid JSON"),  # would add an element to a bulk parse
        ('[{"a":NaN}]', "not valid JSON"),
        ('[{"a":1e400}]', "non-finite number"),  # overflows to inf without a NaN literal
        ("[[1]]", "the turn's payload objects"),
        ('[{"a":1},{"b":2}]', "the turn's payload objects"),  # two payloads for one item
    ],
)
async def test_corrupt_journal_payload_fails_closed(
    tmp_path: Path, payloads_json: str, message: str
) -> None:
    async with await SqliteStorage.open(tmp_path / "j.db") as storage:
        await storage.sessions.create(tenant_id=T, session_id="s")
        await storage.sessions.append(
            tenant_id=T, session_id="s", expected_revision=0, items=_items("a", "b")
        )
        async with storage.database.write() as conn:
            await conn.execute(
                text(
                    "INSERT INTO storage_v2_session_turns VALUES "
                    "(:t, 's', 3, 3, '2026-01-01T00:00:00.000Z', '[\"c\"]', '\"text\"', NULL, :p)"
                ),
                {"t": T, "p": payloads_json},
            )
            await conn.execute(text("UPDATE storage_v2_sessions SET last_sequence = 3"))
        # StorageDataError (STORAGE_DATA_INVALID): the corrupt turn is never skipped.
        with pytest.raises(StorageDataError, match=message):
            await storage.sessions.load(tenant_id=T, session_id="s")
        good = await storage.sessions.load(tenant_id=T, session_id="s", limit=2)
        assert [i.payload for i in good.items] == [
            {"type": "text", "text": "a"},
            {"type": "text", "text": "b"},
        ]


async def test_a_missing_turn_fails_closed(tmp_path: Path) -> None:
    async with await SqliteStorage.open(tmp_path / "m.db") as storage:
        await storage.sessions.create(tenant_id=T, session_id="s")
        await storage.sessions.append(
            tenant_id=T, session_id="s", expected_revision=0, items=_items("a")
        )
        async with storage.database.write() as conn:
            await conn.execute(text("UPDATE storage_v2_sessions SET last_sequence = 2"))
        # StorageDataError: the session row promises an item no turn holds.
        with pytest.raises(StorageDataError, match="missing turns"):
            await storage.sessions.load(tenant_id=T, session_id="s")
