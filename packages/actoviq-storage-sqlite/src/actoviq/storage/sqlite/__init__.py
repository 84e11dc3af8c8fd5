"""actoviq.storage.sqlite: durable stores on async SQLAlchemy 2; SQLite default, PostgreSQL by URL.

Importing this package loads neither SQLAlchemy nor a driver; :meth:`SqliteStorage.open` does.

Example:
    >>> from actoviq.storage.sqlite import SqliteStorage, SqliteRuntimeSessionAdapter
    >>> async def main() -> None:  # doctest: +SKIP
    ...     async with await SqliteStorage.open("state/actoviq.db") as storage:
    ...         sessions = SqliteRuntimeSessionAdapter(storage.sessions)
    ...         history = await sessions.load(tenant_id="default", session_id="s1")
"""

from actoviq.storage.sqlite.adapters import SqliteRunCheckpointAdapter, SqliteRuntimeSessionAdapter
from actoviq.storage.sqlite.backend import SqliteStorageBackend
from actoviq.storage.sqlite.errors import MigrationSourceError, StorageSchemaError
from actoviq.storage.sqlite.legacy import (
    LegacySessionFile,
    convert_legacy_json_v1_message,
    read_legacy_session_file,
)
from actoviq.storage.sqlite.migration import (
    JsonV1Migrator,
    MigrationFileReport,
    MigrationProgress,
    MigrationReport,
    RollbackReport,
    VerifyReport,
)
from actoviq.storage.sqlite.open_runtime import open_runtime
from actoviq.storage.sqlite.storage import (
    ArtifactBlobsOption,
    SqliteStorage,
    default_blob_directory,
)

__all__ = [
    "ArtifactBlobsOption",
    "JsonV1Migrator",
    "LegacySessionFile",
    "MigrationFileReport",
    "MigrationProgress",
    "MigrationReport",
    "MigrationSourceError",
    "RollbackReport",
    "SqliteRunCheckpointAdapter",
    "SqliteRuntimeSessionAdapter",
    "SqliteStorage",
    "SqliteStorageBackend",
    "StorageSchemaError",
    "VerifyReport",
    "convert_legacy_json_v1_message",
    "default_blob_directory",
    "open_runtime",
    "read_legacy_session_file",
]
