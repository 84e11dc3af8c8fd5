"""``open_runtime``: an ``AgentRuntime`` whose sessions and checkpoints live in one database.

The one obvious path for a persistent agent: ``async with open_runtime("app.db") as runtime:``
opens (and creates) the database, wires ``sessions=`` and ``checkpoints=`` to it, and on exit
closes the runtime, then the database.

Example:
    >>> # async with open_runtime("chat.db", tools=[lookup]) as runtime:
    >>> #     result = await runtime.run(agent, "Hi", session_id="me")
    >>> #     waiting = await runtime.pending("run-1")
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

from actoviq.runtime import AgentRuntime
from actoviq.storage.sqlite.storage import SqliteStorage

__all__ = ["open_runtime"]


@contextlib.asynccontextmanager
async def open_runtime(target: str | Path, **runtime_options: Any) -> AsyncGenerator[AgentRuntime]:
    """Open ``target`` (a path, ``":memory:"`` or a database URL) and an ``AgentRuntime`` on it.

    Args:
        target: what :meth:`SqliteStorage.open` opens.
        runtime_options: keyword options of ``AgentRuntime`` (``models``, ``tools``, ...);
            ``sessions`` and ``checkpoints`` are this database's.

    Raises:
        StorageUnavailableError / StorageSchemaError: the database cannot be opened.
        RuntimeConfigurationError: ``sessions``/``checkpoints`` were given too.
    """
    async with await SqliteStorage.open(target) as storage:
        runtime = AgentRuntime(
            sessions=storage.runtime_sessions(),
            checkpoints=storage.runtime_checkpoints(),
            **runtime_options,
        )
        async with runtime:
            yield runtime
