"""The database clock leases are compared against (``StoreClock``).

PostgreSQL serves several workers on several machines, so their leases compare with the
server's ``clock_timestamp()``; a SQLite file is local to one machine, whose wall clock it uses.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.engine import Connection

from actoviq.runtime.stores import StorageDataError, wall_clock_ms
from actoviq.storage.sqlite._engine import Database

__all__ = ["database_clock_ms"]

_PG_NOW_MS = text("SELECT CAST(FLOOR(EXTRACT(EPOCH FROM clock_timestamp()) * 1000) AS BIGINT)")


def _read(conn: Connection) -> int:
    value = conn.execute(_PG_NOW_MS).scalar_one()
    if type(value) is not int:
        raise StorageDataError("the database clock did not return an integer")
    return value


async def database_clock_ms(database: Database) -> int:
    """Epoch milliseconds by the database's clock (PostgreSQL) or this machine's (SQLite)."""
    if database.dialect != "postgresql":
        return wall_clock_ms()
    return await database.run_read(_read)
