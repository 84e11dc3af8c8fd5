"""Alembic environment: runs on the connection that ``SqliteStorage.open`` passes in.

The storage opens its own engine, begins a writer transaction and calls ``command.upgrade`` with
``config.attributes["connection"]`` set, so migrations share that transaction (and its lock).
"""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Connection

from actoviq.storage.sqlite._tables import metadata

connection = context.config.attributes.get("connection")
if not isinstance(connection, Connection):
    raise RuntimeError("actoviq storage migrations run only through SqliteStorage.open().")
context.configure(connection=connection, target_metadata=metadata, transactional_ddl=True)
with context.begin_transaction():
    context.run_migrations()
