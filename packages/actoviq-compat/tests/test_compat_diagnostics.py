"""Compat diagnostics (spec 04 §5.1, §7.10 rows 102-103, §8.4 item 28): every symbol records."""

from __future__ import annotations

import logging
import threading
import warnings
from pathlib import Path

import attrs
import pytest
from compat_support import FakeModelApi, legacy_message

import actoviq.compat as compat
from actoviq.compat import (
    CompatDeprecationWarning,
    CompatDiagnostic,
    configure_compat_diagnostics,
    get_compat_diagnostics,
    record_compat_usage,
)
from actoviq.compat.diagnostics import COMPAT_WARNING_CODE
from actoviq.providers.testing import ScriptedProvider


def test_row_102_two_recordings_count_two_and_call_back_twice() -> None:
    seen: list[CompatDiagnostic] = []
    configure_compat_diagnostics(on_diagnostic=seen.append)
    record_compat_usage("createAgentSdk")
    record_compat_usage("  createAgentSdk ")
    (diagnostic,) = get_compat_diagnostics()
    assert (diagnostic.symbol, diagnostic.count) == ("createAgentSdk", 2)
    assert [d.count for d in seen] == [1, 2]
    assert diagnostic.first_used_at <= diagnostic.last_used_at
    assert diagnostic.to_json() == {
        "symbol": "createAgentSdk",
        "count": 2,
        "firstUsedAt": diagnostic.first_used_at,
        "lastUsedAt": diagnostic.last_used_at,
    }
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        diagnostic.count = 3  # type: ignore[misc]


def test_row_103_disabled_records_nothing() -> None:
    seen: list[CompatDiagnostic] = []
    configure_compat_diagnostics(enabled=False, on_diagnostic=seen.append)
    record_compat_usage("createAgentSdk")
    assert get_compat_diagnostics() == ()
    assert get_compat_diagnostics() == []  # the reference's frozen array compares as a list
    assert [] == get_compat_diagnostics()  # noqa: SIM300 (the reflected comparison is the test)
    assert seen == []
    settings = configure_compat_diagnostics(enabled=True)  # merges: the callback stays
    assert settings.on_diagnostic is not None


