"""Engine setup: PRAGMAs, ``BEGIN IMMEDIATE`` writers, consistent readers.

Three ways to run a transaction:

* :meth:`Database.write` / :meth:`Database.read` yield an ``AsyncConnection`` (every statement is
  awaited; on aiosqlite each one hops to the driver's thread several times);
* :meth:`Database.run_write` / :meth:`Database.run_read` take a *synchronous* function of a
  ``Connection`` and run the whole transaction in one step. On a SQLite file that step is one
  hop to a worker thread holding a plain ``sqlite3`` connection (same PRAGMAs, same
  ``BEGIN IMMEDIATE``); elsewhere (PostgreSQL/asyncpg, ``:memory:``) it is the async engine's
  ``run_sync``;
* :meth:`Database.run_journal_write` / :meth:`Database.run_journal_read`, the session journal's
  hot path: on a SQLite file the function gets a ``sqlite3`` connection itself and the
  ``BEGIN IMMEDIATE`` / ``BEGIN`` … ``COMMIT`` are issued directly (see ``_journal_sql``);
  elsewhere they are :meth:`Database.run_write` / :meth:`Database.run_read`.

Inline transactions (SQLite file, ``inline=True``, the default): the work of one small journal
transaction (~50 us) is cheaper than the hop to a worker thread (100-150 us), so by default the
journal's transactions run *on the event loop's thread*, on a dedicated ``sqlite3`` connection
opened lazily by the first call (used only from that thread and loop; any other thread or loop
takes the worker-thread path). It has the pooled connections' PRAGMAs except ``busy_timeout = 0``
and ``wal_autocheckpoint = 0``, and it never waits:

* in WAL mode readers never block and are never blocked: a read is ``BEGIN`` … ``COMMIT`` inline;
* a writer first takes the in-process writer lock (so it only ever competes with *other
  processes*), then tries ``BEGIN IMMEDIATE`` with no busy timeout. ``SQLITE_BUSY`` /
  ``SQLITE_LOCKED`` there, in the work or at ``COMMIT`` means another process holds the lock: the
  transaction is rolled back and run again on a worker thread, which waits with the configured
  ``busy_timeout`` off the loop (so the work of a write may run twice; it must be re-runnable);
* in WAL with ``synchronous = NORMAL`` a commit appends to the WAL without an fsync; the only
  fsync is the checkpoint, which never runs inline: every :data:`INLINE_CHECKPOINT_EVERY` inline
  commits the database starts one ``PRAGMA wal_checkpoint(PASSIVE)`` on a worker thread (at most
  one at a time; :meth:`Database.aclose` awaits it). Worker-thread commits keep SQLite's default
  auto-checkpoint.

Limits: the SQL of an inline transaction runs on the loop, and an inline call completes without
yielding to other tasks. That suits the journal's small appends and loads; callers pass
``inline=False`` for big batches (thousands of rows) so the loop keeps serving other tasks.
:attr:`Database.stats` counts which path each transaction took.

:func:`open_database` upgrades the schema before returning (``_schema``: Alembic, refusing
newer schemas). Only imported by :meth:`SqliteStorage.open`, so importing the package never
loads SQLAlchemy.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from collections.abc import AsyncGenerator, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import attrs
from sqlalchemy import create_engine, event, make_url
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import StaticPool

from actoviq.runtime.stores import StorageUnavailableError
from actoviq.storage.sqlite._journal_sql import CoreJournalSql, DriverJournalSql, JournalSql
from actoviq.storage.sqlite._open_errors import unopenable

_WRITE = "actoviq_write"
_THREADS = 4  # worker threads per SQLite file: one writer at a time, readers alongside
INLINE_CHECKPOINT_EVERY = 256
"""Inline write commits between two passive WAL checkpoints started on a worker thread.

