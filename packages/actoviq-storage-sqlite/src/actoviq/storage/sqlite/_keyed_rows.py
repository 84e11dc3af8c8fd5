"""The keyed-row table behind the SQL record stores: rows by (tenant, id), CAS on ``revision``.

Checkpoints, memory entries, artifact metadata and durable children share these rules (the
in-memory twin is ``actoviq.runtime.stores._memory_rows``): a put names the revision it expects
(None for a new row) and a mismatch is a :class:`StorageConflictError`; a delete with an expected
revision checks it the same way; reads decode every row again (fail closed).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar

from sqlalchemy import Row, Table, and_, delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from actoviq.runtime.stores import StorageConflictError, StorageDataError
from actoviq.runtime.stores.validation import require_key, require_revision
from actoviq.storage.sqlite._engine import Database

__all__ = ["KeyedRows", "stored_int", "stored_opt_text", "stored_text"]

R = TypeVar("R")


def stored_text(value: object, field: str) -> str:
    """A stored text column (fail closed).

    Raises:
        StorageDataError: the column does not hold text.
    """
    if type(value) is not str:
        raise StorageDataError(f"stored {field} must be text")
    return value


def stored_opt_text(value: object, field: str) -> str | None:
    """Like :func:`stored_text`, but NULL passes."""
    return None if value is None else stored_text(value, field)


def stored_int(value: object, field: str) -> int:
    """A stored non-negative safe-integer column (fail closed).

    Raises:
        StorageDataError: the column does not hold such an integer.
    """
    if type(value) is not int:
        raise StorageDataError(f"stored {field} must be an integer")
    return require_revision(value, field)


class KeyedRows(Generic[R]):
    """One table of records keyed by ``(tenant_id, <id column>)``, decoded to ``R``.

    Args:
        database: The engine owner.
        table: The table (``tenant_id``, the id column, ``revision``, ``created_at``,
            ``updated_at`` and the record's own columns).
        id_column: The id column, e.g. ``"memory_id"``.
        id_field: The id's name in validation errors, e.g. ``"memoryId"``.
        resource: The resource string of a key in conflict errors.
        decode: One row (all columns) to a record, re-validated.
    """

    __slots__ = ("_db", "_decode", "_id", "_id_field", "_resource", "table")

    def __init__(
        self,
        database: Database,
        table: Table,
        *,
        id_column: str,
        id_field: str,
        resource: Callable[[str, str], str],
        decode: Callable[[Row[Any]], R],
    ) -> None:
        self._db = database
        self.table = table
        self._id = id_column
        self._id_field = id_field
        self._resource = resource
        self._decode = decode

    def _where(self, tenant_id: str, row_id: str) -> Any:
        return and_(self.table.c.tenant_id == tenant_id, self.table.c[self._id] == row_id)

    async def put(
        self,
        tenant_id: str,
        row_id: str,
        expected_revision: int | None,
        values: Mapping[str, Any],
        stamp: str,
    ) -> tuple[int, str]:
        """Create or replace the row when its revision is ``expected_revision`` (None: absent).

        Returns:
            ``(revision, created_at)`` of the written row.

        Raises:
            StorageConflictError: the row's revision (None when absent) is another one, or a
                concurrent writer got there first.
        """
        table = self.table
        where = self._where(tenant_id, row_id)
        resource = self._resource(tenant_id, row_id)
        try:
            async with self._db.write() as conn:
                row = (
                    await conn.execute(
                        select(table.c.revision, table.c.created_at).where(where).with_for_update()
                    )
                ).first()
                actual = None if row is None else stored_int(row.revision, "revision")
                if actual != expected_revision:
                    raise StorageConflictError(
                        resource, expected_revision=expected_revision, actual_revision=actual
                    )
                if row is None:
                    key = {"tenant_id": tenant_id, self._id: row_id}
                    await conn.execute(
                        insert(table).values(
                            **key, **values, revision=0, created_at=stamp, updated_at=stamp
                        )
                    )
                    return 0, stamp
                changed = await conn.execute(
                    update(table)
                    .where(where)
                    .where(table.c.revision == actual)
                    .values(**values, revision=(actual or 0) + 1, updated_at=stamp)
                )
                if changed.rowcount != 1:
                    raise StorageConflictError(
                        resource, expected_revision=expected_revision, actual_revision=None
                    )
                return (actual or 0) + 1, stored_text(row.created_at, "created_at")
        except IntegrityError:
            # PostgreSQL: a concurrent creator inserted the absent row first.
            raise StorageConflictError(
                resource, expected_revision=expected_revision, actual_revision=0
            ) from None

    async def get(self, tenant_id: str, row_id: str) -> R | None:
        """The decoded row, or None.

        Raises:
            StorageDataError: an empty key, or a corrupt row.
        """
        require_key(tenant_id, "tenantId")
        require_key(row_id, self._id_field)
        rows = await self.select(select(self.table).where(self._where(tenant_id, row_id)))
        return rows[0] if rows else None

    async def list(
        self,
        tenant_id: str,
        *,
        equal: Mapping[str, str | None],
        order_by: Sequence[Any],
        limit: int | None,
    ) -> list[R]:
        """The tenant's rows whose columns equal the non-None values of ``equal``, ordered.

        Arguments are validated by the caller (each store names its own filters).
        """
        table = self.table
        query = select(table).where(table.c.tenant_id == tenant_id)
        for column, value in equal.items():
            if value is not None:
                query = query.where(table.c[column] == value)
        query = query.order_by(*order_by)
        if limit is not None:
            query = query.limit(limit)
        return await self.select(query)

    async def select(self, query: Any) -> list[R]:
        """Run a read query over the table's full rows and decode each."""
        async with self._db.read() as conn:
            rows = list((await conn.execute(query)).all())
        return [self._decode(row) for row in rows]

    async def delete(self, tenant_id: str, row_id: str, expected_revision: int | None) -> bool:
        """Delete the row; False when absent.

        Raises:
            StorageDataError: an empty key.
            StorageConflictError: ``expected_revision`` is given and the row has another one.
        """
        require_key(tenant_id, "tenantId")
        require_key(row_id, self._id_field)
        where = self._where(tenant_id, row_id)
        async with self._db.write() as conn:
            row = (
                await conn.execute(select(self.table.c.revision).where(where).with_for_update())
            ).first()
            if row is None:
                return False
            actual = stored_int(row.revision, "revision")
            if expected_revision is not None and actual != expected_revision:
                raise StorageConflictError(
                    self._resource(tenant_id, row_id),
                    expected_revision=expected_revision,
                    actual_revision=actual,
                )
            await conn.execute(delete(self.table).where(where))
            return True
