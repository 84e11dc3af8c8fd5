"""The typed error of a database that cannot be opened at all (internal)."""

from __future__ import annotations

import sqlite3

from sqlalchemy.exc import OperationalError

from actoviq.runtime.stores import StorageUnavailableError

__all__ = ["unopenable"]


def unopenable(error: BaseException) -> StorageUnavailableError:
    """The :class:`StorageUnavailableError` for a database that cannot be opened at all.

    SQLite's own reason is kept (a fixed text such as ``file is not a database``, never data);
    other drivers are reported by error type only, as in :func:`unavailable`.
    """
    cause: BaseException = getattr(error, "orig", None) or error
    if isinstance(cause, sqlite3.DatabaseError):
        reason = f"{type(cause).__name__}: {cause}"
        hint = " Is it a SQLite database file, and intact?"
    else:
        reason = type(cause).__name__
        hint = ""
    return StorageUnavailableError(
        f"Storage is unavailable: the database cannot be opened ({reason}).{hint}",
        cause=error,
        retryable=isinstance(cause, sqlite3.OperationalError | OperationalError),
    )
