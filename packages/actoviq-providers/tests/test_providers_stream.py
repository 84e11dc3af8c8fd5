"""The stream primitive (02 §2.7, §5.6 rows 45-50)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from actoviq.core import AbortController, ModelRefParts, TextItem
from actoviq.providers import (
    ModelCallAbortedError,
    ModelCallContext,
    ModelResponse,
    ModelStream,
    ModelStreamEvent,
    ResolvedModel,
    ResponseCompleted,
    StreamConsumedError,
    TextDelta,
)

MODEL = ResolvedModel(provider_id="p", model_id="m", ref=ModelRefParts(provider="p", model="m"))


def response(text: str, rid: str = "r") -> ModelResponse:
    return ModelResponse(id=rid, model=MODEL, output=[TextItem(role="assistant", text=text)])


class Mapper:
    def __init__(self, *, emit: bool = True) -> None:
        self.emit = emit
        self.final = response("final", "fin")

    def map(self, event: Any) -> Sequence[ModelStreamEvent]:
        if not self.emit:
            return []
        if event == "complete":
            return [ResponseCompleted(response=response("complete", "c"))]
        return [TextDelta(delta=str(event))]

    def finalize(self) -> ModelResponse:
        return self.final


class Source:
    """A provider source that records whether it was closed."""

    def __init__(self, events: list[Any], *, block: bool = False, fail: bool = False) -> None:
        self.events = events
        self.block = block
        self.fail = fail
        self.closed = False
        self.started = 0
        self.blocked = asyncio.Event()  # set when a read blocks (block=True)

    def __aiter__(self) -> Source:
        return self

    async def __anext__(self) -> Any:
        if self.events:
            return self.events.pop(0)
        if self.fail:
            raise RuntimeError("source failed")
        if self.block:
            self.blocked.set()
            await asyncio.Event().wait()
        raise StopAsyncIteration

    async def aclose(self) -> None:
        self.closed = True


def make(source: Source, mapper: Mapper | None = None, context: ModelCallContext | None = None):
    async def start(ctx: ModelCallContext) -> AsyncIterator[Any]:
        source.started += 1
        return source

    return ModelStream(context=context, start=start, mapper=mapper or Mapper())


async def test_completion_identity_single_consumer_and_cancel_after_completion() -> None:
    stream = make(Source(["a", "complete"]))
    events = [event async for event in stream]
    assert isinstance(events[-1], ResponseCompleted)
    assert [e.type for e in events] == ["text.delta", "response.completed"]
    final = await stream.final_response()
    assert final is events[-1].response
    assert await stream.final_response() is final
    with pytest.raises(StreamConsumedError, match="single-consumer"):
        stream.__aiter__()
    stream.cancel("after completion")  # no-op
    assert await stream.final_response() is final


async def test_final_response_drains_when_mapper_emits_nothing() -> None:
    mapper = Mapper(emit=False)
    stream = make(Source(["a", "b"]), mapper)
    assert await stream.final_response() is mapper.final


async def test_synthetic_completion_is_yielded_exactly_once() -> None:
    stream = make(Source(["a", "complete", "complete", "b"]))
    events = [event async for event in stream]
    assert [e.type for e in events].count("response.completed") == 1
    assert events[-1].type == "text.delta"  # events after completion still flow
    src = Source(["x"])
    events = [event async for event in make(src)]
    assert [e.type for e in events] == ["text.delta", "response.completed"]


async def test_lazy_start() -> None:
    source = Source(["a"])
    stream = make(source)
    assert source.started == 0
    await stream.final_response()
    assert source.started == 1


async def test_cancel_before_start_rejects_with_abort_error() -> None:
    source = Source(["a"])
    stream = make(source)
    stream.cancel()
    with pytest.raises(ModelCallAbortedError) as info:
        await stream.final_response()
    assert info.value.name == "AbortError"
    assert source.started == 0


async def test_parent_abort_reason_is_raised() -> None:
    controller = AbortController()
    controller.abort(RuntimeError("parent stopped"))
    stream = make(Source(["a"]), context=ModelCallContext(signal=controller.signal))
    with pytest.raises(RuntimeError, match="parent stopped"):
        await stream.final_response()


async def test_source_failure_propagates_and_closes_source() -> None:
    source = Source(["a"], fail=True)
    stream = make(source)
    with pytest.raises(RuntimeError, match="source failed"):
        await stream.final_response()
    assert source.closed
    with pytest.raises(RuntimeError, match="source failed"):
        await stream.final_response()


async def test_breaking_out_of_async_with_stops_early_and_closes_source() -> None:
    source = Source(["a", "b", "complete"])
    async with make(source) as stream:
        async for _event in stream:
            break
    assert source.closed
    assert stream.signal.aborted
    with pytest.raises(ModelCallAbortedError, match="stopped early"):
        await stream.final_response()


async def test_cancel_with_reason_interrupts_blocked_read() -> None:
    source = Source(["a"], block=True)
    stream = make(source)
    seen: list[str] = []

    async def consume() -> None:
        async for event in stream:
            seen.append(event.type)
            stream.cancel(ValueError("user stop"))

    with pytest.raises(ValueError, match="user stop"):
        await consume()
    assert seen == ["text.delta"]
    assert source.closed
    with pytest.raises(ValueError, match="user stop"):
        await stream.final_response()


async def test_parent_abort_during_iteration() -> None:
    controller = AbortController()
    source = Source(["a"], block=True)
    stream = make(source, context=ModelCallContext(signal=controller.signal))

    async def consume() -> list[str]:
        return [event.type async for event in stream]

    async with asyncio.TaskGroup() as group:
        task = group.create_task(_expect(consume(), KeyError))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        controller.abort(KeyError("parent"))
    assert isinstance(task.result(), KeyError)
    assert source.closed


async def _expect(awaitable: Any, kind: type[BaseException]) -> BaseException:
    try:
        await awaitable
    except kind as error:
        return error
    raise AssertionError("expected an error")


async def test_task_cancellation_settles_stream() -> None:
    source = Source(["a"], block=True)
    stream = make(source)

    async def consume() -> None:
        async for _ in stream:
            pass

    task = asyncio.ensure_future(consume())
    async with asyncio.timeout(10):
        await source.blocked.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert source.closed
    with pytest.raises(ModelCallAbortedError, match="cancelled"):
        await stream.final_response()


async def test_past_deadline_raises_timeout_before_start() -> None:
    from actoviq.providers import ModelCallTimeoutError, check_call_available

    with pytest.raises(ModelCallTimeoutError) as info:
        check_call_available(ModelCallContext(deadline=1.0))
    assert info.value.code == "MODEL_CALL_TIMEOUT"
    assert info.value.name == "AbortError"


async def test_cancel_from_another_task_interrupts_a_blocked_read() -> None:
    source = Source(["a"], block=True)
    stream = make(source)
    seen: list[str] = []
    first = asyncio.Event()

    async def consume() -> BaseException:
        try:
            async for event in stream:
                seen.append(event.type)
                first.set()
        except ValueError as error:
            # Our own cancellation was withdrawn: the task is not left cancelling.
            task = asyncio.current_task()
            assert task is not None and task.cancelling() == 0
            await asyncio.sleep(0)  # would raise CancelledError if it were still pending
            return error
        raise AssertionError("expected the abort reason")

    async with asyncio.TaskGroup() as group:
        consumer = group.create_task(consume())
        await first.wait()
        await asyncio.sleep(0)  # the consumer is now suspended in the source read
        stream.cancel(ValueError("stop now"))
    assert str(consumer.result()) == "stop now"
    assert seen == ["text.delta"] and source.closed
    with pytest.raises(ValueError, match="stop now"):
        await stream.final_response()


async def test_outer_cancellation_still_wins_over_a_stream_abort() -> None:
    source = Source(["a"], block=True)
    stream = make(source)
    started = asyncio.Event()

    async def consume() -> None:
        async for _event in stream:
            started.set()

    task = asyncio.ensure_future(consume())
    await started.wait()
    await asyncio.sleep(0)
    task.cancel()  # someone else cancels the consumer first...
    stream.cancel(ValueError("late"))  # ...then the stream is aborted too
    with pytest.raises(asyncio.CancelledError):
        await task
    assert source.closed


async def test_timeout_around_a_blocked_stream_read_is_a_timeout() -> None:
    source = Source(["a"], block=True)
    stream = make(source)

    async def consume() -> None:
        async for _event in stream:
            pass

    async def expire_once_blocked(deadline: asyncio.Timeout) -> None:
        await source.blocked.wait()
        deadline.reschedule(asyncio.get_running_loop().time())

    async def consume_under_timeout(group: asyncio.TaskGroup) -> None:
        # the timeout expires while the read is blocked, however slow the machine is
        async with asyncio.timeout(10) as deadline:
            group.create_task(expire_once_blocked(deadline))
            await consume()

    async with asyncio.TaskGroup() as group:
        with pytest.raises(TimeoutError):
            await consume_under_timeout(group)
    assert source.closed
    with pytest.raises(ModelCallAbortedError, match="cancelled"):
        await stream.final_response()


async def test_abort_without_a_blocked_read_is_seen_on_the_next_read() -> None:
    source = Source(["a", "b", "c"])
    stream = make(source)
    events: list[str] = []

    async def consume() -> None:
        async for event in stream:
            events.append(event.type)
            stream.cancel(KeyError("stop"))

    with pytest.raises(KeyError):
        await consume()
    assert events == ["text.delta"]
    assert source.events == ["b", "c"]  # no read once aborted


async def test_scripted_stream_lets_other_tasks_run_between_events() -> None:
    """Like a network stream, the scripted source yields to the loop between events, so a
    consumer of the stream never starves its peers (the runtime's buffer relies on it)."""
    from actoviq.providers import ModelRequest
    from actoviq.providers.testing import ScriptedProvider, ScriptedTurn

    provider = ScriptedProvider([ScriptedTurn(text="abc", stream_deltas=["a", "b", "c"])])
    request = ModelRequest(model="m", input=[TextItem(role="user", text="go")])
    seen: list[str] = []
    observed: list[int] = []

    async def consume() -> None:
        async for event in provider.stream(request):
            if isinstance(event, TextDelta):
                seen.append(event.delta)

    async def observe() -> None:
        while len(seen) < 3:
            observed.append(len(seen))
            await asyncio.sleep(0)

    async with asyncio.TaskGroup() as group:
        group.create_task(consume())
        group.create_task(observe())
    assert seen == ["a", "b", "c"]
    assert {1, 2} <= set(observed)
