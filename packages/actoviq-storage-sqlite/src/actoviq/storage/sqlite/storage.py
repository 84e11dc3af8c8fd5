"""``SqliteStorage``: one engine and the stores over it (SQLite default, PostgreSQL by URL)."""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

from actoviq.runtime.stores import (
    ArtifactBlobStore,
    ArtifactMetadataStore,
    ArtifactStore,
    BudgetLedgerStore,
    CheckpointStore,
    DirectoryArtifactBlobStore,
    DurableChildStore,
    MemoryStore,
    SessionStore,
    StorageDataError,
    StorageUnavailableError,
    WorkflowRunStore,
)
from actoviq.storage.sqlite.adapters import SqliteRunCheckpointAdapter, SqliteRuntimeSessionAdapter

if TYPE_CHECKING:
    from actoviq.storage.sqlite._engine import Database

__all__ = ["ArtifactBlobsOption", "SqliteStorage", "default_blob_directory"]

ArtifactBlobsOption = ArtifactBlobStore | Literal["database", "directory"] | str | os.PathLike[str]
"""Where :class:`SqliteStorage` keeps artifact bytes: a blob store, ``"database"`` (the chunked
blob table), ``"directory"`` (the default folder beside a database file) or a folder path."""


def default_blob_directory(database_file: str | os.PathLike[str]) -> Path:
    """The folder for artifact bytes beside a database file: ``<file>-artifacts``."""
    path = Path(database_file)
    return path.with_name(f"{path.name}-artifacts")


