"""RuntimeServices (spec 03 §7.6 rows 55-61, S16 close ordering, ExceptionGroup)."""

from __future__ import annotations

import asyncio

import pytest

from actoviq.runtime.services import (
    WELL_KNOWN_SERVICES,
    RuntimeServices,
    RuntimeServicesClosedError,
    RuntimeServicesCloseError,
    ServiceDefinition,
    ServiceDescription,
    ServiceFactoryError,
    ServiceNotRegisteredError,
    ServiceRegistrationError,
)


class Closable:
    """A service that records its close calls into a shared log."""

    def __init__(self, name: str, log: list[str], *, fail: bool = False) -> None:
        self.name = name
        self.log = log
        self.fail = fail
        self.closes = 0

    async def close(self) -> None:
        self.closes += 1
        self.log.append(self.name)
        if self.fail:
            raise OSError(f"{self.name} failed to close")


async def test_no_factory_runs_until_resolve() -> None:
    """Row 55."""
    calls: list[str] = []

    def memory() -> object:
        calls.append("memory")
        return object()

    services = RuntimeServices(
        {"memory": ServiceDefinition(factory=memory, description="optional memory")}
    )
    assert services.inspect() == (
        ServiceDescription(
            id="memory", initialized=False, pending=False, description="optional memory"
        ),
    )
    assert services.inspect()[0].to_json() == {
        "id": "memory",
        "initialized": False,
        "pending": False,
        "description": "optional memory",
    }
    await services.close()
    assert calls == []


async def test_concurrent_resolves_share_one_factory_call_and_close_in_reverse() -> None:
    """Row 56."""
    log: list[str] = []
    factory_calls = 0

    async def sessions() -> Closable:
        nonlocal factory_calls
        factory_calls += 1
        await asyncio.sleep(0)
        return Closable("sessions", log)

    services = RuntimeServices({"sessions": sessions, "memory": lambda: Closable("memory", log)})
    first, second = await asyncio.gather(services.resolve("sessions"), services.resolve("sessions"))
    assert first is second
    assert factory_calls == 1
    assert services.is_initialized("sessions") and not services.is_initialized("memory")
    await services.resolve("memory")
    await services.close()
    assert log == ["memory", "sessions"]


async def test_pending_is_visible_while_the_factory_runs() -> None:
    gate = asyncio.Event()
    entered = asyncio.Event()

    async def slow() -> object:
        entered.set()
        await gate.wait()
        return object()

    services = RuntimeServices({"slow": slow})
    async with asyncio.TaskGroup() as group:
        task = group.create_task(services.resolve("slow"))
        await entered.wait()
        assert services.inspect()[0].pending is True
        gate.set()
    assert services.inspect()[0].initialized is True
    assert task.result() is await services.resolve("slow")


async def test_a_failed_factory_is_not_cached() -> None:
    """Row 57."""
    attempts = 0

    def flaky() -> object:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise RuntimeError("temporary failure")
        return "instance"

    services = RuntimeServices({"flaky": flaky})
    with pytest.raises(RuntimeError, match="temporary failure"):
        await services.resolve("flaky")
    assert not services.is_initialized("flaky")
    assert services.inspect()[0].pending is False
    assert await services.resolve("flaky") == "instance"
    assert attempts == 2


async def test_registration_rules_and_identity() -> None:
    """Row 58."""
    services = RuntimeServices()
    with pytest.raises(ServiceRegistrationError, match="must not be empty"):
        services.register(" ", lambda: object())
    services.register("memory", lambda: object())
    with pytest.raises(ServiceRegistrationError, match="already registered"):
        services.register("memory", lambda: object())
    with pytest.raises(ServiceRegistrationError, match="callable"):
        services.register("broken", ServiceDefinition(factory="nope"))  # type: ignore[arg-type]
    assert services.has("memory") and not services.has("missing")
    with pytest.raises(
        ServiceNotRegisteredError, match=r'Runtime service "missing" is not registered\.'
    ):
        await services.resolve("missing")
    assert await services.resolve("memory") is await services.resolve("memory")


