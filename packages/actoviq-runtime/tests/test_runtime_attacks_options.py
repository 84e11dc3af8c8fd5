"""Run options attacked through the public API (issue 14: every bad input is a typed error).

Bugs found by the adversarial review of resolved promises: an unknown keyword (a typo such as
``sesion_id``) was silently ignored, so the run forgot its session without a word; ``limits`` and
``signal`` of the wrong type raised a bare ``AttributeError`` from deep inside the runtime.
"""

from __future__ import annotations

from typing import Any, cast

import pytest

from actoviq.core import AgentSpec, RunError
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider
from actoviq.runtime import AgentRuntime, FernetPayloadCodec, RuntimeConfigurationError

AGENT = AgentSpec(id="a", name="A", instructions="Answer.", model="scripted:m")


@pytest.mark.parametrize(
    "options",
    [
        {"sesion_id": "me"},
        {"limits": {"max_turns": 1}},
        {"limits": "tight"},
        {"signal": "stop"},
    ],
    ids=["typo", "limits-dict", "limits-str", "signal-str"],
)
async def test_a_bad_run_option_is_refused_before_the_run(options: dict[str, Any]) -> None:
    model = ScriptedProvider(["ok"], repeat_last=True)
    async with AgentRuntime(models=ModelRegistry([model])) as runtime:
        for start in (runtime.run, runtime.stream):
            with pytest.raises(RunError) as caught:
                await start(AGENT, "hi", **options)
            assert caught.value.code == "RUN_OPTION_INVALID"
        assert model.calls == [] and runtime.active_runs == 0


@pytest.mark.parametrize("keys", [None, 5])
def test_a_fernet_codec_key_that_is_not_a_key_is_typed(keys: Any) -> None:
    # Was a bare TypeError ("'int' object is not iterable").
    pytest.importorskip("cryptography")
    with pytest.raises(RuntimeConfigurationError):
        FernetPayloadCodec(keys)


@pytest.mark.parametrize(
    "options",
    [
        {"models": 5},
        {"tools": 5},
        {"event_sinks": 5},
        {"default_limits": {"max_turns": 1}},
        {"checkpoint_store": 5},
    ],
    ids=["models", "tools", "event-sinks", "default-limits", "checkpoint-store"],
)
def test_a_runtime_option_of_the_wrong_type_is_typed(options: dict[str, Any]) -> None:
    # Each was a bare TypeError/AttributeError, or (checkpoint_store) accepted and failing later.
    with pytest.raises(RuntimeConfigurationError):
        AgentRuntime(**cast(Any, {"models": ModelRegistry([ScriptedProvider(["ok"])]), **options}))


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("run_id", "r\ud800"),
        ("run_id", ""),
        ("run_id", "a\x00b"),
        ("session_id", ""),
        ("session_id", "   "),
        ("session_id", 5),
        ("session_id", "s\udfff"),
        ("tenant_id", "\t"),
        ("workspace_id", b"w"),
        ("parent_run_id", "p\x00"),
        ("run_id", "\u3000\u2003"),  # blank, not ASCII
        ("session_id", "\u00e9\x00"),  # NUL in non-ASCII text
        ("tenant_id", " \t\n"),
    ],
)
async def test_a_bad_id_is_refused_before_the_run(name: str, value: object) -> None:
    """A bad id used to start the run and fail later: a session load failure, a checkpoint
    write failure, or (a lone surrogate without a store) a run whose events no JSON sink takes."""
    model = ScriptedProvider(["ok"], repeat_last=True)
    options: dict[str, Any] = {name: value}
    async with AgentRuntime(models=ModelRegistry([model])) as runtime:
        for start in (runtime.run, runtime.stream):
            with pytest.raises(RunError) as caught:
                await start(AGENT, "hi", **options)
            assert caught.value.code == "RUN_OPTION_INVALID"
            assert caught.value.details == {"option": _WIRE[name]}
        assert model.calls == [] and runtime.active_runs == 0


_WIRE = {
    "run_id": "runId",
    "session_id": "sessionId",
    "tenant_id": "tenantId",
    "workspace_id": "workspaceId",
    "parent_run_id": "parentRunId",
}


async def test_unusual_but_valid_ids_still_run() -> None:
    model = ScriptedProvider(["ok"], repeat_last=True)
    async with AgentRuntime(models=ModelRegistry([model])) as runtime:
        result = await runtime.run(
            AGENT, "hi", run_id="run/ü-1", tenant_id=" t ", workspace_id="ws:1", parent_run_id="p"
        )
        assert result.status == "completed" and result.run_id == "run/ü-1"


async def test_ids_with_spaces_or_non_ascii_text_are_accepted() -> None:
    model = ScriptedProvider(["ok"], repeat_last=True)
    async with AgentRuntime(models=ModelRegistry([model])) as runtime:
        for run_id in (" padded id ", "r\u00e9sum\u00e9-1", "\u4f8b-\U0001f600"):
            result = await runtime.run(AGENT, "hi", run_id=run_id, tenant_id="t\u00e9")
            assert result.run_id == run_id and result.status == "completed"