class SqliteStorage:
    """The durable stores of one database.

    Open with :meth:`open` (a file path, ``":memory:"`` or a SQLAlchemy async URL such as
    ``postgresql+asyncpg://user@host/db``). Opening creates or upgrades the schema (Alembic) and
    refuses a newer one. SQLAlchemy and the driver are imported only here, never at package import.

    For an ``AgentRuntime``, :meth:`runtime_sessions` and :meth:`runtime_checkpoints` give the
    runtime's view of the session and checkpoint stores.

    Example:
        >>> async with await SqliteStorage.open("app.db") as storage:  # doctest: +SKIP
        ...     runtime = AgentRuntime(
        ...         models=models,
        ...         sessions=storage.runtime_sessions(),
        ...         checkpoints=storage.runtime_checkpoints(),
        ...     )
    """

    def __init__(self, database: Database, *, blobs: ArtifactBlobStore | None = None) -> None:
        from actoviq.storage.sqlite._blobs import SqlArtifactBlobStore
        from actoviq.storage.sqlite._ledgers import SqlBudgetLedgerStore
        from actoviq.storage.sqlite._records import (
            SqlArtifactMetadataStore,
            SqlCheckpointStore,
            SqlDurableChildStore,
            SqlMemoryStore,
        )
        from actoviq.storage.sqlite._sessions import SqlSessionStore
        from actoviq.storage.sqlite._workflow_runs import SqlWorkflowRunStore

        self._database = database
        self._closed = False
        self.sessions: SessionStore = SqlSessionStore(database)
        self.checkpoints: CheckpointStore = SqlCheckpointStore(database)
        self.memory: MemoryStore = SqlMemoryStore(database)
        self.artifacts: ArtifactMetadataStore = SqlArtifactMetadataStore(database)
        self.children: DurableChildStore = SqlDurableChildStore(database)
        self.ledgers: BudgetLedgerStore = SqlBudgetLedgerStore(database)
        self.workflows: WorkflowRunStore = SqlWorkflowRunStore(database)
        self.blobs: ArtifactBlobStore = (
            blobs if blobs is not None else SqlArtifactBlobStore(database)
        )
        """Where artifact bytes live (see :meth:`open`'s ``artifact_blobs``)."""
        self.artifact_store = ArtifactStore(self.artifacts, self.blobs)
        """Artifact records and their bytes together (put, open, read, collect_garbage)."""

    @classmethod
    async def open(
        cls,
        target: str | Path,
        *,
        busy_timeout_ms: int = 5000,
        echo: bool = False,
        inline_transactions: bool = True,
        artifact_blobs: ArtifactBlobsOption | None = None,
    ) -> SqliteStorage:
        """Open (and create or upgrade) the database at ``target``.

        Args:
            target: a file path (parent directories are created), ``":memory:"``, or a URL
                containing ``://`` (``sqlite+aiosqlite://…`` or ``postgresql+asyncpg://…``).
            busy_timeout_ms: how long a SQLite writer waits for the lock (always on a worker
                thread, never on the event loop).
            echo: log SQL statements (debugging).
            inline_transactions: on a SQLite file, run the small session-journal transactions
                (appends, loads) on the event loop's thread when they cannot block: WAL reads,
                and writes while no other process holds the write lock (otherwise they move to a
                worker thread). ``False`` runs every transaction on a worker thread. No effect on
                ``":memory:"`` or PostgreSQL.
            artifact_blobs: where artifact bytes go (:attr:`blobs`). Default: for a database
                file, the folder ``<file>-artifacts`` beside it (created on first write); for
                ``":memory:"`` and URLs, the database itself (``"database"``: a chunked blob
                table, shared by every process that uses the database). A folder path or an
                :class:`~actoviq.runtime.stores.ArtifactBlobStore` (an object store) also works.

        Raises:
            StorageUnavailableError: the driver is missing or the database cannot be opened.
            StorageSchemaError: the database schema is newer than this package.
            StorageDataError: an empty filename.
        """
        try:
            from sqlalchemy.exc import InvalidRequestError

            from actoviq.storage.sqlite._engine import open_database, sqlite_url
        except ImportError as error:  # pragma: no cover - SQLAlchemy is a hard dependency
            raise StorageUnavailableError("SQLAlchemy is not installed.", cause=error) from error
        text = str(target)
        if "\x00" in text or (not text.isascii() and not _encodable(text)):
            raise StorageDataError("filename must not contain NUL or lone UTF-16 surrogates")
        is_url = "://" in text
        url = _async_url(text) if is_url else sqlite_url(text)
        blobs = _blob_store(artifact_blobs, None if is_url or text == ":memory:" else text)
        try:
            database = await open_database(
                url, busy_timeout_ms=busy_timeout_ms, echo=echo, inline=inline_transactions
            )
        except InvalidRequestError as error:  # a URL naming a synchronous driver
            raise StorageUnavailableError(
                f"Storage is unavailable: {url.split(':', 1)[0]} is not an asyncio driver "
                "(use sqlite+aiosqlite:// or postgresql+asyncpg://).",
                cause=error,
                retryable=False,
            ) from error
        return cls(database, blobs=blobs)

    def runtime_sessions(self) -> SqliteRuntimeSessionAdapter:
        """The session store as the runtime reads it: ``AgentRuntime(sessions=...)``.

        The adapter never owns the connection: close the storage, not the adapter.
        """
        return SqliteRuntimeSessionAdapter(self.sessions)

    def runtime_checkpoints(self, **options: Any) -> SqliteRunCheckpointAdapter:
        """The checkpoint store as the runtime uses it: ``AgentRuntime(checkpoints=...)``.

        Resumes through it are exactly-once across processes (claims on the checkpoint row);
        ``await checkpoints.pending(run_id)`` lists what an interrupted run waits for.

        Args:
            options: the keyword options of :class:`SqliteRunCheckpointAdapter` (``tenant_id``,
                ``checkpoint_id``, ``clock``, ...).
        """
        return SqliteRunCheckpointAdapter(self.checkpoints, **options)

    @property
    def dialect(self) -> str:
        """``"sqlite"`` or ``"postgresql"``."""
        return self._database.dialect

    async def delete_session(self, *, tenant_id: str, session_id: str) -> bool:
        """Delete a session, its journal and its snapshots (one transaction); False if absent.

        The journal is append-only for every other writer; this is the one maintenance path that
        removes a session (``actoviq sessions delete``). Checkpoints of its runs are kept.

        Raises:
            StorageDataError: an empty tenant or session id.
        """
        from actoviq.runtime.stores.validation import require_key
        from actoviq.storage.sqlite import _maintenance

        require_key(tenant_id, "tenantId")
        require_key(session_id, "sessionId")
        return await _maintenance.delete_session(self._database, tenant_id, session_id)

    @property
    def database(self) -> Database:
        """The engine wrapper (used by the JSON v1 migrator; not a stable API)."""
        return self._database

    async def aclose(self) -> None:
        """Dispose of the engine; idempotent."""
        if self._closed:
            return
        self._closed = True
        await self._database.aclose()

    async def __aenter__(self) -> SqliteStorage:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _async_url(url: str) -> str:
    """``sqlite://`` and ``postgresql://`` (``postgres://``) with this package's asyncio drivers."""
    scheme, _, rest = url.partition("://")
    driver = _ASYNC_DRIVERS.get(scheme.lower())
    return f"{driver}://{rest}" if driver is not None else url


_ASYNC_DRIVERS: dict[str, str] = {
    "sqlite": "sqlite+aiosqlite",
    "postgresql": "postgresql+asyncpg",
    "postgres": "postgresql+asyncpg",
}


def _blob_store(option: ArtifactBlobsOption | None, file: str | None) -> ArtifactBlobStore | None:
    """The blob store for ``option`` (None: the SQL blob table, built by the constructor)."""
    if isinstance(option, ArtifactBlobStore):
        return option
    if option is None:
        option = "directory" if file is not None else "database"
    if option == "database":
        return None
    if option == "directory":
        if file is None:
            raise StorageDataError(
                'artifact_blobs="directory" needs a database file; pass a folder path instead.'
            )
        return DirectoryArtifactBlobStore(default_blob_directory(file))
    if isinstance(option, str | os.PathLike):  # pyright: ignore[reportUnnecessaryIsInstance]
        return DirectoryArtifactBlobStore(option)
    raise StorageDataError(f"artifact_blobs must be a blob store, a mode or a path: {option!r}")