256 small appends leave a WAL of a few hundred pages; SQLite's own auto-checkpoint threshold is
1,000 pages.
"""
_BUSY_CODES = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})

T = TypeVar("T")


@attrs.frozen(kw_only=True)
class DatabaseStats:
    """How many journal transactions took each path (a snapshot of :attr:`Database.stats`).

    Attributes:
        inline_writes: journal writes committed inline, on the event loop's thread.
        inline_reads: journal reads completed inline.
        thread_writes: journal writes committed off the loop (a worker thread on a SQLite file,
            the async engine elsewhere).
        thread_reads: journal reads completed off the loop.
        busy_fallbacks: inline transactions that met ``SQLITE_BUSY`` / ``SQLITE_LOCKED``, were
            rolled back and ran again off the loop.
        checkpoints: passive WAL checkpoints completed on a worker thread.
        checkpoint_failures: passive WAL checkpoints that raised (harmless: the next one retries).
    """

    inline_writes: int = 0
    inline_reads: int = 0
    thread_writes: int = 0
    thread_reads: int = 0
    busy_fallbacks: int = 0
    checkpoints: int = 0
    checkpoint_failures: int = 0


@attrs.define
class _Counters:
    """The live counters behind :class:`DatabaseStats` (plain int increments on the hot path)."""

    inline_writes: int = 0
    inline_reads: int = 0
    thread_writes: int = 0
    thread_reads: int = 0
    busy_fallbacks: int = 0
    checkpoints: int = 0
    checkpoint_failures: int = 0


class _Busy(Exception):
    """An inline transaction met ``SQLITE_BUSY`` / ``SQLITE_LOCKED`` and was rolled back."""


class Database:
    """An async engine plus the transaction discipline every store uses.

    On a SQLite file it also holds a synchronous engine over the same file and a small thread
    pool: :meth:`run_write` / :meth:`run_read` run a whole transaction there in one hop. With
    ``inline`` it also runs the session journal's transactions on the event loop's thread when
    they cannot block (see the module docstring).
    """

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        busy_timeout_ms: int,
        thread_engine: Engine | None = None,
        inline: bool = False,
    ) -> None:
        self.engine = engine
        self.dialect = engine.dialect.name
        self.busy_timeout_ms = busy_timeout_ms
        # SQLite has one writer at a time; queueing in-process writers here avoids busy-polling.
        self._write_lock = asyncio.Lock() if self.dialect == "sqlite" else None
        self._thread_engine = thread_engine
        self._thread_writer = (
            None if thread_engine is None else thread_engine.execution_options(**{_WRITE: True})
        )
        self._executor = (
            None
            if thread_engine is None
            else ThreadPoolExecutor(max_workers=_THREADS, thread_name_prefix="actoviq-sqlite")
        )
        # The session journal's hot-path statements: driver SQL on the thread engine's sqlite3
        # connections, SQLAlchemy Core elsewhere (see ``_journal_sql``).
        self.journal_sql: JournalSql = (
            CoreJournalSql() if thread_engine is None else DriverJournalSql()
        )
        self._inline_enabled = inline and thread_engine is not None
        self._inline: sqlite3.Connection | None = None
        self._inline_thread = 0  # the thread and loop that opened the inline connection
        self._inline_loop: asyncio.AbstractEventLoop | None = None
        self._counts = _Counters()
        self._since_checkpoint = 0
        # Submitted straight to the executor, not as a task: a caller that only awaits inline
        # transactions never yields to the loop, and a task would not start until it did.
        self._checkpoint: Future[None] | None = None
        self._closing = False

    @property
    def session_engine(self) -> Engine:
        """The synchronous engine :meth:`run_write` / :meth:`run_read` execute on."""
        return self._thread_engine or self.engine.sync_engine

    @property
    def inline(self) -> bool:
        """Whether journal transactions may run inline (a SQLite file opened with ``inline``)."""
        return self._inline_enabled

    @property
    def stats(self) -> DatabaseStats:
        """A snapshot of the per-path transaction and checkpoint counters."""
        if self._checkpoint is not None and self._checkpoint.done():
            self._collect_checkpoint()
        return DatabaseStats(**attrs.asdict(self._counts))

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
                raise unavailable(error) from error
            yield conn

    @contextlib.asynccontextmanager
    async def read(self) -> AsyncGenerator[AsyncConnection, None]:
        """One read transaction: deferred ``BEGIN`` on SQLite, ``REPEATABLE READ`` on PostgreSQL."""
        async with self.engine.connect() as conn:
            if self.dialect == "postgresql":
                await conn.execution_options(isolation_level="REPEATABLE READ")
            async with conn.begin():
                yield conn

    async def run_write(self, work: Callable[[Connection], T]) -> T:
        """Run ``work`` in one writer transaction (``BEGIN IMMEDIATE`` on SQLite) and commit.

        ``work`` is synchronous and must not touch the event loop; an exception rolls back and
        propagates (``OperationalError`` becomes :class:`StorageUnavailableError`).
        """
        if self._thread_writer is None:
            async with self.write() as conn:
                return await _mapped(conn.run_sync(work))
        assert self._write_lock is not None
        async with self._write_lock:
            return await self._in_thread(_transaction, self._thread_writer, work)

    async def run_read(self, work: Callable[[Connection], T]) -> T:
        """Run ``work`` in one consistent read transaction."""
        if self._thread_engine is None:
            async with self.read() as conn:
                return await _mapped(conn.run_sync(work))
        return await self._in_thread(_transaction, self._thread_engine, work)

    async def run_journal_write(
        self,
        work: Callable[[Any], T],
        *,
        on_commit: Callable[[T], None] | None = None,
        inline: bool = True,
    ) -> T:
        """Like :meth:`run_write`, for the session journal's hot path (:attr:`journal_sql`).

        On a SQLite file ``work`` gets a ``sqlite3.Connection`` itself: the transaction is
        ``BEGIN IMMEDIATE`` … ``COMMIT`` issued here, under the same in-process writer lock,
        without a SQLAlchemy ``Connection``. With ``inline`` (and :attr:`inline`) it first runs on
        the event loop's thread; if another process holds the write lock it is rolled back and
        run again on a worker thread, so **``work`` may run twice** and must be re-runnable (only
        touch the database, or state it rebuilds). Pass ``inline=False`` for big batches.
        Elsewhere ``work`` gets a ``Connection`` (:meth:`run_write`).

        ``on_commit(result)`` runs once after a successful ``COMMIT`` and before the in-process
        writer lock is released (never after a rollback); it must not raise or await.

        Raises:
            StorageUnavailableError: the driver reported an ``OperationalError`` (rolled back).
        """
        if self._thread_engine is None:
            result = await self.run_write(work)
            self._counts.thread_writes += 1
            if on_commit is not None:
                on_commit(result)
            return result
        assert self._write_lock is not None
        async with self._write_lock:
            conn = self._inline_connection() if inline else None
            if conn is not None:
                try:
                    result = self._inline_transaction(conn, work, "BEGIN IMMEDIATE")
                except _Busy:
                    self._counts.busy_fallbacks += 1
                else:
                    self._counts.inline_writes += 1
                    if on_commit is not None:
                        on_commit(result)
                    self._after_inline_commit()
                    return result
            result = await self._in_thread(_driver_transaction, self._thread_engine, work, True)
            self._counts.thread_writes += 1
            if on_commit is not None:
                on_commit(result)
            return result

    async def run_journal_read(self, work: Callable[[Any], T], *, inline: bool = True) -> T:
        """Like :meth:`run_read` (a deferred ``BEGIN`` on a SQLite file); see above.

        With ``inline`` the read runs on the event loop's thread (WAL readers never wait); if it
        meets ``SQLITE_BUSY`` anyway it is rolled back and run on a worker thread (``work`` may
        run twice). Reads never take the writer lock.
        """
        if self._thread_engine is None:
            result = await self.run_read(work)
            self._counts.thread_reads += 1
            return result
        conn = self._inline_connection() if inline else None
        if conn is not None:
            try:
                result = self._inline_transaction(conn, work, "BEGIN")
            except _Busy:
                self._counts.busy_fallbacks += 1
            else:
                self._counts.inline_reads += 1
                return result
        result = await self._in_thread(_driver_transaction, self._thread_engine, work, False)
        self._counts.thread_reads += 1
        return result

    def _inline_connection(self) -> sqlite3.Connection | None:
        """The inline connection if this call may use it, else None (take the thread path)."""
        if not self._inline_enabled or self._closing:
            return None
        conn = self._inline
        if conn is None:
            return self._open_inline()
        if threading.get_ident() != self._inline_thread:
            return None
        if asyncio.get_running_loop() is not self._inline_loop:
            return None
        return conn

    def _open_inline(self) -> sqlite3.Connection | None:
        assert self._thread_engine is not None
        url = self._thread_engine.url
        (database, *_), driver_options = self._thread_engine.dialect.create_connect_args(url)
        # check_same_thread is off only so that aclose() can close it on a worker thread; the
        # owner checks in _inline_connection keep every other use on the opening thread.
        options: dict[str, Any] = {
            **driver_options,
            "timeout": 0.0,
            "isolation_level": None,
            "check_same_thread": False,
        }
        try:
            conn = sqlite3.connect(database, **options)
        except sqlite3.Error:
            return None  # the thread path opens the file again and reports the error
        try:
            _configure(conn, busy_timeout_ms=0, wal=True, autocheckpoint=False)
        except sqlite3.Error:
            conn.close()
            return None
        self._inline = conn
        self._inline_thread = threading.get_ident()
        self._inline_loop = asyncio.get_running_loop()
        return conn

    def _inline_transaction(
        self, conn: sqlite3.Connection, work: Callable[[Any], T], begin: str
    ) -> T:
        """One transaction on the inline connection; :class:`_Busy` when it must go to a thread."""
        try:
            conn.execute(begin)
        except sqlite3.OperationalError as error:
            if _is_busy(error):
                raise _Busy from error
            raise unavailable(error) from error
        try:
            result = work(conn)
            conn.execute("COMMIT")
        except sqlite3.OperationalError as error:
            self._rollback_inline(conn)
            if _is_busy(error):
                raise _Busy from error
            raise unavailable(error) from error
        except BaseException:
            self._rollback_inline(conn)
            raise
        return result

    def _rollback_inline(self, conn: sqlite3.Connection) -> None:
        try:
            conn.rollback()  # a no-op when SQLite already rolled the transaction back
        except sqlite3.Error:
            # The connection's state is unknown: drop it (closing rolls back); the next call
            # opens a fresh one.
            self._inline = None
            with contextlib.suppress(sqlite3.Error):
                conn.close()

    def _after_inline_commit(self) -> None:
        self._since_checkpoint += 1
        if self._since_checkpoint < INLINE_CHECKPOINT_EVERY:
            return
        if self._checkpoint is not None:
            if not self._checkpoint.done():
                return  # one at a time
            self._collect_checkpoint()
        assert self._executor is not None
        assert self._thread_engine is not None
        self._since_checkpoint = 0
        self._checkpoint = self._executor.submit(_passive_checkpoint, self._thread_engine)

    def _collect_checkpoint(self) -> None:
        """Count a finished checkpoint (its exception, if any, is retrieved and counted)."""
        future, self._checkpoint = self._checkpoint, None
        if future is None:
            return
        if not future.cancelled() and future.exception() is None:
            self._counts.checkpoints += 1
        else:
            # A passive checkpoint that fails changes nothing; the next one starts afresh.
            self._counts.checkpoint_failures += 1

    async def _in_thread(self, call: Callable[..., T], *args: Any) -> T:
        assert self._executor is not None
        future = asyncio.get_running_loop().run_in_executor(self._executor, call, *args)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            # The transaction cannot be interrupted mid-statement: let it finish (commit or roll
            # back) before the writer lock is released, then report the cancellation.
            await asyncio.wait([future])
            if not future.cancelled():
                future.exception()  # retrieved, so asyncio does not log it as never retrieved
            raise

    async def aclose(self) -> None:
        """Await the running checkpoint, close the inline connection, dispose of the pools."""
        self._closing = True
        if self._checkpoint is not None:
            waiter = asyncio.wrap_future(self._checkpoint)
            await asyncio.wait([waiter])
            if not waiter.cancelled():
                waiter.exception()  # retrieved here, counted by _collect_checkpoint
            self._collect_checkpoint()
        inline, self._inline = self._inline, None
        if self._executor is not None:
            executor, self._executor = self._executor, None
            loop = asyncio.get_running_loop()
            if inline is not None:
                # Closing the last connection to a WAL file checkpoints it (fsync): off the loop.
                await loop.run_in_executor(executor, inline.close)
            await loop.run_in_executor(None, executor.shutdown)
        if self._thread_engine is not None:
            self._thread_engine.dispose()
        await self.engine.dispose()


def _transaction(engine: Engine, work: Callable[[Connection], T]) -> T:
    """One transaction on a worker thread (the ``begin`` hook emits the right ``BEGIN``)."""
    try:
        with engine.connect() as conn, conn.begin():
            return work(conn)
    except (OperationalError, sqlite3.OperationalError) as error:
        # sqlite3's own errors come from the journal's driver SQL (``_journal_sql``).
        raise unavailable(error) from error


def _driver_transaction(engine: Engine, work: Callable[[Any], T], writer: bool) -> T:
    """One transaction on a pooled ``sqlite3`` connection.

    The connect hook put the driver in autocommit mode, so ``BEGIN`` / ``COMMIT`` are exactly the
    ones issued here.
    """
    try:
        pooled = engine.raw_connection()
        try:
            dbapi: Any = pooled.dbapi_connection
            dbapi.execute("BEGIN IMMEDIATE" if writer else "BEGIN")
            try:
                result = work(dbapi)
            except BaseException:
                dbapi.rollback()
                raise
            dbapi.commit()
            return result
        finally:
            pooled.close()  # back to the pool (its reset is a no-op outside a transaction)
    except (OperationalError, sqlite3.OperationalError) as error:
        raise unavailable(error) from error


async def _mapped(pending: Any) -> Any:
    try:
        return await pending
    except OperationalError as error:
        raise unavailable(error) from error


def unavailable(error: BaseException) -> StorageUnavailableError:
    """The :class:`StorageUnavailableError` reporting ``error`` (its type only, never its text)."""
    return StorageUnavailableError(f"Storage is unavailable: {type(error).__name__}", cause=error)


def _is_busy(error: sqlite3.Error) -> bool:
    """``SQLITE_BUSY`` / ``SQLITE_LOCKED`` (any extended code): another connection holds a lock."""
    code: int | None = getattr(error, "sqlite_errorcode", None)
    return code is not None and (code & 0xFF) in _BUSY_CODES


def _passive_checkpoint(engine: Engine) -> None:
    """``PRAGMA wal_checkpoint(PASSIVE)`` on a pooled connection (never waits for a lock)."""
    pooled = engine.raw_connection()
    try:
        dbapi: Any = pooled.dbapi_connection
        dbapi.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
    finally:
        pooled.close()


def _configure(
    dbapi_connection: Any, *, busy_timeout_ms: int, wal: bool, autocheckpoint: bool = True
) -> None:
    """The PRAGMAs of every connection (pooled, aiosqlite and inline)."""
    # Stop the driver from issuing its own BEGIN; we emit BEGIN / BEGIN IMMEDIATE ourselves.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")
        cursor.execute("PRAGMA foreign_keys = ON")
        if wal:
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA synchronous = NORMAL")
        if not autocheckpoint:
            cursor.execute("PRAGMA wal_autocheckpoint = 0")
    finally:
        cursor.close()


def _install_sqlite_hooks(engine: Engine, *, busy_timeout_ms: int, wal: bool) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        _configure(dbapi_connection, busy_timeout_ms=busy_timeout_ms, wal=wal)

    @event.listens_for(engine, "begin")
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
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise StorageUnavailableError(
            f"Storage is unavailable: cannot create the folder of {file} ({type(error).__name__}).",
            cause=error,
            retryable=False,
        ) from error
    return f"sqlite+aiosqlite:///{file}"


async def open_database(
    url: str, *, busy_timeout_ms: int = 5000, echo: bool = False, inline: bool = True
) -> Database:
    """Create the engine, install hooks, upgrade the schema and return the database.

    ``inline``: on a SQLite file, let the session journal's transactions run on the event loop's
    thread when they cannot block (see the module docstring); ``False`` always uses a worker
    thread. Ignored for ``:memory:`` and PostgreSQL.

    Raises:
        StorageUnavailableError: the driver is missing or the database cannot be opened.
        StorageSchemaError: the database was written by a newer schema.
    """
    from actoviq.storage.sqlite._schema import upgrade_schema  # here: _schema imports _engine

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
    thread_engine: Engine | None = None
    if is_sqlite:
        in_memory = ":memory:" in url or url.rstrip("/") in {"sqlite:", "sqlite+aiosqlite:"}
        _install_sqlite_hooks(
            engine.sync_engine, busy_timeout_ms=busy_timeout_ms, wal=not in_memory
        )
        if not in_memory:
            # The same file through the stdlib driver, driven from worker threads (see module doc).
            thread_engine = create_engine(
                make_url(url).set(drivername="sqlite+pysqlite"),
                echo=echo,
                connect_args={"check_same_thread": False},
            )
            _install_sqlite_hooks(thread_engine, busy_timeout_ms=busy_timeout_ms, wal=True)
    database = Database(
        engine, busy_timeout_ms=busy_timeout_ms, thread_engine=thread_engine, inline=inline
    )
    try:
        await upgrade_schema(database)
        # Prepare / compile the session journal's statements now, not on the first append.
        await database.run_journal_write(database.journal_sql.warm)
    except BaseException as error:
        await database.aclose()
        if isinstance(error, DBAPIError | sqlite3.DatabaseError):
            raise unopenable(error) from error
        raise
    return database
