"""Schema upgrades on open: Alembic migrations, refusing databases written by a newer schema.

:func:`upgrade_schema` runs in one writer transaction when a database is opened (on PostgreSQL
under an advisory lock, so concurrent openers upgrade one at a time). A database already at the
head revision is recognised with one query on ``alembic_version`` and Alembic is never imported;
a revision this package does not ship raises :class:`StorageSchemaError`.

Imported by :func:`~actoviq.storage.sqlite._engine.open_database` when it runs (this module
imports ``_engine``, so ``_engine`` imports it inside the function).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import select, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError, OperationalError

from actoviq.storage.sqlite._engine import unavailable
from actoviq.storage.sqlite._tables import SCHEMA_VERSION, schema_table
from actoviq.storage.sqlite.errors import StorageSchemaError

if TYPE_CHECKING:
    from alembic.config import Config

    from actoviq.storage.sqlite._engine import Database

MIGRATIONS = Path(__file__).with_name("migrations")
SHIPPED_REVISIONS = ("0001", "0002", "0003", "0004", "0005", "0006")
"""The Alembic revisions in ``migrations/versions``, oldest first; the last is the head.

Opening a database already at the head reads ``alembic_version`` with one query and never
imports Alembic (~22k objects, its template engine and the migration scripts), which keeps the
open fast and the process heap, which every full garbage collection walks, small. A test checks
this tuple against Alembic's own view of the scripts.
"""
_PG_LOCK_KEY = 0x61637476  # "actv": serialises concurrent schema upgrades on PostgreSQL


def _alembic_config() -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def known_revisions() -> tuple[set[str], str]:
    """Every Alembic revision this package ships, and the head (asks Alembic)."""
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(_alembic_config())
    head = script.get_current_head()
    if head is None:  # pragma: no cover - the wheel always ships 0001
        raise StorageSchemaError("actoviq-storage-sqlite ships no schema migrations.")
    return {rev.revision for rev in script.walk_revisions()}, head


async def upgrade_schema(database: Database) -> None:
    """Bring the database's schema to the head revision in one writer transaction.

    Raises:
        StorageUnavailableError: the database cannot be reached or locked.
        StorageSchemaError: the database was written by a newer schema.
    """
    try:
        async with database.write() as conn:
            if database.dialect == "postgresql":
                await conn.execute(text(f"SELECT pg_advisory_xact_lock({_PG_LOCK_KEY})"))
            await conn.run_sync(_upgrade_sync)
    except (OSError, DBAPIError) as error:
        if isinstance(error, DBAPIError) and not isinstance(error, OperationalError):
            raise
        raise unavailable(error) from error


def _current_revision(conn: Connection) -> str | None:
    """The ``alembic_version`` row (None on a fresh database), as Alembic would read it."""
    if not conn.dialect.has_table(conn, "alembic_version"):
        return None
    rows = conn.exec_driver_sql("SELECT version_num FROM alembic_version").all()
    if len(rows) > 1:  # pragma: no cover - our history is linear; let Alembic report it
        from alembic.runtime.migration import MigrationContext

        return MigrationContext.configure(conn).get_current_revision()
    return None if not rows else str(rows[0][0])


def _upgrade_sync(conn: Connection) -> None:
    revisions, head = set(SHIPPED_REVISIONS), SHIPPED_REVISIONS[-1]
    current = _current_revision(conn)
    if current is not None and current not in revisions:
        raise StorageSchemaError(
            f"Unsupported storage-v2 schema revision {current!r}: the database was written by a "
            f"newer actoviq-storage-sqlite (this one knows up to {head!r}); upgrade the package."
        )
    if current != head:
        from alembic import command

        config = _alembic_config()
        config.attributes["connection"] = conn
        command.upgrade(config, "head")
    version = conn.execute(select(schema_table.c.version)).scalar_one_or_none()
    if version != SCHEMA_VERSION:
        raise StorageSchemaError(f"Unsupported storage-v2 schema version {version}")
