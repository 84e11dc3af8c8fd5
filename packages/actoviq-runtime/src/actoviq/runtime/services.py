"""``RuntimeServices``: a lazy, explicit service container (spec 03 §2, S16).

Construction runs no factory and does no I/O; a minimal chat run resolves nothing. ``resolve``
creates an instance on first use (concurrent resolves share one factory call), caches it, and
does not cache failures. ``close`` closes the created instances in reverse creation order and
reports every failure in one :class:`RuntimeServicesCloseError` (an ``ExceptionGroup``).

Example:
    >>> import asyncio
    >>> class Memory:
    ...     closed = False
    ...     def close(self):
    ...         self.closed = True
    >>> async def main():
    ...     async with RuntimeServices({"memory": ServiceDefinition(factory=Memory)}) as services:
    ...         memory = await services.resolve("memory")
    ...     return memory.closed
    >>> asyncio.run(main())
    True
"""

from __future__ import annotations

import asyncio
import inspect
import math
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import ClassVar, Final, Self, TypeVar, cast

import attrs

from actoviq.core import ActoviqError, JsonObject

__all__ = [
    "WELL_KNOWN_SERVICES",
    "RuntimeServices",
    "RuntimeServicesCloseError",
    "RuntimeServicesClosedError",
    "RuntimeServicesError",
    "ServiceDefinition",
    "ServiceDescription",
    "ServiceFactory",
    "ServiceFactoryError",
    "ServiceNotRegisteredError",
    "ServiceRegistrationError",
]

T = TypeVar("T")

WELL_KNOWN_SERVICES: Final = ("sessions", "checkpoints", "memory", "artifacts", "tools", "tracing")
"""The service ids the runtime itself looks up."""

ServiceFactory = Callable[[], "object | Awaitable[object]"]
"""Builds a runtime service on first use (sync or async)."""

_CLOSED: Final = "Runtime services are closed."
_CLOSED_DURING_INIT: Final = "Runtime services were closed during initialization."


class RuntimeServicesError(ActoviqError):
    """Root of the service container errors."""

    default_code: ClassVar[str] = "RUNTIME_SERVICES_ERROR"


class RuntimeServicesClosedError(RuntimeServicesError):
    """The container is closed (or was closed while a factory ran)."""

    default_code: ClassVar[str] = "RUNTIME_SERVICES_CLOSED"


class ServiceRegistrationError(RuntimeServicesError, ValueError):
    """A blank id, a duplicate id or an invalid definition."""

    default_code: ClassVar[str] = "RUNTIME_SERVICE_REGISTRATION_INVALID"


class ServiceNotRegisteredError(RuntimeServicesError, LookupError):
    """``resolve`` of an id that was never registered."""

    default_code: ClassVar[str] = "RUNTIME_SERVICE_NOT_REGISTERED"


class ServiceFactoryError(RuntimeServicesError):
    """A factory returned None or an instance of the wrong type."""

    default_code: ClassVar[str] = "RUNTIME_SERVICE_FACTORY_INVALID"


class RuntimeServicesCloseError(ExceptionGroup[Exception]):
    """One or more services failed to close; ``exceptions`` holds each failure."""

    code: ClassVar[str] = "RUNTIME_SERVICES_CLOSE_FAILED"

    def derive(self, excs: object) -> RuntimeServicesCloseError:
        """Keep the type when the group is split."""
        return RuntimeServicesCloseError(self.message, list(cast(list[Exception], excs)))


@attrs.frozen(kw_only=True, slots=True)
class ServiceDefinition:
    """How to create a service: a (sync or async) ``factory`` and a human ``description``."""

    factory: ServiceFactory
    description: str | None = None


@attrs.frozen(kw_only=True, slots=True)
class ServiceDescription:
    """What :meth:`RuntimeServices.inspect` reports about one service (never runs a factory)."""

    id: str
    initialized: bool
    pending: bool
    description: str | None

    def to_json(self) -> JsonObject:
        """``{id, initialized, pending, description}`` (description may be null)."""
        return {
            "id": self.id,
            "initialized": self.initialized,
            "pending": self.pending,
            "description": self.description,
        }


class _Abandoned(Exception):
    """The resolver that ran the factory was cancelled; waiters start over."""