def test_blank_symbols_and_bad_settings_are_type_errors() -> None:
    for bad in ("", "   "):
        with pytest.raises(TypeError, match="empty"):
            record_compat_usage(bad)
    with pytest.raises(TypeError):
        record_compat_usage(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        configure_compat_diagnostics(enabled="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        configure_compat_diagnostics(on_diagnostic="print")  # type: ignore[arg-type]


def test_the_0x_call_shapes_work_too() -> None:
    seen: list[CompatDiagnostic] = []
    settings = configure_compat_diagnostics({"onDiagnostic": seen.append, "warnOnce": False})
    assert settings.on_diagnostic is not None and not settings.warn_once
    record_compat_usage("createAgentSdk")
    record_compat_usage("createAgentSdk")
    (diagnostic,) = get_compat_diagnostics()
    assert (diagnostic["symbol"], diagnostic["count"]) == ("createAgentSdk", 2)
    assert dict(diagnostic) == diagnostic.to_json()
    assert str(diagnostic["firstUsedAt"]) <= str(diagnostic["lastUsedAt"])
    assert len(seen) == 2
    with pytest.raises(KeyError):
        diagnostic["nope"]
    configure_compat_diagnostics({"enabled": False}, enabled=True)  # the keyword wins
    record_compat_usage("createAgentSdk")
    assert get_compat_diagnostics()[0].count == 3
    configure_compat_diagnostics({"enabled": False})
    record_compat_usage("createAgentSdk")
    assert get_compat_diagnostics()[0].count == 3
    with pytest.raises(TypeError, match="unknown setting 'verbose'"):
        configure_compat_diagnostics({"verbose": True})
    with pytest.raises(TypeError, match="must be a bool"):
        configure_compat_diagnostics({"warnOnce": "yes"})


def test_diagnostics_are_sorted_by_symbol() -> None:
    for symbol in ("zeta", "alpha", "mid"):
        record_compat_usage(symbol)
    assert [d.symbol for d in get_compat_diagnostics()] == ["alpha", "mid", "zeta"]


def test_the_deprecation_warning_comes_once_per_symbol_at_the_callers_line() -> None:
    configure_compat_diagnostics(warn_once=True)
    with pytest.warns(CompatDeprecationWarning) as read:
        _ = compat.AgentRunResult
    assert read[0].filename == __file__
    message = str(read[0].message)
    assert message.startswith(f"[{COMPAT_WARNING_CODE}] actoviq.compat.AgentRunResult")
    assert "Use RunResult (actoviq.core) instead." in message
    with pytest.warns(CompatDeprecationWarning) as made:
        compat.ModelProviderLegacyAdapter(ScriptedProvider([]))
    assert made[0].filename == __file__  # an instantiation points at the caller too
    assert "Use the provider itself" in str(made[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same symbols again: silent
        _ = compat.AgentRunResult
        compat.ModelProviderLegacyAdapter(ScriptedProvider([]))
    counts = {d.symbol: d.count for d in get_compat_diagnostics()}
    assert counts == {"AgentRunResult": 2, "ModelProviderLegacyAdapter": 2}


def test_the_repository_test_config_shows_compat_warnings_without_failing() -> None:
    # filterwarnings = error in pyproject.toml, plus a "default" entry for compat warnings: code
    # under test that still uses the façade must not fail because the façade warns.
    configure_compat_diagnostics(warn_once=True)
    record_compat_usage("StillOnTheFacade")  # would raise CompatDeprecationWarning under "error"
    with pytest.raises(UserWarning):
        warnings.warn("other warnings still fail", UserWarning, stacklevel=1)
    assert get_compat_diagnostics()[0].symbol == "StillOnTheFacade"


def test_a_failing_callback_is_logged_never_raised(caplog: pytest.LogCaptureFixture) -> None:
    def explode(_: CompatDiagnostic) -> None:
        raise RuntimeError("metrics backend down")

    configure_compat_diagnostics(on_diagnostic=explode)
    with caplog.at_level(logging.ERROR, logger="actoviq.compat"):
        record_compat_usage("AgentClient")
    assert "metrics backend down" in caplog.text
    assert get_compat_diagnostics()[0].count == 1


def test_recording_is_thread_safe() -> None:
    def hammer() -> None:
        for _ in range(500):
            record_compat_usage("threaded")

    threads = [threading.Thread(target=hammer) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert get_compat_diagnostics()[0].count == 4000


async def test_every_public_name_records_its_use(tmp_path: Path) -> None:
    # create_agent_sdk records the reference's symbol (spec 04 §5.2 item 1); every other name
    # is spelled the same in both languages and records as itself.
    symbol_of = {"create_agent_sdk": "createAgentSdk"}
    recording = sorted(
        symbol_of.get(name, name) for name in set(compat.__all__) - compat.DIAGNOSTICS_API
    )
    callables = {
        "createAgentSdk",
        "LegacyJsonV1SessionStore",
        "LegacyJsonV1SessionJournal",
        "LegacyModelApiProvider",
        "ModelProviderLegacyAdapter",
        "LegacyAgentEventRunEventAdapter",
        "RunEventLegacyCompatAdapter",
        "LegacySurfaceEventPipeline",
    }
    # Callables record each call or instantiation (not their import).
    sdk = await compat.create_agent_sdk(modelApi=FakeModelApi(legacy_message("x")))
    await sdk.close()
    compat.LegacyJsonV1SessionStore(tmp_path / "a")
    compat.LegacyJsonV1SessionJournal(tmp_path / "b")
    compat.LegacyModelApiProvider(model_api=FakeModelApi(legacy_message("x")))
    compat.ModelProviderLegacyAdapter(ScriptedProvider([]))
    compat.LegacyAgentEventRunEventAdapter()
    compat.RunEventLegacyCompatAdapter()
    compat.LegacySurfaceEventPipeline()
    recorded = {d.symbol: d.count for d in get_compat_diagnostics()}
    assert set(recorded) == callables
    assert all(count == 1 for count in recorded.values()), recorded
    # Every other name records when it is read from the package.
    for name in recording:
        if name not in callables:
            getattr(compat, name)
    recorded = {d.symbol: d.count for d in get_compat_diagnostics()}
    assert sorted(recorded) == recording
    # The diagnostics API measures; it is not compat API and records nothing.
    for name in compat.DIAGNOSTICS_API:
        getattr(compat, name)
    assert sorted(d.symbol for d in get_compat_diagnostics()) == recording


async def test_create_agent_sdk_records_the_reference_symbol_and_warns_by_its_python_name() -> None:
    configure_compat_diagnostics(warn_once=True)
    with pytest.warns(CompatDeprecationWarning) as caught:
        sdk = await compat.create_agent_sdk(modelApi=FakeModelApi(legacy_message("x")))
    await sdk.close()
    assert [(d.symbol, d.count) for d in get_compat_diagnostics()] == [("createAgentSdk", 1)]
    assert str(caught[0].message).startswith(
        f"[{COMPAT_WARNING_CODE}] actoviq.compat.create_agent_sdk is a 0.x compatibility API"
    )


def test_an_import_statement_counts_once() -> None:
    namespace: dict[str, object] = {}
    exec("from actoviq.compat import AgentRunResult, StoredSession", namespace)
    assert {d.symbol: d.count for d in get_compat_diagnostics()} == {
        "AgentRunResult": 1,
        "StoredSession": 1,
    }
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = getattr(compat, "Nope")  # noqa: B009 (a name the type checker rightly refuses)
