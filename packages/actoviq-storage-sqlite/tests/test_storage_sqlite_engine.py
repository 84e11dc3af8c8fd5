"""Engine: lazy imports, PRAGMAs, schema versions, fault injection, fail-closed reads."""

from __future__ import annotations

import asyncio
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
    ItemRow,
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
    from actoviq.storage.sqlite._engine import _upgrade_sync  # pyright: ignore[reportPrivateUsage]

    async with await SqliteStorage.open(":memory:") as storage, storage.database.write() as conn:
        await conn.execute(text("UPDATE storage_v2_schema SET version = 2"))
        with pytest.raises(StorageSchemaError, match="schema version 2"):
            await conn.run_sync(_upgrade_sync)


def _indexes(conn: Connection) -> set[str]:
    rows = conn.exec_driver_sql(
        "SELECT name FROM sqlite_master WHERE type = 'index' "
        "AND tbl_name = 'storage_v2_session_items'"
    )
    return {str(row[0]) for row in rows}


async def test_a_database_created_at_0001_is_upgraded_to_0002(tmp_path: Path) -> None:
    from alembic import command

    from actoviq.storage.sqlite._engine import (
        SHIPPED_REVISIONS,
        _alembic_config,  # pyright: ignore[reportPrivateUsage]
        known_revisions,
    )

    db = tmp_path / "old.db"
    engine = create_engine(f"sqlite:///{db}")
    with engine.begin() as conn:
        config = _alembic_config()
        config.attributes["connection"] = conn
        command.upgrade(config, "0001")
        assert "storage_v2_session_items_tail" in _indexes(conn)
        conn.exec_driver_sql(
            "INSERT INTO storage_v2_sessions VALUES "
            "('default', 's', 1, '{}', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', 1)"
        )
        conn.exec_driver_sql(
            "INSERT INTO storage_v2_session_items VALUES ('default', 's', 1, 'a', 'text', "
            '\'{"type":"text","text":"a"}\', \'2026-01-01T00:00:00.000Z\')'
        )
    engine.dispose()
    assert known_revisions() == (set(SHIPPED_REVISIONS), SHIPPED_REVISIONS[-1])
    assert SHIPPED_REVISIONS[-1] == "0002"
    async with await SqliteStorage.open(db) as storage:
        async with storage.database.read() as conn:
            version = (await conn.execute(text("SELECT version_num FROM alembic_version"))).all()
            indexes = await conn.run_sync(_indexes)
        assert [row[0] for row in version] == ["0002"]
        assert "storage_v2_session_items_tail" not in indexes
        loaded = await storage.sessions.load(tenant_id=T, session_id="s")
        assert [(i.sequence, i.item_id, i.payload) for i in loaded.items] == [
            (1, "a", {"type": "text", "text": "a"})
        ]
        record = await storage.sessions.append(
            tenant_id=T, session_id="s", expected_revision=1, items=_items("b")
        )
        assert (record.revision, record.last_sequence) == (2, 2)
    # Re-opening at head is a no-op; tail reads still use the primary key.
    async with await SqliteStorage.open(db) as storage:
        async with storage.database.read() as conn:
            plan = (
                await conn.execute(
                    text(
                        "EXPLAIN QUERY PLAN SELECT * FROM storage_v2_session_items "
                        "WHERE tenant_id = 'default' AND session_id = 's' AND sequence > 1 "
                        "ORDER BY sequence"
                    )
                )
            ).all()
        assert any("sqlite_autoindex_storage_v2_session_items_1" in str(row[-1]) for row in plan)


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
        real_insert = DriverJournalSql.insert_items

        def fail_items(self: DriverJournalSql, conn: Any, rows: list[ItemRow]) -> None:
            # The first row really goes in, then the "disk" fails: all of it must roll back.
            real_insert(self, conn, rows[:1])
            if state["armed"]:
                raise DiskFull("disk full")
            real_insert(self, conn, rows[1:])

        assert isinstance(storage.database.journal_sql, DriverJournalSql)
        monkeypatch.setattr(DriverJournalSql, "insert_items", fail_items)
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
            if state["armed"] and statement.startswith("INSERT INTO storage_v2_session_items"):
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
                await conn.execute(text("UPDATE storage_v2_session_items SET kind = 'x'"))


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
    } <= names
    assert "actoviq/__init__.py" not in names
    assert "actoviq/storage/__init__.py" not in names
    assert "actoviq/storage/sqlite/py.typed" in names


@pytest.mark.parametrize(
    ("payload_json", "message"),
    [
        ('{"a":1},{"b":2}', "not valid JSON"),  # would add an element to a bulk parse
        ('{"a":NaN}', "not valid JSON"),
        ('{"a":1e400}', "non-finite number"),  # overflows to inf without a NaN literal
        ("[1]", "must be a JSON object"),
    ],
)
async def test_corrupt_journal_payload_fails_closed(
    tmp_path: Path, payload_json: str, message: str
) -> None:
    async with await SqliteStorage.open(tmp_path / "j.db") as storage:
        await storage.sessions.create(tenant_id=T, session_id="s")
        await storage.sessions.append(
            tenant_id=T, session_id="s", expected_revision=0, items=_items("a", "b")
        )
        async with storage.database.write() as conn:
            await conn.execute(
                text(
                    "INSERT INTO storage_v2_session_items VALUES "
                    "(:t, 's', 3, 'c', 'text', :p, '2026-01-01T00:00:00.000Z')"
                ),
                {"t": T, "p": payload_json},
            )
        # StorageDataError (STORAGE_DATA_INVALID) from the per-row fallback of the bulk decode.
        with pytest.raises(StorageDataError, match=message):
            await storage.sessions.load(tenant_id=T, session_id="s")
        good = await storage.sessions.load(tenant_id=T, session_id="s", limit=2)
        assert [i.payload for i in good.items] == [
            {"type": "text", "text": "a"},
            {"type": "text", "text": "b"},
        ]
