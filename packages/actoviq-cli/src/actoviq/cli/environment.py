"""One command's resources: the storage (opened once, on first need) and runtimes over it.

:class:`CliEnvironment` is an async context manager: it owns the ``SqliteStorage`` it opens and
closes it last. Runtimes it builds use ``storage.runtime_sessions()`` (through the ``sessions``
service, resolved only by runs with a session) and ``storage.runtime_checkpoints()`` as
``AgentRuntime(checkpoints=...)`` (claims make ``resume`` exactly-once across processes),
optionally deferred (see :mod:`actoviq.cli.checkpoints`).
"""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import TYPE_CHECKING, Self

from actoviq.cli.agents import AgentSetup
from actoviq.cli.checkpoints import DeferredCheckpointStore
from actoviq.cli.config import CliSettings
from actoviq.cli.models import build_registry
from actoviq.runtime import (
    AgentRuntime,
    ClaimingRunCheckpointStore,
    RuntimeServices,
    RuntimeSessionStore,
    ServiceDefinition,
)
from actoviq.runtime.stores import DEFAULT_LEASE_MS

if TYPE_CHECKING:
    from actoviq.storage.sqlite import SqliteStorage

__all__ = ["CliEnvironment"]


class CliEnvironment:
    """The storage and runtimes of one command invocation.

    Args:
        settings: the loaded configuration (``settings.storage`` names the database).
    """

    def __init__(self, settings: CliSettings) -> None:
        self.settings = settings
        self._storage: SqliteStorage | None = None
        self._lock = asyncio.Lock()
        self._runtimes: list[AgentRuntime] = []

    @property
    def tenant(self) -> str:
        """The storage tenant."""
        return self.settings.tenant

    async def storage(self) -> SqliteStorage:
        """The storage, opened (and its schema created or upgraded) on first call."""
        if self._storage is None:
            async with self._lock:
                if self._storage is None:
                    from actoviq.storage.sqlite import SqliteStorage

                    self._storage = await SqliteStorage.open(self.settings.storage)
        return self._storage

    async def sessions(self) -> RuntimeSessionStore:
        """The runtime's session store: ``storage.runtime_sessions()``."""
        return (await self.storage()).runtime_sessions()

    async def checkpoints(self) -> ClaimingRunCheckpointStore:
        """The claiming checkpoint store: ``storage.runtime_checkpoints(tenant_id=...)``."""
        return (await self.storage()).runtime_checkpoints(tenant_id=self.tenant)

    def runtime(self, setup: AgentSetup, *, defer_checkpoints: bool = False) -> AgentRuntime:
        """A runtime for ``setup``'s agent (closed with the environment).

        Args:
            setup: the agent with its tools, middleware and models.
            defer_checkpoints: keep a fresh run's input-only states in memory until something
                worth keeping happens (start-up speed of ``actoviq run``).
        """
        checkpoints = DeferredCheckpointStore(self.checkpoints, defer=defer_checkpoints)
        lease = self.settings.lease_seconds
        # The session store is a lazy service rather than ``sessions=``: ``sessions=`` takes an
        # opened store, and a run without a session must not open the database to start.
        services = RuntimeServices(
            {
                "sessions": ServiceDefinition(
                    factory=self.sessions, description="SQL sessions (actoviq-storage-sqlite)"
                )
            }
        )
        runtime = AgentRuntime(
            models=build_registry(self.settings, setup.models),
            tools=setup.tools,
            services=services,
            middleware=setup.middleware,
            middleware_registry=setup.middleware_registry,
            checkpoints=checkpoints,
            checkpoint_lease_ms=(
                DEFAULT_LEASE_MS if lease is None else max(1, round(lease * 1000))
            ),
            agents=[setup.agent.spec],
        )
        self._runtimes.append(runtime)
        return runtime

    async def aclose(self) -> None:
        """Close the runtimes (cancelling their runs), then the storage; idempotent."""
        runtimes, self._runtimes = self._runtimes, []
        try:
            for runtime in reversed(runtimes):
                await runtime.aclose()
        finally:
            storage, self._storage = self._storage, None
            if storage is not None:
                await storage.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
