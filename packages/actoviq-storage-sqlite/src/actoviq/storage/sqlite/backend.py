"""This wheel's storage backend for ``actoviq.runtime.open_runtime`` (an entry point).

Registered in the ``actoviq.runtime.storage`` entry-point group as ``sqlite``, so
``from actoviq.runtime import open_runtime`` opens a SQLite file or a PostgreSQL database without
importing this package (the runtime may not import storage, D1).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Final

from actoviq.storage.sqlite.storage import SqliteStorage

__all__ = ["SqliteStorageBackend"]

_SCHEMES: Final = ("sqlite", "postgresql", "postgres")


@asynccontextmanager
async def _opened(target: str) -> AsyncGenerator[SqliteStorage]:
    async with await SqliteStorage.open(target) as storage:
        yield storage


class SqliteStorageBackend:
    """Opens file paths, ``":memory:"``, ``sqlite…://`` and ``postgresql…://`` URLs.

    Example:
        >>> SqliteStorageBackend().handles("chat.db"), SqliteStorageBackend().handles("s3://b")
        (True, False)
    """

    name: Final = "sqlite"

    def handles(self, target: str) -> bool:
        """A path (anything without ``://``) or a SQLite / PostgreSQL URL."""
        scheme, found, _ = target.partition("://")
        if not found:
            return bool(target)
        return scheme.split("+", 1)[0].lower() in _SCHEMES

    def open(self, target: str) -> AbstractAsyncContextManager[SqliteStorage]:
        """Open (create or upgrade) the database; leaving the context closes it."""
        return _opened(target)
