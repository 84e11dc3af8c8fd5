"""``AgentRuntimeBridgeAdapter``: a host bridge over a caller-owned runtime (spec 03 §6.8).

The adapter owns nothing: it never builds, replaces or closes a runtime, its services, its
provider or its sessions. ``run`` delegates to ``runtime.run(agent, …)``; ``stream`` wraps
``runtime.stream(agent, …)`` and yields the ``bridge`` copy of a fresh shared projection per
stream, so two streams never share projector state.

Example:
    >>> # async with AgentRuntime(models=...) as runtime:        # the host owns the runtime
    >>> #     bridge = AgentRuntimeBridgeAdapter(runtime, agent)
    >>> #     async with bridge.stream("hello") as stream:
    >>> #         async for semantic in stream:
    >>> #             ...                                          # SurfaceSemanticEvent
    >>> #         result = await stream.result()
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Iterable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, Self

from actoviq.core import AgentSpec, JsonObject, RunResult
from actoviq.events import RunEvent
from actoviq.surfaces.projector import ProjectorOptions
from actoviq.surfaces.shared import SharedRunEventSurfaceProjector
from actoviq.surfaces.types import SurfaceSemanticEvent, SurfaceTarget, check_target

if TYPE_CHECKING:
    from actoviq.runtime import AgentInput, InterruptionDecision, RunHandle

__all__ = ["AgentRuntimeBridgeAdapter", "BridgeRuntime", "BridgeStream"]


class BridgeRuntime(Protocol):
    """What the bridge needs from a runtime (``actoviq.runtime.AgentRuntime`` fits)."""

    async def run(
        self, agent: AgentSpec[Any, Any], input: AgentInput, **options: Any
    ) -> RunResult[Any]:
        """Run to completion."""
        ...

    def stream(
        self, agent: AgentSpec[Any, Any], input: AgentInput, **options: Any
    ) -> RunHandle[Any]:
        """Start a streamed run."""
        ...

    def resume(
        self,
        state: Any,
        decisions: Iterable[InterruptionDecision] = (),
        *,
        context: Any = None,
        signal: Any = None,
        limits: Any = None,
    ) -> RunHandle[Any]:
        """Continue an interrupted run."""
        ...


class BridgeStream:
    """A streamed run seen as semantic events: an async iterator and async context manager.

    ``run_id``, :meth:`result`, :meth:`cancel` and :meth:`snapshot` are the wrapped
    ``RunHandle``'s; leaving ``async with`` cancels an unfinished run and waits for it.
    """

    def __init__(
        self,
        handle: RunHandle[Any],
        projector: SharedRunEventSurfaceProjector,
        target: SurfaceTarget = "bridge",
    ) -> None:
        self._handle = handle
        self._projector = projector
        self._target: SurfaceTarget = check_target(target)
        self._pending: deque[SurfaceSemanticEvent] = deque()
        self._source: AsyncIterator[RunEvent] | None = None

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self._handle.run_id

    @property
    def handle(self) -> RunHandle[Any]:
        """The wrapped runtime handle."""
        return self._handle

    @property
    def projector(self) -> SharedRunEventSurfaceProjector:
        """This stream's own projector."""
        return self._projector

    @property
    def done(self) -> bool:
        """True once the run settled."""
        return self._handle.done

    async def result(self) -> RunResult[Any]:
        """The run's outcome (raises the run's error if it failed)."""
        return await self._handle.result()

    def cancel(self, reason: object = None) -> None:
        """Cancel the run (no-op once settled)."""
        self._handle.cancel(reason)

    async def snapshot(self) -> JsonObject:
        """The latest serialised run state."""
        return await self._handle.snapshot()

    def __aiter__(self) -> Self:
        if self._source is None:
            self._source = aiter(self._handle)
        return self

    async def __anext__(self) -> SurfaceSemanticEvent:
        pending = self._pending
        if pending:
            return pending.popleft()
        source = self._source
        if source is None:
            source = self._source = aiter(self._handle)
        project_for = self._projector.project_for
        target = self._target
        while True:
            event = await anext(source)  # StopAsyncIteration ends this iterator too
            projected = project_for(event, target)
            if projected:
                pending.extend(projected[1:])
                return projected[0]

    async def aclose(self) -> None:
        """Stop: cancels an unfinished run and waits until it settled."""
        await self._handle.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class AgentRuntimeBridgeAdapter:
    """Runs one agent on a runtime the caller owns, for a host bridge.

    Args:
        runtime: the caller's runtime (never closed or replaced here).
        agent: the agent every call runs.
        projector_options: options for each stream's fresh projector.
        target: which copy a stream yields (default ``"bridge"``).
    """

    def __init__(
        self,
        runtime: BridgeRuntime,
        agent: AgentSpec[Any, Any],
        projector_options: ProjectorOptions | None = None,
        *,
        target: SurfaceTarget = "bridge",
    ) -> None:
        self.runtime = runtime
        self.agent = agent
        self.projector_options = projector_options
        self.target: SurfaceTarget = check_target(target)

    async def run(self, input: AgentInput, **options: Any) -> RunResult[Any]:
        """``runtime.run(agent, input, **options)``: see ``AgentRuntime.run``."""
        return await self.runtime.run(self.agent, input, **options)

    def stream(self, input: AgentInput, **options: Any) -> BridgeStream:
        """Start ``runtime.stream(agent, input, **options)``, wrapped in a :class:`BridgeStream`."""
        handle = self.runtime.stream(self.agent, input, **options)
        return BridgeStream(
            handle, SharedRunEventSurfaceProjector(self.projector_options), self.target
        )

    def resume(
        self,
        state: Any,
        decisions: Iterable[InterruptionDecision] = (),
        *,
        projector: SharedRunEventSurfaceProjector | None = None,
        context: Any = None,
        signal: Any = None,
        limits: Any = None,
    ) -> BridgeStream:
        """``runtime.resume(state, decisions, ...)`` wrapped in a :class:`BridgeStream`.

        Pass the interrupted stream's ``projector`` to keep one projection across both legs
        (sequences continue across a resume); by default a fresh one is used.
        """
        handle = self.runtime.resume(
            state, decisions, context=context, signal=signal, limits=limits
        )
        if projector is None:
            projector = SharedRunEventSurfaceProjector(self.projector_options)
        return BridgeStream(handle, projector, self.target)
