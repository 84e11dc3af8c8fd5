"""The runtime applies the core strict-JSON rules (D2, D10) to tool outputs, decisions, run
metadata and run states, typed, and its JSON copies never depend on Python's recursion limit."""

from __future__ import annotations

from typing import Any, cast

import pytest
from runtime_testkit import json_tool, make_agent, scripted_runtime

from actoviq.core import (
    MAX_JSON_DEPTH,
    MAX_SAFE_INTEGER,
    CheckedJsonObject,
    CheckedJsonTemplate,
    ItemValidationError,
    JsonHandOff,
    JsonObject,
    JsonValueError,
    ToolCallItem,
)
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import (
    InterruptionDecision,
    RunStateError,
    SerializedRunState,
    freeze_json,
    thaw_json,
)
from actoviq.runtime.tools import ToolOutput


def nest(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def at_depth(frames: int, call: Any) -> Any:
    """``call()`` run ``frames`` Python frames down (a host framework's stack)."""
    if frames:
        return at_depth(frames - 1, call)
    return call()


def test_freeze_and_thaw_handle_the_depth_limit_deep_in_the_stack() -> None:
    value = {"deep": nest(MAX_JSON_DEPTH - 1)}
    frozen = at_depth(600, lambda: freeze_json(value))
    assert at_depth(600, lambda: thaw_json(frozen)) == value
    output = at_depth(600, lambda: ToolOutput(value=value))
    assert output.json_value() == value


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ({"deep": nest(MAX_JSON_DEPTH)}, "too-deep"),
        ({"n": MAX_SAFE_INTEGER + 1}, "unsafe-integer"),
        ({"text": "x\ud800"}, "lone-surrogate"),
        ([nest(100_000)], "too-deep"),
    ],
)
def test_tool_outputs_that_are_not_strict_json_are_refused_typed(value: Any, reason: str) -> None:
    with pytest.raises(JsonValueError) as caught:
        ToolOutput(value=value)
    assert caught.value.reason == reason
    with pytest.raises(ItemValidationError) as item_error:
        InterruptionDecision.committed("i", value)
    assert item_error.value.reason == reason


def test_a_cyclic_frozen_value_is_refused_typed() -> None:
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    with pytest.raises(JsonValueError):
        thaw_json(cyclic)
    with pytest.raises(JsonValueError):
        freeze_json(cyclic)


def _state(**extra: Any) -> dict[str, Any]:
    return {
        "schemaVersion": 2,
        "runId": "r1",
        "agentId": "assistant",
        "status": "interrupted",
        "trace": {"runId": "r1", "traceId": "a" * 32, "spanId": "b" * 16},
        "input": [{"type": "text", "role": "user", "text": "hi"}],
        **extra,
    }


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        ({"metadata": {"note": "x\udfff"}}, "lone-surrogate"),
        ({"metadata": {"n": 2**60}}, "unsafe-integer"),
        ({"lastEventSequence": 2**53}, "unsafe-integer"),
        ({"metadata": {"deep": nest(100_000)}}, "too-deep"),
    ],
)
def test_run_states_that_are_not_strict_json_are_refused_typed(
    extra: dict[str, Any], reason: str
) -> None:
    SerializedRunState.from_json(_state())  # the base state is fine
    with pytest.raises(RunStateError) as caught:
        SerializedRunState.from_json(_state(**extra))
    assert caught.value.details is not None
    assert caught.value.details["reason"] == reason


async def test_run_metadata_that_is_not_strict_json_is_refused_before_the_run() -> None:
    provider = ScriptedProvider(turns=["never"])
    runtime = scripted_runtime(provider)
    cases: list[tuple[JsonObject, str]] = [
        ({"k": "\ud800"}, "lone-surrogate"),
        ({"n": 2**53}, "unsafe-integer"),
    ]
    for metadata, reason in cases:
        with pytest.raises(ItemValidationError) as caught:
            await runtime.run(make_agent(), "hi", metadata=metadata)
        assert (caught.value.field, caught.value.reason) == ("metadata", reason)
    assert provider.requests == []


async def test_a_run_whose_tool_returns_integral_floats_and_deep_values_completes() -> None:
    deep = {"deep": nest(MAX_JSON_DEPTH - 1)}
    provider = ScriptedProvider(
        turns=[
            ScriptedTurn(tool_calls=[ToolCallItem(id="c1", name="measure", input={})]),
            "done",
        ]
    )

    def measure(_ctx: object, _args: object) -> object:
        return {"celsius": 21.0, **deep}

    tool = json_tool("measure", measure)
    runtime = scripted_runtime(provider, tools=[tool])
    result = await runtime.run(make_agent(tools=("measure",)), "measure it")
    assert result.status == "completed"
    request_items = provider.requests[-1].input
    outputs = [item for item in request_items if getattr(item, "type", "") == "tool_result"]
    assert outputs[0].output == {"celsius": 21.0, **deep}  # type: ignore[union-attr]