async def test_close_failures_are_grouped_and_close_is_idempotent() -> None:
    """Row 59."""
    log: list[str] = []
    services = RuntimeServices(
        {
            "good": lambda: Closable("good", log),
            "bad": lambda: Closable("bad", log, fail=True),
        }
    )
    good = await services.resolve("good")
    await services.resolve("bad")
    with pytest.raises(RuntimeServicesCloseError) as caught:
        await services.close()
    assert str(caught.value).startswith("One or more runtime services failed to close.")
    assert [type(error) for error in caught.value.exceptions] == [OSError]
    assert 'while closing runtime service "bad"' in (caught.value.exceptions[0].__notes__ or [])
    assert log == ["bad", "good"]  # the failure did not stop the remaining closes
    assert isinstance(good, Closable) and good.closes == 1
    await services.close()
    assert log == ["bad", "good"]


async def test_close_during_initialization_closes_the_late_instance_once() -> None:
    """Row 60."""
    log: list[str] = []
    gate = asyncio.Event()
    entered = asyncio.Event()
    late = Closable("late", log)

    async def slow() -> Closable:
        entered.set()
        await gate.wait()
        return late

    services = RuntimeServices({"slow": slow})

    async def resolve() -> object:
        return await services.resolve("slow")

    task = asyncio.create_task(resolve())
    await entered.wait()
    await services.close()
    gate.set()
    with pytest.raises(RuntimeServicesClosedError, match="closed during initialization"):
        await task
    assert late.closes == 1
    assert not services.is_initialized("slow")


async def test_everything_raises_after_close() -> None:
    """Row 61."""
    services = RuntimeServices({"memory": lambda: object()})
    await services.close()
    assert services.closed
    with pytest.raises(RuntimeServicesClosedError, match=r"Runtime services are closed\."):
        services.register("other", lambda: object())
    with pytest.raises(RuntimeServicesClosedError, match=r"Runtime services are closed\."):
        await services.resolve("memory")


async def test_none_result_is_rejected_and_not_cached() -> None:
    calls = 0

    def nothing() -> None:
        nonlocal calls
        calls += 1

    services = RuntimeServices({"nothing": nothing})
    for _ in range(2):
        with pytest.raises(ServiceFactoryError, match="returned None"):
            await services.resolve("nothing")
    assert calls == 2


async def test_async_with_sync_close_aclose_and_plain_objects() -> None:
    log: list[str] = []

    class SyncClose:
        def close(self) -> None:
            log.append("sync")

    class AsyncAclose:
        async def aclose(self) -> None:
            log.append("aclose")

        def close(self) -> None:  # aclose wins when both exist
            log.append("wrong")

    async with RuntimeServices(
        {"a": SyncClose, "b": AsyncAclose, "c": lambda: "plain"}
    ) as services:
        for service_id in ("a", "b", "c"):
            await services.resolve(service_id)
    assert log == ["aclose", "sync"]
    assert services.closed


async def test_close_timeout_is_reported_in_the_group() -> None:
    class Hangs:
        async def close(self) -> None:
            await asyncio.Event().wait()

    services = RuntimeServices({"hangs": Hangs}, close_timeout_ms=5)
    await services.resolve("hangs")
    with pytest.raises(RuntimeServicesCloseError) as caught:
        await services.close()
    assert isinstance(caught.value.exceptions[0], TimeoutError)
    with pytest.raises(ValueError, match="close_timeout_ms"):
        RuntimeServices(close_timeout_ms=0)


async def test_a_cancelled_resolver_lets_a_waiter_retry() -> None:
    gate = asyncio.Event()
    entered = asyncio.Event()
    attempts = 0

    async def slow() -> str:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            entered.set()
            await gate.wait()
        return f"instance-{attempts}"

    services = RuntimeServices({"slow": slow})
    first = asyncio.create_task(services.resolve("slow"))
    await entered.wait()
    second = asyncio.create_task(services.resolve("slow"))
    await asyncio.sleep(0)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    assert await second == "instance-2"


async def test_resolve_typed_checks_the_instance() -> None:
    services = RuntimeServices({"memory": lambda: {"k": 1}})
    assert await services.resolve_typed("memory", dict) == {"k": 1}
    with pytest.raises(ServiceFactoryError, match="not a list"):
        await services.resolve_typed("memory", list)
    assert "sessions" in WELL_KNOWN_SERVICES
