"""JSON v1 -> SQL migration: dry-run, backup, cutover, verify, rollback, re-runs and bad files."""

from __future__ import annotations

import hashlib
import itertools
import json
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import cast

import pytest

from actoviq.core import ReasoningItem, TextItem, ToolCallItem, ToolResultItem
from actoviq.runtime import (
    NewSessionItem,
    SessionRevisionConflictError,
    StorageDataError,
    StorageNotFoundError,
)
from actoviq.storage.sqlite import (
    JsonV1Migrator,
    MigrationProgress,
    MigrationSourceError,
    SqliteRuntimeSessionAdapter,
    SqliteStorage,
    convert_legacy_json_v1_message,
)
from actoviq.storage.sqlite.cli import main

FIXTURES = Path(__file__).parent / "fixtures" / "json_v1"
T = "default"


def _copy(name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copytree(FIXTURES / name, target)
    return target


def _hashes(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
async def storage(tmp_path: Path) -> AsyncIterator[SqliteStorage]:
    async with await SqliteStorage.open(tmp_path / "target.db") as opened:
        yield opened


async def test_dry_run_writes_nothing(storage: SqliteStorage, tmp_path: Path) -> None:
    source = _copy("good", tmp_path)
    before = _hashes(source)
    report = await JsonV1Migrator(storage).migrate(
        tenant_id=T, source_directory=source, dry_run=True, backup_directory=tmp_path / "bk"
    )
    assert report.dry_run
    assert [(f.session_id, f.status, f.item_count) for f in report.files] == [
        ("a-full", "planned", 10),
        ("b-small", "planned", 1),
        ("c-empty", "planned", 0),
    ]
    assert (report.migrated_sessions, report.total_items, report.backup_directory) == (0, 11, None)
    assert not (tmp_path / "bk").exists()
    assert await storage.sessions.list_sessions(tenant_id=T) == []
    assert _hashes(source) == before


async def test_cutover_verify_rerun_and_rollback(storage: SqliteStorage, tmp_path: Path) -> None:
    source = _copy("good", tmp_path)
    before = _hashes(source)
    migrator = JsonV1Migrator(storage, chunk_size=2)
    report = await migrator.migrate(
        tenant_id=T, source_directory=source, backup_directory=tmp_path / "bk"
    )
    assert (report.migrated_sessions, report.skipped_sessions, report.chunks_committed) == (3, 0, 2)
    assert report.backup_directory == str((tmp_path / "bk").resolve())
    assert _hashes(tmp_path / "bk") == before
    manifest = json.loads((tmp_path / "bk.sha256.json").read_text())
    assert manifest["sessions/a-full.json"] == before["sessions/a-full.json"]
    assert _hashes(source) == before

    record = await storage.sessions.get(tenant_id=T, session_id="a-full")
    assert record is not None
    assert (record.revision, record.last_sequence) == (1, 10)
    assert record.metadata["sourceFormat"] == "hadamard-json-v1"
    legacy = record.metadata["legacy"]
    assert isinstance(legacy, dict)
    assert (legacy["title"], legacy["revision"]) == ("Title a-full", 7)
    empty = await storage.sessions.get(tenant_id=T, session_id="c-empty")
    assert empty is not None
    assert (empty.revision, empty.last_sequence) == (0, 0)

    journal = await storage.sessions.load(tenant_id=T, session_id="a-full", after_sequence=0)
    assert [i.kind for i in journal.items][-1] == "legacy_run"
    assert "SECRET-SIGNATURE" not in json.dumps([i.payload for i in journal.items])

    history = await SqliteRuntimeSessionAdapter(storage.sessions).load(
        tenant_id=T, session_id="a-full"
    )
    assert [i.type for i in history.items] == [
        "text",
        "text",
        "reasoning",
        "tool_call",
        "tool_result",
        "image",
        "document",
        "text",
    ]
    call = history.items[3]
    assert isinstance(call, ToolCallItem)
    assert (call.id, call.name, call.input) == ("call-1", "lookup", {"query": "x"})
    reasoning = history.items[2]
    assert isinstance(reasoning, ReasoningItem)
    assert reasoning.opaque == {"type": "thinking", "thinking": "need lookup"}
    assert isinstance(history.items[4], ToolResultItem)
    assert all("legacy run text" not in json.dumps(i.metadata) for i in history.items)
    assert history.revision == "1"

    verified = await migrator.verify(tenant_id=T, source_directory=source)
    assert verified.ok, verified.problems
    assert (verified.sessions_checked, verified.items_checked) == (3, 11)

    again = await migrator.migrate(tenant_id=T, source_directory=source)
    assert (again.migrated_sessions, again.skipped_sessions, again.backup_directory) == (0, 3, None)
    assert [f.status for f in again.files] == ["skipped"] * 3
    assert (await storage.sessions.get(tenant_id=T, session_id="a-full")) == record

    # A source edited after the migration: verify reports it, a re-run refuses it.
    edited = source / "sessions" / "b-small.json"
    edited.write_text(edited.read_text().replace("hello", "hullo"))
    problems = (await migrator.verify(tenant_id=T, source_directory=source)).problems
    assert problems == (
        ("sessions/b-small.json", "source file hash differs from the ledger"),
        ("sessions/b-small.json", "re-conversion differs from the journal at item 0"),
    )
    with pytest.raises(MigrationSourceError, match="Previously migrated JSON v1 source changed"):
        await migrator.migrate(tenant_id=T, source_directory=source)

    undone = await migrator.rollback(tenant_id=T, source_directory=source)
    assert undone.removed_sessions == ("a-full", "b-small", "c-empty")
    assert await storage.sessions.list_sessions(tenant_id=T) == []
    with pytest.raises(StorageNotFoundError):
        await storage.sessions.load(tenant_id=T, session_id="a-full")
    # The journal is append-only again after the maintenance transaction.
    await storage.sessions.create(tenant_id=T, session_id="x")
    await storage.sessions.append(
        tenant_id=T,
        session_id="x",
        expected_revision=0,
        items=[NewSessionItem(item_id="i", kind="text", payload={"type": "text"})],
    )
    from sqlalchemy import text

    async with storage.database.write() as conn:
        with pytest.raises(Exception, match="append-only"):
            await conn.execute(text("DELETE FROM storage_v2_session_turns"))


async def test_rollback_refuses_sessions_changed_after_migration(
    storage: SqliteStorage, tmp_path: Path
) -> None:
    source = _copy("good", tmp_path)
    migrator = JsonV1Migrator(storage)
    await migrator.migrate(tenant_id=T, source_directory=source, backup_directory=tmp_path / "bk")
    await SqliteRuntimeSessionAdapter(storage.sessions).append(
        tenant_id=T,
        session_id="b-small",
        items=[TextItem(role="user", text="new")],
        expected_revision="1",
    )
    with pytest.raises(StorageDataError, match=r"changed since the migration .*: b-small"):
        await migrator.rollback(tenant_id=T, source_directory=source)
    listed = await migrator.rollback(tenant_id=T, source_directory=source, dry_run=True, force=True)
    assert listed.removed_sessions == ("a-full", "b-small", "c-empty")
    assert len(await storage.sessions.list_sessions(tenant_id=T)) == 3
    await migrator.rollback(tenant_id=T, source_directory=source, force=True)
    assert await storage.sessions.list_sessions(tenant_id=T) == []


async def test_malformed_files_are_reported_and_block_cutover(
    storage: SqliteStorage, tmp_path: Path
) -> None:
    source = _copy("malformed", tmp_path)
    migrator = JsonV1Migrator(storage)
    plan = await migrator.migrate(tenant_id=T, source_directory=source, dry_run=True)
    reasons = {Path(f.source_file).name: f.reason for f in plan.invalid_files}
    assert set(reasons) == {
        "b-broken-json.json",
        "c-version-2.json",
        "d-system-role.json",
        "e-bad-tool-use.json",
        "f-no-messages.json",
    }
    assert "not valid JSON" in (reasons["b-broken-json.json"] or "") or "Invalid JSON" in (
        reasons["b-broken-json.json"] or ""
    )
    assert "version must be 1" in (reasons["c-version-2.json"] or "")
    assert 'role must be "user" or "assistant"' in (reasons["d-system-role.json"] or "")
    assert "non-empty id and name" in (reasons["e-bad-tool-use.json"] or "")
    assert "messages and runs must be lists" in (reasons["f-no-messages.json"] or "")
    with pytest.raises(MigrationSourceError) as caught:
        await migrator.migrate(
            tenant_id=T, source_directory=source, backup_directory=tmp_path / "bk"
        )
    assert caught.value.code == "STORAGE_DATA_INVALID"
    assert len(caught.value.problems) == 5
    assert all(Path(path).is_absolute() for path, _ in caught.value.problems)
    assert not (tmp_path / "bk").exists()
    assert await storage.sessions.list_sessions(tenant_id=T) == []


async def test_existing_target_session_conflicts_before_any_write(
    storage: SqliteStorage, tmp_path: Path
) -> None:
    source = _copy("good", tmp_path)
    await storage.sessions.create(tenant_id=T, session_id="c-empty")
    with pytest.raises(SessionRevisionConflictError) as caught:
        await JsonV1Migrator(storage).migrate(
            tenant_id=T, source_directory=source, backup_directory=tmp_path / "bk"
        )
    assert (caught.value.expected_revision, caught.value.actual_revision) == (None, 0)
    assert await storage.sessions.get(tenant_id=T, session_id="a-full") is None


async def test_missing_source_and_duplicate_ids(storage: SqliteStorage, tmp_path: Path) -> None:
    with pytest.raises(StorageDataError, match="source directory does not exist"):
        await JsonV1Migrator(storage).migrate(tenant_id=T, source_directory=tmp_path / "none")
    source = _copy("good", tmp_path)
    shutil.copy(source / "sessions" / "b-small.json", source / "sessions" / "z-copy.json")
    plan = await JsonV1Migrator(storage).migrate(tenant_id=T, source_directory=source, dry_run=True)
    [dup] = plan.invalid_files
    assert "duplicate session ids: b-small" in (dup.reason or "")
    assert dup.warnings == ("file stem 'z-copy' differs from id",)


def test_legacy_conversion_rules() -> None:
    items = convert_legacy_json_v1_message(
        {
            "role": "assistant",
            "content": [
                "bare string block",
                {
                    "type": "document",
                    "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBE"},
                },
                {"type": "image", "source": {"type": "file_id", "file_id": "f-1"}},
                {"type": "image", "source": {"type": "weird"}},
                {"type": "tool_result", "tool_use_id": "c", "is_error": True},
            ],
        }
    )
    assert [i["type"] for i in items] == ["raw", "document", "image", "raw", "tool_result"]
    assert items[1]["mediaType"] == "application/pdf"
    assert items[2]["source"] == {"kind": "file", "fileId": "f-1"}
    assert (items[4]["status"], items[4]["output"]) == ("error", None)
    assert items[0]["metadata"] == {"legacyJsonV1": {"role": "assistant", "blockIndex": 0}}
    with pytest.raises(StorageDataError, match="content must be a string or a list"):
        convert_legacy_json_v1_message({"role": "user", "content": 3})
    bad_input: list[object] = []
    block = {"type": "tool_use", "id": "a", "name": "b", "input": bad_input}
    with pytest.raises(StorageDataError, match="input must be a JSON object"):
        convert_legacy_json_v1_message({"role": "user", "content": [block]})


async def test_preview_message_kind_is_converted(storage: SqliteStorage) -> None:
    await storage.sessions.create(tenant_id=T, session_id="preview")
    await storage.sessions.append(
        tenant_id=T,
        session_id="preview",
        expected_revision=0,
        items=[
            NewSessionItem(
                item_id="m", kind="message", payload={"role": "user", "content": "legacy"}
            ),
            NewSessionItem(item_id="r", kind="run", payload={"runId": "x"}),
        ],
    )
    history = await SqliteRuntimeSessionAdapter(storage.sessions).load(
        tenant_id=T, session_id="preview"
    )
    assert [(i.type, getattr(i, "text", None)) for i in history.items] == [("text", "legacy")]


def test_cli_dry_run_migrate_verify_rollback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _copy("good", tmp_path)
    db = str(tmp_path / "cli.db")

    def cli(*args: str) -> tuple[int, dict[str, object]]:
        capsys.readouterr()
        code = main([*args, "--db", db])
        return code, json.loads(capsys.readouterr().out)

    # The module entry point itself, once, in a subprocess.
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "actoviq.storage.sqlite",
            "migrate",
            "--source",
            str(source),
            "--dry-run",
            "--db",
            db,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["files"][0]["status"] == "planned"
    code, report = cli("migrate", "--source", str(source), "--dry-run")
    assert (code, report["dryRun"], report["migratedSessions"]) == (0, True, 0)
    code, report = cli("migrate", "--source", str(source), "--backup", str(tmp_path / "bk"))
    assert (code, report["migratedSessions"], report["totalItems"]) == (0, 3, 11)
    code, report = cli("verify", "--source", str(source))
    assert (code, report["ok"]) == (0, True)
    code, report = cli("rollback", "--source", str(source))
    assert (code, report["removedSessions"]) == (0, ["a-full", "b-small", "c-empty"])
    bad = _copy("malformed", tmp_path)
    code, report = cli("migrate", "--source", str(bad))
    assert code == 1
    problems = report["problems"]
    assert isinstance(problems, list)
    assert len(cast(list[object], problems)) == 5


async def test_progress_reports_every_file_chunk_and_ledger_entry(
    storage: SqliteStorage, tmp_path: Path
) -> None:
    source = _copy("good", tmp_path)
    files = sorted((source / "sessions").glob("*.json"))
    total_bytes = sum(p.stat().st_size for p in files)
    seen: list[MigrationProgress] = []
    migrator = JsonV1Migrator(storage, chunk_size=1, progress=seen.append)

    report = await migrator.migrate(
        tenant_id=T, source_directory=source, backup_directory=tmp_path / "bk"
    )
    scans = [p for p in seen if p.phase == "scan"]
    cutovers = [p for p in seen if p.phase == "cutover"]
    assert [p.files_done for p in scans] == list(range(1, len(files) + 1))
    assert {p.files_total for p in scans} == {len(files)}
    assert scans[-1].bytes_done == scans[-1].bytes_total == total_bytes
    assert scans[-1].items_done == report.total_items
    # chunk_size=1: one report per committed session, counts never go back
    assert [p.files_done for p in cutovers] == list(range(1, report.migrated_sessions + 1))
    assert cutovers[-1].items_done == sum(
        f.item_count for f in report.files if f.status == "migrated"
    )
    assert all(a.bytes_done <= b.bytes_done for a, b in itertools.pairwise(cutovers))

    seen.clear()
    checked = await migrator.verify(tenant_id=T, source_directory=source)
    assert checked.ok
    verifies = [p for p in seen if p.phase == "verify"]
    assert [p.files_done for p in verifies] == list(range(len(files) + 1))
    assert verifies[-1].items_done == checked.items_checked
    assert verifies[-1].bytes_done == total_bytes