async def test_checked_metadata_is_taken_without_a_second_walk_and_user_keys_still_checked() -> (
    None
):
    provider = ScriptedProvider(turns=["one", "two", "three"])
    runtime = scripted_runtime(provider)
    checked = CheckedJsonObject({"runId": "r", "trace": {"spanId": "s"}})
    result = await runtime.run(make_agent(), "hi", metadata={"note": "n", "orchestration": checked})
    assert result.metadata == {
        "note": "n",
        "orchestration": {"runId": "r", "trace": {"spanId": "s"}},
    }
    assert result.metadata is not None
    assert type(result.metadata["orchestration"]) is dict  # a plain copy on the state
    whole = await runtime.run(make_agent(), "hi", metadata=checked)
    assert whole.metadata == {"runId": "r", "trace": {"spanId": "s"}}
    with pytest.raises(ItemValidationError) as caught:
        await runtime.run(make_agent(), "hi", metadata={"bad": 2**60, "orchestration": checked})
    assert (caught.value.field, caught.value.reason, caught.value.path) == (
        "metadata",
        "unsafe-integer",
        "$.bad",
    )
    with pytest.raises(ItemValidationError):
        await runtime.run(make_agent(), "hi", metadata=cast(Any, ["not", "an", "object"]))
    assert len(provider.requests) == 2


async def test_a_metadata_hand_off_is_taken_once_uncopied_and_user_keys_still_checked() -> None:
    provider = ScriptedProvider(turns=["one", "two", "three"])
    runtime = scripted_runtime(provider)
    template = CheckedJsonTemplate(
        CheckedJsonObject({"runId": "", "trace": CheckedJsonObject({"spanId": "s"}, max_depth=2)}),
        ["runId"],
    )
    handed = template.hand_off("r1")
    given: Any = {"note": "n", "orchestration": handed}  # accepted at run time (not typed)
    result = await runtime.run(make_agent(), "hi", metadata=given)
    assert handed.taken
    assert result.metadata == {
        "note": "n",
        "orchestration": {"runId": "r1", "trace": {"spanId": "s"}},
    }
    assert result.metadata is not None and type(result.metadata["orchestration"]) is dict
    # Taken once: a second run with the same hand-off is refused before any model call.
    with pytest.raises(ItemValidationError, match="already taken") as caught:
        await runtime.run(make_agent(), "hi", metadata=cast(Any, {"orchestration": handed}))
    assert caught.value.field == "metadata"
    whole = await runtime.run(make_agent(), "hi", metadata=cast(Any, JsonHandOff({"runId": "w"})))
    assert whole.metadata == {"runId": "w"}
    # The caller's own keys beside a hand-off are still validated.
    with pytest.raises(ItemValidationError) as refused:
        await runtime.run(
            make_agent(),
            "hi",
            metadata=cast(Any, {"bad": 2**60, "orchestration": template.hand_off("r2")}),
        )
    assert (refused.value.reason, refused.value.path) == ("unsafe-integer", "$.bad")
    with pytest.raises(ItemValidationError) as keyed:
        await runtime.run(make_agent(), "hi", metadata=cast(Any, {1: template.hand_off("r3")}))
    assert keyed.value.reason == "non-string-key"
    assert len(provider.requests) == 2


async def test_run_metadata_checks_keys_and_text_on_the_quick_path_too() -> None:
    provider = ScriptedProvider(turns=["one", "two"])
    runtime = scripted_runtime(provider)
    checked = CheckedJsonObject({"runId": "r"})
    result = await runtime.run(
        make_agent(),
        "hi",
        metadata={"plain": "text", "flag": True, "none": None, "é": "ü", "orchestration": checked},
    )
    assert result.metadata == {
        "plain": "text",
        "flag": True,
        "none": None,
        "é": "ü",
        "orchestration": {"runId": "r"},
    }
    refused: list[tuple[dict[Any, Any], str, str]] = [
        ({"ok": "fine", "bad": "\ud800"}, "$.bad", "lone-surrogate"),
        ({"\ud800": checked}, "$.'\\ud800'", "lone-surrogate"),
        ({1: checked}, "$[1]", "non-string-key"),
    ]
    for metadata, path, reason in refused:
        with pytest.raises(ItemValidationError) as caught:
            await runtime.run(make_agent(), "hi", metadata=metadata)
        assert (caught.value.path, caught.value.reason) == (path, reason)
    assert len(provider.requests) == 1
