"""A run never ends with a raw exception or a half-written checkpoint (issue 11 §2, D10).

Fault injection: a checkpoint store that fails at a chosen persistence step (the first save, the
model-response save, a call's ``started``/``committed`` save, the interrupted / cancelled /
completed save), once, for as long as the failing value is in the state, or for good (an
outage); a session store that fails to load or append; a sink that fails; a state that cannot be
serialised. Every run must end with a typed error (``phase == "persistence"``, a code naming the
step) and a terminal ``run.failed`` event saying what the store now holds; and what it holds
must resume safely.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest
from runtime_testkit import json_tool, make_agent, scripted_runtime

from actoviq.core import ActoviqError, JsonObject, RunError, ToolCallItem, ToolResultItem
from actoviq.events import InMemoryEventSink, RunEvent
from actoviq.providers import ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import (
    AgentRuntime,
    InMemoryCheckpointStore,
    InMemorySessionStore,
    InterruptionDecision,
    RunLease,
    RunPersistenceError,
    SerializedRunState,
    StorageUnavailableError,
    StoreRunCheckpointAdapter,
    StoreRuntimeSessionAdapter,
    ToolExecutionContext,
)

CHARGE = ToolCallItem(id="c1", name="charge", input={"amount": 5})
EXIT_WORKER = Path(__file__).resolve().parent / "runtime_exit_worker.py"
Predicate = Callable[[JsonObject], bool]


def _answer(request: ModelRequest) -> ScriptedTurn:
    if not any(isinstance(item, ToolResultItem) for item in request.input):
        return ScriptedTurn(tool_calls=[CHARGE])
    return ScriptedTurn(text="charged")


def _statuses(state: JsonObject) -> list[str]:
    return [cast(str, p["status"]) for p in cast(list[JsonObject], state.get("pendingTools", []))]


STEPS: dict[str, Predicate] = {
    "first-save": lambda s: s["stateRevision"] == 1,
    "prepared": lambda s: _statuses(s) == ["prepared"],
    "started": lambda s: _statuses(s) == ["started"],
    "committed": lambda s: _statuses(s) == ["committed"],
    "completed": lambda s: s["status"] == "completed",
}


def _unicode_error() -> Exception:
    # What SQLite raises for a lone surrogate: the message carries the very value.
    return UnicodeEncodeError("utf-8", "secret-\ud800", 7, 8, "surrogates not allowed")


class FaultyCheckpoints:
    """A claiming checkpoint store over an in-memory one that fails on matching states.

    ``mode``: ``"once"`` fails the first matching write; ``"value"`` fails every write whose state
    matches (the unstorable value stays in the state); ``"outage"`` fails every write from the
    first matching one on.
    """

    def __init__(self, when: Predicate, mode: str, error: Callable[[], Exception]) -> None:
        self.records = InMemoryCheckpointStore()
        self.inner = StoreRunCheckpointAdapter(self.records)
        self.when, self.mode, self.error = when, mode, error
        self.tripped = False
        self.failures = 0

    def _check(self, state: JsonObject) -> None:
        hit = self.when(state)
        if (self.mode == "outage" and self.tripped) or (
            hit and not (self.mode == "once" and self.tripped)
        ):
            self.tripped = True
            self.failures += 1
            raise self.error()

    async def claim(
        self, state: JsonObject, *, expected: JsonObject | None, lease: RunLease
    ) -> None:
        self._check(state)
        await self.inner.claim(state, expected=expected, lease=lease)

    async def save(self, state: JsonObject, *, lease: RunLease | None = None) -> None:
        self._check(state)
        await self.inner.save(state, lease=lease)

    async def renew(self, run_id: str, *, lease: RunLease) -> None:
        await self.inner.renew(run_id, lease=lease)

    async def load(self, run_id: str) -> JsonObject | None:
        return await self.inner.load(run_id)

    async def delete(self, run_id: str) -> None:
        await self.inner.delete(run_id)

    async def aclose(self) -> None:
        return None


class Bank:
    def __init__(self) -> None:
        self.charges: list[str] = []

    def charge(self, ctx: ToolExecutionContext, value: Any) -> JsonObject:
        self.charges.append(ctx.call_id)
        return {"charged": value["amount"]}


def _runtime(
    bank: Bank, store: Any, *, sink: InMemoryEventSink | None = None, **options: Any
) -> AgentRuntime:
    return scripted_runtime(
        ScriptedProvider([_answer], repeat_last=True),
        tools=[json_tool("charge", bank.charge, effect="side-effect")],
        agents=[make_agent(id="payer", tools=("charge",))],
        checkpoint_store=store,
        event_sinks=[sink or InMemoryEventSink()],
        **options,
    )


def _failed_event(sink: InMemoryEventSink) -> JsonObject:
    last = sink.events[-1]
    assert last.type == "run.failed", sink.types()
    assert sink.types().count("run.failed") == 1
    return cast(JsonObject, last.data)


@pytest.mark.parametrize("step", list(STEPS))
@pytest.mark.parametrize(
    "error",
    [
        _unicode_error,
        lambda: RecursionError("maximum recursion depth exceeded"),
        lambda: OSError(28, "No space left"),
    ],
    ids=["unicode", "recursion", "oserror"],
)
async def test_a_save_that_fails_once_ends_typed_and_saves_the_failure(
    step: str, error: Callable[[], Exception]
) -> None:
    bank, sink = Bank(), InMemoryEventSink()
    store = FaultyCheckpoints(STEPS[step], "once", error)
    runtime = _runtime(bank, store, sink=sink)
    with pytest.raises(RunPersistenceError) as caught:
        await runtime.run(make_agent(id="payer", tools=("charge",)), "pay", run_id="r")
    failure = caught.value
    assert (failure.code, failure.phase, failure.step) == (
        "CHECKPOINT_SAVE_FAILED",
        "persistence",
        "checkpoint.save",
    )
    assert isinstance(failure.__cause__, type(error()))
    assert "secret" not in failure.message  # the unstorable value is not copied into the error
    data = _failed_event(sink)
    assert cast(JsonObject, data["error"])["code"] == "CHECKPOINT_SAVE_FAILED"
    checkpoint = cast(JsonObject, data["checkpoint"])
    assert checkpoint["saved"] is True and checkpoint["status"] == "failed"
    stored = await store.load("r")
    assert stored is not None and stored["status"] == "failed"
    assert stored["lastEventSequence"] == sink.events[-1].sequence
    record = await store.records.get(tenant_id="default", checkpoint_id="r")
    assert record is not None and record.lease_owner is None  # released
    assert bank.charges == (["c1"] if step in ("committed", "completed") else [])


def _has_final_text(state: JsonObject) -> bool:
    return any(
        item.get("text") == "charged" for item in cast(list[JsonObject], state["transcript"])
    )


VALUE_STEPS: dict[str, Predicate] = {
    "started": STEPS["started"],
    "committed": STEPS["committed"],
    "final-text": _has_final_text,
}


@pytest.mark.parametrize("step", list(VALUE_STEPS))
async def test_an_unstorable_value_falls_back_to_the_last_durable_state(step: str) -> None:
    bank, sink = Bank(), InMemoryEventSink()
    store = FaultyCheckpoints(VALUE_STEPS[step], "value", _unicode_error)
    runtime = _runtime(bank, store, sink=sink)
    with pytest.raises(RunPersistenceError):
        await runtime.run(make_agent(id="payer", tools=("charge",)), "pay", run_id="v")
    checkpoint = cast(JsonObject, _failed_event(sink)["checkpoint"])
    assert checkpoint["saved"] is True and checkpoint["fallback"] == "lastDurableState"
    assert cast(JsonObject, checkpoint["error"])["code"] == "CHECKPOINT_SAVE_FAILED"
    stored = await store.load("v")
    assert stored is not None and stored["status"] == "failed"
    assert not VALUE_STEPS[step](stored)  # the last durable state, not the unstorable one
    # The failed state resumes safely (once the value is storable): nothing runs twice.
    resumed = _runtime(bank, StoreRunCheckpointAdapter(store.records))
    result = await resumed.resume(stored).result()
    if step == "started":  # the charge never ran: its started save was never durable
        assert _statuses(stored) == ["prepared"]
        assert result.status == "completed"
    elif step == "committed":  # it ran, but only "started" is durable: reconcile, never re-run
        assert _statuses(stored) == ["started"]
        [reconcile] = result.interruptions
        assert reconcile.kind == "reconciliation"
        done = await resumed.resume(
            result.state, [InterruptionDecision.committed(reconcile.id, {"charged": 5})]
        ).result()
        assert done.status == "completed"
    else:  # the turn with the result is durable: the model is asked again, nothing re-runs
        assert _statuses(stored) == []
        assert result.status == "completed"
    assert bank.charges == ["c1"]


async def test_an_outage_leaves_the_last_durable_state_and_says_so() -> None:
    bank, sink = Bank(), InMemoryEventSink()
    store = FaultyCheckpoints(
        STEPS["committed"], "outage", lambda: StorageUnavailableError("db down")
    )
    runtime = _runtime(bank, store, sink=sink, checkpoint_lease_ms=60_000)
    with pytest.raises(RunPersistenceError) as caught:
        await runtime.run(make_agent(id="payer", tools=("charge",)), "pay", run_id="o")
    assert caught.value.retryable  # an outage: StorageUnavailableError is retryable
    assert caught.value.details is not None
    assert caught.value.details["errorCode"] == "STORAGE_UNAVAILABLE"
    checkpoint = cast(JsonObject, _failed_event(sink)["checkpoint"])
    assert checkpoint["saved"] is False and checkpoint["storedStatus"] == "running"
    assert store.failures == 3  # the commit, the failed state, the fallback
    stored = await store.load("o")
    assert stored is not None and stored["status"] == "running"
    assert _statuses(stored) == ["started"] and bank.charges == ["c1"]
    # The store holds the run's lease until it expires; then it resumes like a crashed run.
    record = await store.records.get(tenant_id="default", checkpoint_id="o")
    assert record is not None and record.lease_expires_at is not None
    later = float(record.lease_expires_at + 1)
    recovered = _runtime(bank, StoreRunCheckpointAdapter(store.records, clock=lambda: later))
    paused = await recovered.resume(stored).result()
    assert [i.kind for i in paused.interruptions] == ["reconciliation"]
    assert bank.charges == ["c1"]


async def test_the_first_save_failing_for_good_saves_nothing_and_says_so() -> None:
    sink = InMemoryEventSink()
    store = FaultyCheckpoints(STEPS["first-save"], "outage", _unicode_error)
    with pytest.raises(RunPersistenceError):
        await _runtime(Bank(), store, sink=sink).run(
            make_agent(id="payer", tools=("charge",)), "pay", run_id="f"
        )
    checkpoint = cast(JsonObject, _failed_event(sink)["checkpoint"])
    assert checkpoint == {
        "saved": False,
        "error": checkpoint["error"],
        "storedStatus": None,
    }
    assert await store.load("f") is None


async def test_interrupted_and_cancelled_saves_that_fail_end_typed() -> None:
    bank, sink = Bank(), InMemoryEventSink()
    approval = json_tool("charge", bank.charge, effect="side-effect", requires_approval=True)
    store = FaultyCheckpoints(lambda s: s["status"] == "interrupted", "once", _unicode_error)
    runtime = scripted_runtime(
        ScriptedProvider([_answer], repeat_last=True),
        tools=[approval],
        checkpoint_store=store,
        event_sinks=[sink],
    )
    with pytest.raises(RunPersistenceError):
        await runtime.run(make_agent(id="payer", tools=("charge",)), "pay", run_id="i")
    assert "run.interrupted" not in sink.types()
    assert cast(JsonObject, _failed_event(sink)["checkpoint"])["saved"] is True

    gate = asyncio.Event()

    async def slow(ctx: ToolExecutionContext, value: Any) -> str:
        gate.set()
        await asyncio.Event().wait()
        return "never"

    sink2 = InMemoryEventSink()
    store2 = FaultyCheckpoints(lambda s: s["status"] == "cancelled", "once", _unicode_error)
    runtime2 = scripted_runtime(
        ScriptedProvider([_answer], repeat_last=True),
        tools=[json_tool("charge", slow, effect="read")],
        checkpoint_store=store2,
        event_sinks=[sink2],
    )
    handle = runtime2.stream(make_agent(id="payer", tools=("charge",)), "pay", run_id="c")
    await gate.wait()
    handle.cancel("stop")
    with pytest.raises(RunPersistenceError):
        await handle.result()
    assert "run.cancelled" not in sink2.types()
    assert _failed_event(sink2)["checkpoint"] == {
        "saved": True,
        "status": "failed",
        "stateRevision": cast(JsonObject, await store2.load("c"))["stateRevision"],
    }


async def test_a_hanging_store_times_out_typed() -> None:
    hang = asyncio.Event()

    class Hanging(FaultyCheckpoints):
        async def save(self, state: JsonObject, *, lease: RunLease | None = None) -> None:
            if self.when(state):
                await hang.wait()
            await super().save(state, lease=lease)

    sink = InMemoryEventSink()
    store = Hanging(STEPS["prepared"], "never", _unicode_error)
    runtime = _runtime(Bank(), store, sink=sink, default_limits=_limits(hook_timeout_ms=50))
    with pytest.raises(RunPersistenceError) as caught:
        await runtime.run(make_agent(id="payer", tools=("charge",)), "pay", run_id="h")
    assert caught.value.code == "CHECKPOINT_SAVE_FAILED" and caught.value.retryable
    assert caught.value.details is not None and caught.value.details["errorType"] == "TimeoutError"
    assert _failed_event(sink)["checkpoint"] is not None


def _limits(**values: Any) -> Any:
    from actoviq.core import RunLimitsPatch

    return RunLimitsPatch(**values)


# -- sessions, sinks, serialisation -------------------------------------------------------------


class FailingSessions(StoreRuntimeSessionAdapter):
    def __init__(self, fail: str) -> None:
        super().__init__(InMemorySessionStore())
        self.fail = fail

    async def load(self, *, tenant_id: str, session_id: str) -> Any:
        if self.fail == "load":
            raise ConnectionResetError("peer reset")
        return await super().load(tenant_id=tenant_id, session_id=session_id)

    async def append(self, **kwargs: Any) -> str:
        if self.fail == "append":
            raise ConnectionResetError("peer reset")
        return await super().append(**kwargs)


@pytest.mark.parametrize(
    ("fail", "code"), [("load", "SESSION_LOAD_FAILED"), ("append", "SESSION_APPEND_FAILED")]
)
async def test_session_failures_end_typed(fail: str, code: str) -> None:
    from actoviq.runtime import RuntimeServices

    sink = InMemoryEventSink()
    store = StoreRunCheckpointAdapter(InMemoryCheckpointStore())
    runtime = scripted_runtime(
        ScriptedProvider(["hello"]),
        services=RuntimeServices({"sessions": lambda: FailingSessions(fail)}),
        checkpoint_store=store,
        event_sinks=[sink],
    )
    with pytest.raises(RunPersistenceError) as caught:
        await runtime.run(make_agent(), "hi", run_id="s", session_id="s1")
    assert (caught.value.code, caught.value.phase) == (code, "persistence")
    assert caught.value.details is not None
    assert caught.value.details["step"] == f"session.{fail}"
    assert cast(JsonObject, _failed_event(sink)["error"])["code"] == code
    stored = await store.load("s")
    assert stored is not None and stored["status"] == "failed"


async def test_a_failing_sink_in_raise_mode_ends_typed_and_the_end_still_reaches_everyone() -> None:
    class Broken:
        id = "broken"

        def __init__(self) -> None:
            self.seen: list[str] = []

        def write(self, event: RunEvent) -> None:
            self.seen.append(event.type)
            if event.type in ("model.completed", "run.failed"):
                raise RuntimeError("sink down")

        async def aclose(self) -> None:
            return None

    broken, sink = Broken(), InMemoryEventSink()
    store = StoreRunCheckpointAdapter(InMemoryCheckpointStore())
    runtime = scripted_runtime(
        ScriptedProvider(["hello"]),
        checkpoint_store=store,
        event_sinks=[broken, sink],
        event_failure_mode="raise",
    )
    handle = runtime.stream(make_agent(), "hi", run_id="e")
    events = [event async for event in handle]
    with pytest.raises(RunPersistenceError) as caught:
        await handle.result()
    assert (caught.value.code, caught.value.step) == ("EVENT_DELIVERY_FAILED", "event.delivery")
    assert events[-1].type == "run.failed"  # the handle got the end
    assert sink.types()[-1] == "run.failed"  # so did the sink after the broken one
    assert broken.seen[-1] == "run.failed"  # and the broken one was given the chance
    assert [f.event_type for f in runtime.dispatcher.failures] == ["run.failed"]
    stored = await store.load("e")
    assert stored is not None and stored["status"] == "failed"


async def test_a_state_that_cannot_be_serialised_ends_typed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = SerializedRunState.to_json
    calls = {"n": 0}

    def flaky(self: SerializedRunState) -> JsonObject:
        calls["n"] += 1
        if self.turn == 1 and self.status == "running":
            raise RecursionError("maximum recursion depth exceeded")
        return real(self)

    monkeypatch.setattr(SerializedRunState, "to_json", flaky)
    sink = InMemoryEventSink()
    store = StoreRunCheckpointAdapter(InMemoryCheckpointStore())
    runtime = _runtime(Bank(), store, sink=sink)
    with pytest.raises(RunPersistenceError) as caught:
        await runtime.run(make_agent(id="payer", tools=("charge",)), "pay", run_id="z")
    assert (caught.value.code, caught.value.step) == (
        "RUN_STATE_SERIALIZATION_FAILED",
        "state.serialize",
    )
    assert _failed_event(sink)["checkpoint"] is not None
    stored = await store.load("z")
    assert stored is not None and stored["status"] == "failed"


async def test_a_raw_middleware_error_ends_as_a_typed_run_error() -> None:
    from actoviq.runtime import define_middleware

    async def explode(context: Any, next: Any) -> Any:
        raise ValueError("token=sk-live-123 leaked into a message")

    sink = InMemoryEventSink()
    runtime = scripted_runtime(
        ScriptedProvider(["hello"]),
        middleware=[define_middleware("boom", "beforeRun", explode)],
        event_sinks=[sink],
    )
    with pytest.raises(RunError) as caught:
        await runtime.run(make_agent(), "hi")
    assert caught.value.code == "RUN_FAILED" and isinstance(caught.value.__cause__, ValueError)
    assert isinstance(caught.value, ActoviqError)
    assert "sk-live" not in str(_failed_event(sink))
    assert "sk-live" not in caught.value.message


# -- BaseExceptions that are not Exceptions -----------------------------------------------------


class ForeignStop(BaseException):
    """A BaseException that is neither the host's exit nor a cancellation (e.g. a test
    framework's outcome or a library's control-flow signal)."""


@pytest.mark.parametrize("where", ["thread", "loop"])
async def test_a_foreign_base_exception_from_a_tool_ends_typed_and_resumes_safely(
    where: str,
) -> None:
    charges: list[str] = []

    def in_thread(ctx: ToolExecutionContext, value: Any) -> JsonObject:
        charges.append(ctx.call_id)
        raise ForeignStop("stop")

    async def on_loop(ctx: ToolExecutionContext, value: Any) -> JsonObject:
        charges.append(ctx.call_id)
        raise ForeignStop("stop")

    sink = InMemoryEventSink()
    records = InMemoryCheckpointStore()
    execute = in_thread if where == "thread" else on_loop
    runtime = scripted_runtime(
        ScriptedProvider([_answer], repeat_last=True),
        tools=[json_tool("charge", execute, effect="side-effect")],
        checkpoint_store=StoreRunCheckpointAdapter(records),
        event_sinks=[sink],
    )
    handle = runtime.stream(make_agent(id="payer", tools=("charge",)), "pay", run_id="b")
    events = [event.type async for event in handle]
    with pytest.raises(RunError) as caught:
        await handle.result()
    assert (caught.value.code, caught.value.phase) == ("RUN_FAILED", "runtime")
    assert isinstance(caught.value.__cause__, ForeignStop)
    assert events[-1] == "run.failed"
    data = _failed_event(sink)
    assert cast(JsonObject, data["error"])["code"] == "RUN_FAILED"
    assert cast(JsonObject, data["checkpoint"])["saved"] is True
    stored = await StoreRunCheckpointAdapter(records).load("b")
    assert stored is not None and stored["status"] == "failed"
    assert _statuses(stored) == ["started"]  # the effect may have happened
    # Resumed, the call that may have run asks for reconciliation; it never runs again.
    again = scripted_runtime(
        ScriptedProvider([_answer], repeat_last=True),
        tools=[json_tool("charge", execute, effect="side-effect")],
        agents=[make_agent(id="payer", tools=("charge",))],
        checkpoint_store=StoreRunCheckpointAdapter(records),
    )
    paused = await again.resume(stored).result()
    assert [i.kind for i in paused.interruptions] == ["reconciliation"]
    assert charges == ["c1"]


@pytest.mark.parametrize("where", ["thread", "loop"])
async def test_sys_exit_in_a_tool_ends_the_run_failed_before_the_host_exits(where: str) -> None:
    # In a real process: the host's exit goes on (exit code 3), but only after the run ended
    # failed, saved (the call that may have run stays "started": resume reconciles it) and with
    # a run.failed event. Before, the exit left the checkpoint "running" and no terminal event.
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(EXIT_WORKER),
        where,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 3, err.decode()
    report = cast(JsonObject, json.loads(out.decode().strip().splitlines()[-1]))
    assert (report["lastEvent"], report["stored"], report["calls"]) == (
        "run.failed",
        "failed",
        ["started"],
    )
    [failed] = cast(list[JsonObject], report["failed"])
    error = cast(JsonObject, failed["error"])
    assert (error["code"], cast(JsonObject, error["details"])["errorType"]) == (
        "RUN_FAILED",
        "SystemExit",
    )
    assert cast(JsonObject, failed["checkpoint"])["saved"] is True
