"""``actoviq sessions …`` and ``actoviq migrate json-v1`` through Click's runner."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from cli_testkit import ITEM_VALIDATOR, Project, last
from rich.console import Console

from actoviq.cli.cmd_migrate import MigrationProgressBar
from actoviq.storage.sqlite import MigrationProgress


def _seed(project: Project) -> None:
    assert project.invoke("run", "payer", "one", "--session", "s1").exit_code == 0
    assert project.invoke("run", "payer", "look it up", "--session", "s1").exit_code == 0
    assert project.invoke("run", "payer", "hello", "--session", "s2").exit_code == 0


def test_sessions_list_show_export_delete(project: Project, tmp_path: Path) -> None:
    _seed(project)
    listed, documents = project.json("sessions", "list")
    assert listed.exit_code == 0
    sessions = last(documents, "sessions")["sessions"]
    assert [s["sessionId"] for s in sessions] == ["s2", "s1"]  # newest first
    assert {s["sessionId"]: s["items"] for s in sessions} == {"s1": 6, "s2": 2}

    _shown, documents = project.json("sessions", "show", "s1")
    transcript = last(documents, "session")["transcript"]
    assert [i["type"] for i in transcript] == [
        "text", "text", "text", "tool_call", "tool_result", "text",
    ]  # fmt: skip
    text = project.invoke("sessions", "show", "s1")
    assert "you: look it up" in text.stdout and "tool: lookup" in text.stdout

    exported = project.invoke("sessions", "export", "s1")
    lines = exported.stdout.splitlines()
    assert [json.loads(line) for line in lines] == transcript
    for line in lines:
        ITEM_VALIDATOR.validate(json.loads(line))
    target = tmp_path / "s1.jsonl"
    _written, documents = project.json("sessions", "export", "s1", "-o", str(target))
    assert last(documents, "session.saved")["items"] == 6
    assert target.read_text("utf-8").splitlines() == lines

    refused = project.invoke("sessions", "delete", "s1")  # nobody to ask: needs --yes
    assert refused.exit_code == 2 and "--yes" in refused.stderr
    _deleted, documents = project.json("sessions", "delete", "s1", "--yes")
    assert last(documents, "session.deleted")["sessionId"] == "s1"
    gone = project.invoke("sessions", "show", "s1")
    assert gone.exit_code == 4 and "error[CLI_NOT_FOUND]" in gone.stderr
    assert project.invoke("sessions", "delete", "s1", "--yes").exit_code == 4
    # a deleted session starts over
    again = project.invoke("run", "payer", "fresh", "--session", "s1")
    assert "(message 1)" in again.stdout


def test_sessions_list_text_and_empty(project: Project) -> None:
    empty = project.invoke("sessions", "list")
    assert empty.exit_code == 0 and "No sessions" in empty.stderr
    _seed(project)
    table = project.invoke("sessions", "list")
    assert "s1" in table.stdout and "s2" in table.stdout


def _legacy(root: Path, count: int, *, broken: bool = False) -> Path:
    sessions = root / "legacy" / "sessions"
    sessions.mkdir(parents=True)
    for n in range(count):
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": f"question {n}"},
            {"role": "assistant", "content": [{"type": "text", "text": f"answer {n}"}]},
        ]
        document: dict[str, Any] = {
            "version": 1,
            "revision": 1,
            "id": f"legacy-{n}",
            "title": f"t{n}",
            "titleSource": "auto",
            "model": "claude-x",
            "tags": [],
            "metadata": {},
            "createdAt": "2025-05-01T10:00:00.000Z",
            "updatedAt": "2025-05-01T11:00:00.000Z",
            "status": "idle",
            "messages": messages,
            "runs": [],
        }
        (sessions / f"legacy-{n}.json").write_text(json.dumps(document), "utf-8")
    if broken:
        (sessions / "zz-broken.json").write_text("{not json", "utf-8")
    return root / "legacy"


def test_migrate_dry_run_cutover_verify_rollback(project: Project, tmp_path: Path) -> None:
    source = _legacy(tmp_path, 5)
    db = str(tmp_path / "migrated.db")
    planned, documents = project.json(
        "migrate", "json-v1", "--source", str(source), "--db", db, "--dry-run"
    )
    report = last(documents, "migration")
    assert planned.exit_code == 0 and report["action"] == "dry-run"
    assert report["report"]["migratedSessions"] == 0 and report["report"]["totalItems"] == 10

    done, documents = project.json(
        "migrate", "json-v1", "--source", str(source), "--db", db, "--chunk-size", "2",
        "--backup", str(tmp_path / "backup"),
    )  # fmt: skip
    report = last(documents, "migration")["report"]
    assert (
        done.exit_code == 0 and report["migratedSessions"] == 5 and report["chunksCommitted"] == 3
    )
    assert (tmp_path / "backup" / "sessions" / "legacy-0.json").exists()

    # The migrated sessions are ordinary sessions for every other command.
    _shown, documents = project.json("--db", db, "sessions", "show", "legacy-3")
    transcript = last(documents, "session")["transcript"]
    assert [i.get("text") for i in transcript] == ["question 3", "answer 3"]

    verified, documents = project.json(
        "migrate", "json-v1", "--source", str(source), "--db", db, "--verify"
    )
    assert verified.exit_code == 0 and last(documents, "migration")["report"]["ok"] is True
    text = project.invoke("migrate", "json-v1", "--source", str(source), "--db", db, "--verify")
    assert "verify: 5 session(s), 10 item(s), ok" in text.stdout

    rerun = project.invoke("migrate", "json-v1", "--source", str(source), "--db", db)
    assert rerun.exit_code == 0 and "0 migrated, 5 skipped" in rerun.stdout

    _undone, documents = project.json(
        "migrate", "json-v1", "--source", str(source), "--db", db, "--rollback"
    )
    assert sorted(last(documents, "migration")["report"]["removedSessions"]) == [
        f"legacy-{n}" for n in range(5)
    ]
    assert project.invoke("--db", db, "sessions", "show", "legacy-3").exit_code == 4


def test_migrate_refuses_a_source_with_invalid_files(project: Project, tmp_path: Path) -> None:
    source = _legacy(tmp_path, 2, broken=True)
    db = str(tmp_path / "m.db")
    planned, documents = project.json(
        "migrate", "json-v1", "--source", str(source), "--db", db, "--dry-run"
    )
    assert planned.exit_code == 1
    assert last(documents, "migration")["report"]["invalidFiles"] == 1
    refused, documents = project.json("migrate", "json-v1", "--source", str(source), "--db", db)
    assert refused.exit_code == 1
    error = last(documents, "error")["error"]
    assert error["name"] == "MigrationSourceError" and error["code"] == "STORAGE_DATA_INVALID"
    assert error["details"]["problems"][0]["path"].endswith("zz-broken.json")
    missing = project.invoke("migrate", "json-v1", "--source", str(tmp_path / "nope"), "--db", db)
    assert missing.exit_code == 1 and "does not exist" in missing.stderr


@pytest.mark.parametrize("phase", ["scan", "cutover", "verify"])
def test_progress_bar_shows_files_items_and_speed(phase: Any) -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=120, color_system=None)
    with MigrationProgressBar(console) as bar:
        for done in range(1, 4):
            bar.update(
                MigrationProgress(
                    phase=phase,
                    files_done=done,
                    files_total=3,
                    items_done=done * 10,
                    bytes_done=done * 1_000_000,
                    bytes_total=3_000_000,
                )
            )
    rendered = buffer.getvalue()
    assert "3/3 files" in rendered and "30 items" in rendered
    assert "/s" in rendered  # the transfer speed column (MB/s, kB/s …)
