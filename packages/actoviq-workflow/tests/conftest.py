from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from actoviq.core import JsonValue
from actoviq.workflow import (
    BubblewrapWorkflowExecutor,
    CapabilityCallContext,
    CapabilityHandler,
    LocalIsolatedProcessWorkflowExecutor,
    ProcessResourceLimits,
    ProcessWorkflowExecutorBase,
    WorkflowExecutorLimits,
)

SMALL_RESOURCES = ProcessResourceLimits(
    cpu_seconds=1,
    address_space_bytes=256 * 1024 * 1024,
    open_files=32,
    max_processes=0,
    file_size_bytes=1024 * 1024,
)
SMALL_LIMITS = WorkflowExecutorLimits(
    timeout_ms=15_000,
    max_output_bytes=16 * 1024,
    max_message_bytes=64 * 1024,
    max_protocol_messages=64,
)


def _status(executor: ProcessWorkflowExecutorBase) -> tuple[bool, str | None]:
    status = executor.capabilities()
    return status.available, status.reason


# Tests that start children skip with the probe's reason only where the kernel layers (or
# bubblewrap) are missing; on machines like CI's they run.
LOCAL_AVAILABLE, LOCAL_REASON = _status(LocalIsolatedProcessWorkflowExecutor())
BWRAP_AVAILABLE, BWRAP_REASON = _status(BubblewrapWorkflowExecutor())


class Recorder:
    """Capability handlers that record their calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, JsonValue, CapabilityCallContext]] = []

    def handler(self, name: str) -> CapabilityHandler:
        def handle(value: JsonValue, context: CapabilityCallContext) -> JsonValue:
            self.calls.append((name, value, context))
            return {"echo": value}

        return handle


ExecutorFactory = Callable[..., ProcessWorkflowExecutorBase]


def make_factory(kind: str) -> ExecutorFactory:
    def factory(**overrides: object) -> ProcessWorkflowExecutorBase:
        options: dict[str, object] = {"limits": SMALL_LIMITS, "resource_limits": SMALL_RESOURCES}
        options.update(overrides)
        if kind == "bubblewrap":
            return BubblewrapWorkflowExecutor(**options)  # type: ignore[arg-type]
        return LocalIsolatedProcessWorkflowExecutor(**options)  # type: ignore[arg-type]

    return factory


@pytest.fixture(params=["local", "bubblewrap"])
def executor_kind(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    if kind == "bubblewrap" and not BWRAP_AVAILABLE:
        pytest.skip(f"bubblewrap sandbox unavailable: {BWRAP_REASON}")
    if kind == "local" and not LOCAL_AVAILABLE:
        pytest.skip(f"local sandbox layers unavailable: {LOCAL_REASON}")
    return kind


@pytest.fixture
def make_executor(executor_kind: str) -> ExecutorFactory:
    return make_factory(executor_kind)


@pytest.fixture
async def executor(make_executor: ExecutorFactory) -> AsyncIterator[ProcessWorkflowExecutorBase]:
    async with make_executor() as created:
        yield created
        assert created.active_process_count == 0


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "workspace"
    path.mkdir()
    return path


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside"
    path.mkdir()
    (path / "secret.txt").write_text("TOP-SECRET-OUTSIDE")
    return path
