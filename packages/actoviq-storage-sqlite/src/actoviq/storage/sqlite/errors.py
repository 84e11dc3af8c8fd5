"""Errors of the SQL storage (the shared storage errors live in ``actoviq.runtime.stores``)."""

from __future__ import annotations

from typing import ClassVar

from actoviq.runtime.stores import StorageDataError

__all__ = ["MigrationSourceError", "StorageSchemaError"]


class StorageSchemaError(StorageDataError):
    """The database schema is newer (or other) than this package supports; nothing was changed."""

    default_code: ClassVar[str] = "STORAGE_DATA_INVALID"


class MigrationSourceError(StorageDataError):
    """JSON v1 source files could not be planned; ``problems`` lists each bad file and why.

    Attributes:
        problems: ``(path, reason)`` pairs, one per bad file, in file-name order.
    """

    def __init__(self, message: str, problems: list[tuple[str, str]]) -> None:
        super().__init__(message)
        self.problems = problems
