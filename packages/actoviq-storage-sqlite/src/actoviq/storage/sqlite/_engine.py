"""Engine setup: PRAGMAs, ``BEGIN IMMEDIATE`` writers, consistent readers, Alembic on open.

Only imported by :meth:`SqliteStorage.open`, so importing the package never loads SQLAlchemy.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import event, select, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import StaticPool

from actoviq.runtime.stores import StorageUnavailableError
from actoviq.storage.sqlite._tables import SCHEMA_VERSION, schema_table
from actoviq.storage.sqlite.errors import StorageSchemaError

MIGRATIONS = Path(__file__).with_name("migrations")
_WRITE = "actoviq_write"
_PG_LOCK_KEY = 0x61637476  # "actv": serialises concurrent schema upgrades on PostgreSQL


def _alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def known_revisions() -> tuple[set[str], str]:
    """Every Alembic revision this package ships, and the head."""
    script = ScriptDirectory.from_config(_alembic_config())
    head = script.get_current_head()
    if head is None:  # pragma: no cover - the wheel always ships 0001
        raise StorageSchemaError("actoviq-storage-sqlite ships no schema migrations.")
    return {rev.revision for rev in script.walk_revisions()}, head


class Database:
    """An async engine plus the transaction discipline every store uses."""

    def __init__(self, engine: AsyncEngine, *, busy_timeout_ms: int) -> None:
        self.engine = engine
        self.dialect = engine.dialect.name
        self.busy_timeout_ms = busy_timeout_ms
        # SQLite has one writer at a time; queueing in-process writers here avoids busy-polling.
        self._write_lock = asyncio.Lock() if self.dialect == "sqlite" else None

    @contextlib.asynccontextmanager
    async def write(self) -> AsyncGenerator[AsyncConnection, None]:
        """One writer transaction (``BEGIN IMMEDIATE`` on SQLite); commits on success."""
        async with contextlib.AsyncExitStack() as stack:
            if self._write_lock is not None:
                await stack.enter_async_context(self._write_lock)
            try:
                conn = await stack.enter_async_context(self.engine.connect())
                await conn.execution_options(**{_WRITE: True})
                await stack.enter_async_context(conn.begin())
            except OperationalError as error:
                raise _unavailable(error) from error
            yield conn

    @contextlib.asynccontextmanager
    async def read(self) -> AsyncGenerator[AsyncConnection, None]:
        """One read transaction: deferred ``BEGIN`` on SQLite, ``REPEATABLE READ`` on PostgreSQL."""
        async with self.engine.connect() as conn:
            if self.dialect == "postgresql":
                await conn.execution_options(isolation_level="REPEATABLE READ")
            async with conn.begin():
                yield conn

    async def aclose(self) -> None:
        """Dispose of the pool."""
        await self.engine.dispose()


def _unavailable(error: BaseException) -> StorageUnavailableError:
    return StorageUnavailableError(f"Storage is unavailable: {type(error).__name__}", cause=error)


def _install_sqlite_hooks(engine: AsyncEngine, *, busy_timeout_ms: int, wal: bool) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Stop the driver from issuing its own BEGIN; we emit BEGIN / BEGIN IMMEDIATE ourselves.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")
        cursor.execute("PRAGMA foreign_keys = ON")
        if wal:
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Connection) -> None:
        writer = bool(conn.get_execution_options().get(_WRITE))
        conn.exec_driver_sql("BEGIN IMMEDIATE" if writer else "BEGIN")


def sqlite_url(path: str | Path) -> str:
    """The aiosqlite URL for a file path (``:memory:`` stays in memory)."""
    target = str(path)
    if target == "":
        from actoviq.runtime.stores import StorageDataError

        raise StorageDataError("filename must be a non-empty string")
    if target == ":memory:":
        return "sqlite+aiosqlite:///:memory:"
    file = Path(target)
    file.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite+aiosqlite:///{file}"


async def open_database(url: str, *, busy_timeout_ms: int = 5000, echo: bool = False) -> Database:
    """Create the engine, install hooks, upgrade the schema and return the database.

    Raises:
        StorageUnavailableError: the driver is missing or the database cannot be opened.
        StorageSchemaError: the database was written by a newer schema.
    """
    options: dict[str, Any] = {"echo": echo}
    is_sqlite = url.startswith("sqlite")
    if is_sqlite and ":memory:" in url:
        options["poolclass"] = StaticPool
    try:
        engine = create_async_engine(url, **options)
    except (ImportError, NoSuchModuleError, ArgumentError) as error:
        raise StorageUnavailableError(
            f"The database driver for {url.split(':', 1)[0]} is not installed.", cause=error
        ) from error
    if is_sqlite:
        _install_sqlite_hooks(engine, busy_timeout_ms=busy_timeout_ms, wal=":memory:" not in url)
    database = Database(engine, busy_timeout_ms=busy_timeout_ms)
    try:
        await _upgrade(database)
    except BaseException:
        await engine.dispose()
        raise
    return database


async def _upgrade(database: Database) -> None:
    try:
        async with database.write() as conn:
            if database.dialect == "postgresql":
                await conn.execute(text(f"SELECT pg_advisory_xact_lock({_PG_LOCK_KEY})"))
            await conn.run_sync(_upgrade_sync)
    except (OSError, DBAPIError) as error:
        if isinstance(error, DBAPIError) and not isinstance(error, OperationalError):
            raise
        raise _unavailable(error) from error


def _upgrade_sync(conn: Connection) -> None:
    revisions, head = known_revisions()
    current = MigrationContext.configure(conn).get_current_revision()
    if current is not None and current not in revisions:
        raise StorageSchemaError(
            f"Unsupported storage-v2 schema revision {current!r}: the database was written by a "
            f"newer actoviq-storage-sqlite (this one knows up to {head!r}); upgrade the package."
        )
    if current != head:
        config = _alembic_config()
        config.attributes["connection"] = conn
        command.upgrade(config, "head")
    version = conn.execute(select(schema_table.c.version)).scalar_one_or_none()
    if version != SCHEMA_VERSION:
        raise StorageSchemaError(f"Unsupported storage-v2 schema version {version}")
