"""JSON v1 files as the runtime's session store: projection, legacy writers, rollback, migration."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import pytest

from actoviq.compat import LegacyJsonV1SessionStore
from actoviq.compat.legacy_store import JOURNAL_KEY, tenant_root
from actoviq.core import (
    AgentSpec,
    CanonicalItem,
    JsonObject,
    ReasoningItem,
    TextItem,
    ToolCallItem,
    ToolResultItem,
)
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import (
    AgentRuntime,
    NewSessionItem,
    RuntimeServices,
    SessionRevisionConflictError,
    StorageDataError,
    StoreRuntimeSessionAdapter,
)
from actoviq.storage.sqlite import (
    JsonV1Migrator,
    SqliteRuntimeSessionAdapter,
    SqliteStorage,
    read_legacy_session_file,
)

TURN: list[CanonicalItem] = [
    TextItem(role="user", text="look it up"),
    ToolCallItem(id="call-1", name="lookup", input={"query": "x"}),
    ToolResultItem(call_id="call-1", name="lookup", status="success", output={"found": True}),
    ReasoningItem(provider="scripted", summary="thinking", opaque=None),
    TextItem(role="assistant", text="found it"),
]


def _store(root: Path) -> LegacyJsonV1SessionStore:
    return LegacyJsonV1SessionStore(root, durable=False)


def _legacy_file(session_id: str, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "version": 1,
        "revision": 7,
        "id": session_id,
        "title": "Old chat",
        "titleSource": "manual",
        "model": "claude-x",
        "tags": [],
        "metadata": {},
        "createdAt": "2026-01-01T00:00:00.000Z",
        "updatedAt": "2026-01-01T00:00:00.000Z",
        "status": "active",
        "messages": [
            {"role": "user", "content": "old question"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hmm", "signature": "sig-secret"},
                    {"type": "text", "text": "old answer"},
                    {"type": "future_provider_block", "x": 1},
                ],
            },
        ],
        "runs": [
            {
                "runId": "r0",
                "input": "old question",
                "text": "LEGACY RUN TEXT",
                "stopReason": "end_turn",
                "createdAt": "2026-01-01T00:00:00.000Z",
                "completedAt": "2026-01-01T00:00:01.000Z",
                "toolCallCount": 0,
            }
        ],
    }
    data.update(changes)
    return data


def _write(root: Path, data: dict[str, Any]) -> Path:
    path = root / "sessions" / f"{data['id']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", "utf-8")
    return path


async def test_appended_items_are_mirrored_as_legacy_messages(tmp_path: Path) -> None:
    store = _store(tmp_path)
    adapter = StoreRuntimeSessionAdapter(store.sessions)
    revision = await adapter.append(
        tenant_id="default", session_id="s", items=TURN, expected_revision="0"
    )
    assert revision == "1"
    loaded = await adapter.load(tenant_id="default", session_id="s")
    assert list(loaded.items) == TURN  # lossless for the runtime
    legacy = await store.load("s")  # and a valid JSON v1 session for 0.x readers
    assert legacy["revision"] == 1
    assert legacy["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "look it up"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "call-1", "name": "lookup", "input": {"query": "x"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "call-1",
                    "content": '{"found":true}',
                    "is_error": False,
                }
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "thinking"},
                {"type": "text", "text": "found it"},
            ],
        },
    ]


async def test_a_0x_file_reads_exactly_as_the_migrator_plans_it(tmp_path: Path) -> None:
    path = _write(tmp_path, _legacy_file("old"))
    journal = _store(tmp_path).sessions
    loaded = await journal.load(tenant_id="default", session_id="old")
    planned = read_legacy_session_file(path, tmp_path)
    assert [(i.item_id, i.kind, i.payload, i.created_at) for i in loaded.items] == [
        (i.item_id, i.kind, i.payload, i.created_at) for i in planned.items
    ]
    assert loaded.session.revision == 7
    assert loaded.session.last_sequence == len(planned.items)
    # the thinking signature never reaches the journal
    assert "sig-secret" not in json.dumps([i.payload for i in loaded.items])


async def test_the_runtime_continues_a_0x_session_written_by_another_writer(
    tmp_path: Path,
) -> None:
    old = _legacy_file("old")
    old["messages"][1]["content"] = old["messages"][1]["content"][1:]  # no foreign reasoning
    _write(tmp_path, old)
    store = _store(tmp_path)
    provider = ScriptedProvider([ScriptedTurn(text="continued")])
    services = RuntimeServices({"sessions": lambda: StoreRuntimeSessionAdapter(store.sessions)})
    agent: AgentSpec[Any, Any] = AgentSpec(id="a", name="A", instructions="Hi.", model="scripted:m")
    async with AgentRuntime(models=ModelRegistry([provider]), services=services) as runtime:
        result = await runtime.run(agent, "new question", session_id="old")
    assert result.output == "continued"
    request_texts = [i.text for i in provider.calls[0].request.input if isinstance(i, TextItem)]
    assert request_texts == ["Hi.", "old question", "old answer", "new question"]
    session = await store.load("old")
    assert session["revision"] == 8
    assert session["messages"][-2:] == [
        {"role": "user", "content": [{"type": "text", "text": "new question"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "continued"}]},
    ]
    assert session["runs"][0]["text"] == "LEGACY RUN TEXT"  # legacy data untouched
    journal = cast(dict[str, Any], session)[JOURNAL_KEY]
    assert journal["covers"]["messages"] == 4 and journal["covers"]["runs"] == 1


async def test_a_0x_save_between_load_and_append_is_a_conflict(tmp_path: Path) -> None:
    store = _store(tmp_path)
    adapter = StoreRuntimeSessionAdapter(store.sessions)
    await adapter.append(tenant_id="default", session_id="s", items=TURN[:1], expected_revision="0")
    loaded = await adapter.load(tenant_id="default", session_id="s")
    legacy = await store.load("s")
    legacy["title"] = "renamed by a 0.x writer"
    await store.save(legacy)
    with pytest.raises(SessionRevisionConflictError) as caught:
        await adapter.append(
            tenant_id="default",
            session_id="s",
            items=[TextItem(role="assistant", text="late")],
            expected_revision=loaded.revision,
        )
    assert (caught.value.expected_revision, caught.value.actual_revision) == (1, 2)


async def test_a_rollback_writer_appending_messages_is_picked_up(tmp_path: Path) -> None:
    store = _store(tmp_path)
    adapter = StoreRuntimeSessionAdapter(store.sessions)
    await adapter.append(tenant_id="default", session_id="s", items=TURN, expected_revision="0")
    # writes routed back to a 0.x writer, which appends one exchange and one run
    legacy = await store.load("s")
    legacy["messages"].append({"role": "user", "content": "from the 0.x writer"})
    legacy["runs"].append(
        {
            "runId": "r9",
            "input": "x",
            "text": "y",
            "stopReason": "end_turn",
            "createdAt": "2026-02-01T00:00:00.000Z",
            "completedAt": "2026-02-01T00:00:00.000Z",
            "toolCallCount": 0,
        }
    )
    await store.save(legacy)
    raw = await store.sessions.load(tenant_id="default", session_id="s")
    assert [i.item_id for i in raw.items][-2:] == ["json-v1:message:4:0", "json-v1:run:0"]
    assert [i.sequence for i in raw.items] == list(range(1, 8))
    loaded = await adapter.load(tenant_id="default", session_id="s")
    assert loaded.items[-1] == TextItem(
        role="user",
        text="from the 0.x writer",
        metadata={"legacyJsonV1": {"role": "user", "blockIndex": 0}},
    )
    # the next runtime write makes the derived entries part of the journal, same sequences
    await adapter.append(
        tenant_id="default",
        session_id="s",
        items=[TextItem(role="assistant", text="back on the runtime")],
        expected_revision=loaded.revision,
    )
    after = await store.sessions.load(tenant_id="default", session_id="s")
    assert [i.item_id for i in after.items][:7] == [i.item_id for i in raw.items]
    session = cast(dict[str, Any], await store.load("s"))
    assert len(session[JOURNAL_KEY]["items"]) == 8


async def test_history_rewritten_by_another_writer_is_refused(tmp_path: Path) -> None:
    store = _store(tmp_path)
    adapter = StoreRuntimeSessionAdapter(store.sessions)
    await adapter.append(tenant_id="default", session_id="s", items=TURN, expected_revision="0")
    legacy = await store.load("s")
    legacy["messages"][0] = {"role": "user", "content": "summary of everything"}
    await store.save(legacy)
    with pytest.raises(StorageDataError, match="rewritten by another writer"):
        await adapter.load(tenant_id="default", session_id="s")
    legacy = await store.load("s")  # the 0.x face still reads the file
    legacy["messages"] = []
    await store.save(legacy)
    with pytest.raises(StorageDataError, match="removed by another writer"):
        await adapter.load(tenant_id="default", session_id="s")


async def test_legacy_run_entries_go_to_runs(tmp_path: Path) -> None:
    store = _store(tmp_path)
    await store.sessions.create(tenant_id="default", session_id="s")
    summary: JsonObject = {
        "runId": "r1",
        "input": "q",
        "text": "a",
        "stopReason": "end_turn",
        "createdAt": "2026-01-01T00:00:00.000Z",
        "completedAt": "2026-01-01T00:00:00.000Z",
        "toolCallCount": 0,
    }
    await store.sessions.append(
        tenant_id="default",
        session_id="s",
        expected_revision=0,
        items=[NewSessionItem(item_id="run:r1", kind="legacy_run", payload=summary)],
    )
    session = await store.load("s")
    assert session["runs"] == [summary]
    assert session["messages"] == []


async def test_other_tenants_are_their_own_json_v1_roots(tmp_path: Path) -> None:
    store = _store(tmp_path)
    await store.sessions.create(tenant_id="acme/eu", session_id="s")
    await store.sessions.create(tenant_id="..", session_id="s")
    assert (tmp_path / "tenants" / "acme%2Feu" / "sessions" / "s.json").exists()
    assert tenant_root(tmp_path, "..") == tmp_path / "tenants" / "%2E%2E"
    assert (tmp_path / "tenants" / "%2E%2E" / "sessions" / "s.json").exists()
    assert not (tmp_path / "sessions" / "s.json").exists()
    assert await store.list() == []  # the default tenant's root holds none of them


async def test_the_migrator_cuts_over_a_file_the_journal_wrote(tmp_path: Path) -> None:
    source = tmp_path / "json-v1"
    store = _store(source)
    adapter = StoreRuntimeSessionAdapter(store.sessions)
    await adapter.append(tenant_id="default", session_id="s", items=TURN, expected_revision="0")
    async with await SqliteStorage.open(tmp_path / "db.sqlite") as storage:
        report = await JsonV1Migrator(storage).migrate(
            tenant_id="t", source_directory=source, backup_directory=tmp_path / "backup"
        )
        assert report.migrated_sessions == 1
        migrated = await SqliteRuntimeSessionAdapter(storage.sessions).load(
            tenant_id="t", session_id="s"
        )
    texts = [i.text for i in migrated.items if isinstance(i, TextItem)]
    assert texts == ["look it up", "found it"]
    calls = [(i.id, i.name, i.input) for i in migrated.items if isinstance(i, ToolCallItem)]
    assert calls == [("call-1", "lookup", {"query": "x"})]