class RuntimeServices:
    """Lazily created, explicitly closed services keyed by id.

    Args:
        definitions: services to register, in order (a bare callable is a factory).
        close_timeout_ms: the bound on each service's ``close()`` (None: unbounded).
    """

    def __init__(
        self,
        definitions: Mapping[str, ServiceDefinition | ServiceFactory] | None = None,
        *,
        close_timeout_ms: float | None = 30_000,
    ) -> None:
        if close_timeout_ms is not None and (
            isinstance(close_timeout_ms, bool)
            or not isinstance(close_timeout_ms, int | float)  # pyright: ignore[reportUnnecessaryIsInstance]
            or not math.isfinite(close_timeout_ms)
            or close_timeout_ms <= 0
        ):
            raise ValueError("close_timeout_ms must be a positive finite number or None.")
        self._close_timeout_ms = close_timeout_ms
        self._definitions: dict[str, ServiceDefinition] = {}
        self._instances: dict[str, object] = {}
        self._pending: dict[str, asyncio.Future[object]] = {}
        self._order: list[str] = []
        self._closed = False
        for service_id, definition in (definitions or {}).items():
            self.register(service_id, definition)

    @property
    def closed(self) -> bool:
        """True once :meth:`close` started."""
        return self._closed

    def register(self, id: str, definition: ServiceDefinition | ServiceFactory) -> None:
        """Register a service (its factory runs on first :meth:`resolve`).

        Raises:
            RuntimeServicesClosedError: the container is closed.
            ServiceRegistrationError: blank or duplicate id, or no callable factory.
        """
        if self._closed:
            raise RuntimeServicesClosedError(_CLOSED)
        if not isinstance(id, str) or not id.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ServiceRegistrationError("Runtime service id must not be empty.")
        if id in self._definitions:
            raise ServiceRegistrationError(f'Runtime service "{id}" is already registered.')
        if not isinstance(definition, ServiceDefinition):
            definition = ServiceDefinition(factory=definition)
        if not callable(definition.factory):
            raise ServiceRegistrationError(f'Runtime service "{id}" factory must be callable.')
        self._definitions[id] = definition

    def has(self, id: str) -> bool:
        """Whether ``id`` is registered."""
        return id in self._definitions

    def is_initialized(self, id: str) -> bool:
        """Whether an instance of ``id`` is cached."""
        return id in self._instances

    def inspect(self) -> tuple[ServiceDescription, ...]:
        """Describe every service in registration order; never runs a factory."""
        return tuple(
            ServiceDescription(
                id=service_id,
                initialized=service_id in self._instances,
                pending=service_id in self._pending,
                description=definition.description,
            )
            for service_id, definition in self._definitions.items()
        )

    async def resolve(self, id: str) -> object:
        """The instance of ``id``, created on first use.

        Raises:
            RuntimeServicesClosedError: the container is (or became) closed.
            ServiceNotRegisteredError: ``id`` is unknown.
            ServiceFactoryError: the factory returned None.
            Exception: whatever the factory raised (not cached: the next resolve retries).
        """
        while True:
            if self._closed:
                raise RuntimeServicesClosedError(_CLOSED)
            definition = self._definitions.get(id)
            if definition is None:
                raise ServiceNotRegisteredError(f'Runtime service "{id}" is not registered.')
            if id in self._instances:
                return self._instances[id]
            pending = self._pending.get(id)
            if pending is None:
                return await self._initialize(id, definition)
            try:
                return await asyncio.shield(pending)
            except _Abandoned:
                continue

    async def resolve_typed(self, id: str, cls: type[T]) -> T:
        """:meth:`resolve`, checked with ``isinstance(instance, cls)``.

        Raises:
            ServiceFactoryError: the instance is not a ``cls``.
        """
        instance = await self.resolve(id)
        if not isinstance(instance, cls):
            raise ServiceFactoryError(
                f'Runtime service "{id}" is a {type(instance).__name__}, not a {cls.__name__}.'
            )
        return instance

    async def _initialize(self, id: str, definition: ServiceDefinition) -> object:
        future: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self._pending[id] = future
        try:
            await asyncio.sleep(0)  # the factory runs on the next tick, never inside register()
            instance = definition.factory()
            if inspect.isawaitable(instance):
                instance = await cast(Awaitable[object], instance)
            if instance is None:
                raise ServiceFactoryError(f'Runtime service "{id}" factory returned None.')
            if self._closed:
                await self._close_instance(instance)
                raise RuntimeServicesClosedError(_CLOSED_DURING_INIT)
        except asyncio.CancelledError:
            _settle(future, _Abandoned())
            raise
        except BaseException as error:
            _settle(future, error)
            raise
        finally:
            if self._pending.get(id) is future:
                del self._pending[id]
        self._instances[id] = instance
        self._order.append(id)
        future.set_result(instance)
        return instance

    async def close(self) -> None:
        """Close created services in reverse creation order; idempotent.

        Raises:
            RuntimeServicesCloseError: one or more ``close()`` calls failed or timed out (the
                first ``close()`` only; later calls return normally).
        """
        if self._closed:
            return
        self._closed = True
        failures: list[Exception] = []
        for service_id in reversed(self._order):
            instance = self._instances.pop(service_id)
            try:
                await self._close_instance(instance)
            except Exception as error:
                error.add_note(f'while closing runtime service "{service_id}"')
                failures.append(error)
        self._order.clear()
        if failures:
            raise RuntimeServicesCloseError(
                "One or more runtime services failed to close.", failures
            )

    async def _close_instance(self, instance: object) -> None:
        closer = getattr(instance, "aclose", None)
        if not callable(closer):
            closer = getattr(instance, "close", None)
        if not callable(closer):
            return
        timeout = None if self._close_timeout_ms is None else self._close_timeout_ms / 1000.0
        async with asyncio.timeout(timeout):
            outcome = closer()
            if inspect.isawaitable(outcome):
                await cast(Awaitable[object], outcome)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return (
            f"RuntimeServices(registered={len(self._definitions)}, "
            f"initialized={len(self._instances)}, closed={self._closed})"
        )


def _settle(future: asyncio.Future[object], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)
        future.exception()  # mark retrieved: waiters re-raise it, nobody else must
