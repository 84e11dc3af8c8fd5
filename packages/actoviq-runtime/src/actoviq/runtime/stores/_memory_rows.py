"""The table behind the in-memory keyed-row stores: rows by (tenant, id), CAS on ``revision``.

Checkpoints, memories, artifact metadata and durable children share the same rules: a put names the
revision it expects (None for a new row) and a mismatch is a :class:`StorageConflictError`; a
delete with an expected revision checks it the same way; lists see one tenant's rows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

from actoviq.runtime.stores.errors import StorageConflictError
from actoviq.runtime.stores.validation import require_key

__all__ = ["RevisionRows", "row_key"]


class _Revisioned(Protocol):
    @property
    def revision(self) -> int: ...


R = TypeVar("R", bound=_Revisioned)


def row_key(tenant_id: str, row_id: str, field: str) -> tuple[str, str]:
    """The validated (tenant, id) key; ``field`` names the id in errors (e.g. ``"memoryId"``)."""
    return require_key(tenant_id, "tenantId"), require_key(row_id, field)


class RevisionRows(Generic[R]):
    """Rows keyed by (tenant, id); ``resource`` names a key in conflict errors."""

    __slots__ = ("_resource", "rows")

    def __init__(self, resource: Callable[[str, str], str]) -> None:
        self._resource = resource
        self.rows: dict[tuple[str, str], R] = {}

    def expect(self, key: tuple[str, str], expected_revision: int | None) -> R | None:
        """The current row (None when absent) once its revision is ``expected_revision``.

        Raises:
            StorageConflictError: the row's revision (None when absent) is another one.
        """
        current = self.rows.get(key)
        actual = None if current is None else current.revision
        if actual != expected_revision:
            raise StorageConflictError(
                self._resource(*key), expected_revision=expected_revision, actual_revision=actual
            )
        return current

    def delete(self, key: tuple[str, str], expected_revision: int | None) -> bool:
        """Delete the row; False when absent.

        Raises:
            StorageConflictError: ``expected_revision`` is given and the row has another one.
        """
        current = self.rows.get(key)
        if current is None:
            return False
        if expected_revision is not None and current.revision != expected_revision:
            raise StorageConflictError(
                self._resource(*key),
                expected_revision=expected_revision,
                actual_revision=current.revision,
            )
        del self.rows[key]
        return True

    def of_tenant(self, tenant: str) -> list[R]:
        """The tenant's rows in insertion order."""
        return [row for (owner, _), row in self.rows.items() if owner == tenant]
