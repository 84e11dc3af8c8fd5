"""The 0.x face of the JSON v1 store: CAS, locks, atomic writes (spec 04 §7.10 rows 109-113)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from pathlib import Path
from typing import Any, cast

import pytest

from actoviq.compat import LegacyJsonV1SessionStore
from actoviq.compat.errors import (
    SessionBusyError,
    SessionConflictError,
    SessionDataError,
    SessionNotFoundError,
    UnsafeSessionIdError,
)
from actoviq.compat.legacy_store import StoredSession
from actoviq.runtime import StorageConflictError


def _store(root: Path, **options: Any) -> LegacyJsonV1SessionStore:
    return LegacyJsonV1SessionStore(root, durable=False, **options)


def _file(root: Path, session_id: str) -> Path:
    return root / "sessions" / f"{session_id}.json"


def _legacy_file(session_id: str, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "version": 1,
        "id": session_id,
        "title": "Old chat",
        "titleSource": "manual",
        "model": "claude-x",
        "tags": [],
        "metadata": {"__hadamardRuntime": "clean"},
        "createdAt": "2026-01-01T00:00:00.000Z",
        "updatedAt": "2026-01-01T00:00:00.000Z",
        "status": "active",
        "messages": [{"role": "user", "content": "old question"}],
        "runs": [],
    }
    data.update(changes)
    return data


def _write(root: Path, data: dict[str, Any]) -> Path:
    path = _file(root, data["id"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", "utf-8")
    return path


async def test_create_saves_at_revision_one_in_the_reference_layout(tmp_path: Path) -> None:
    store = _store(tmp_path)
    session = await store.create(id="s1", title="  Support  ", system_prompt="Be brief.")
    assert session["revision"] == 1
    on_disk = json.loads(_file(tmp_path, "s1").read_text("utf-8"))
    assert on_disk["revision"] == 1
    assert (on_disk["title"], on_disk["titleSource"], on_disk["model"]) == (
        "Support",
        "manual",
        "unknown",
    )
    assert on_disk["systemPrompt"] == "Be brief."
    # JSON.stringify(data, null, 2) + "\n"
    text = _file(tmp_path, "s1").read_text("utf-8")
    assert text.endswith("}\n") and text.startswith('{\n  "version": 1,')
    untitled = await store.create()
    assert (untitled["title"], untitled["titleSource"]) == ("Untitled Session", "auto")


async def test_row_109_a_stale_save_conflicts_and_the_first_writer_wins(tmp_path: Path) -> None:
    store = _store(tmp_path)
    await store.create(id="s")
    first = await store.load("s")
    second = await store.load("s")
    first["title"] = "first writer"
    await store.save(first)
    assert first["revision"] == 2
    second["title"] = "second writer"
    with pytest.raises(SessionConflictError) as caught:
        await store.save(second)
    error = caught.value
    assert isinstance(error, StorageConflictError)
    assert (error.code, error.session_id, error.expected_revision, error.actual_revision) == (
        "SESSION_CONFLICT",
        "s",
        1,
        2,
    )
    assert second["revision"] == 1  # the loser's copy is unchanged
    assert (await store.load("s"))["title"] == "first writer"


async def test_row_110_two_instances_race_save_exactly_one_wins(tmp_path: Path) -> None:
    await _store(tmp_path).create(id="race")
    a, b = _store(tmp_path), _store(tmp_path)
    copies = [await a.load("race"), await b.load("race")]
    for index, copy in enumerate(copies):
        copy["title"] = f"writer {index}"
    outcomes = await asyncio.gather(a.save(copies[0]), b.save(copies[1]), return_exceptions=True)
    errors = [o for o in outcomes if isinstance(o, BaseException)]
    assert len(errors) == 1
    assert isinstance(errors[0], SessionConflictError)
    assert errors[0].code == "SESSION_CONFLICT"
    final = await _store(tmp_path).load("race")
    assert final["revision"] == 2
    winner = 0 if outcomes[0] is None else 1
    assert final["title"] == f"writer {winner}"


async def test_row_110_many_writers_in_threads_never_lose_an_update(tmp_path: Path) -> None:
    await _store(tmp_path).create(id="counter", metadata={"n": 0})

    async def bump() -> None:
        store = _store(tmp_path)
        while True:
            session = await store.load("counter")
            session["metadata"]["n"] += 1
            try:
                await store.save(session)
                return
            except SessionConflictError:
                continue

    await asyncio.gather(*(bump() for _ in range(12)))
    final = await _store(tmp_path).load("counter")
    assert final["metadata"]["n"] == 12
    assert final["revision"] == 13


async def test_row_111_a_file_without_revision_loads_as_zero(tmp_path: Path) -> None:
    _write(tmp_path, _legacy_file("old"))
    store = _store(tmp_path)
    session = await store.load("old")
    assert session["revision"] == 0
    await store.save(session)
    assert session["revision"] == 1
    assert json.loads(_file(tmp_path, "old").read_text("utf-8"))["revision"] == 1


async def test_row_112_a_malformed_file_fails_load_and_is_skipped_by_list(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _write(tmp_path, _legacy_file("bad", messages={"not": "a list"}))
    store = _store(tmp_path)
    with pytest.raises(SessionDataError) as caught:
        await store.load("bad")
    assert caught.value.code == "SESSION_DATA_INVALID"
    assert "messages must be a list" in caught.value.message
    with caplog.at_level(logging.WARNING, logger="actoviq.compat"):
        assert await store.list() == []
    assert "bad" in caplog.text


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("version", 2, "version must be 1"),
        ("id", "other", "differs from the file name"),
        ("title", 3, "title must be a string"),
        ("titleSource", "robot", "titleSource"),
        ("status", "gone", "status"),
        ("tags", ["a", 1], "tags must be a list of strings"),
        ("metadata", [], "metadata must be a JSON object"),
        ("runs", None, "runs must be a list"),
        ("revision", -1, "revision"),
    ],
)
async def test_every_validation_rule_of_3_10(
    tmp_path: Path, field: str, value: Any, fragment: str
) -> None:
    _write(tmp_path, {**_legacy_file("v"), field: value, "id": value if field == "id" else "v"})
    if field == "id":
        # the file is still named v.json
        os.replace(_file(tmp_path, "other"), _file(tmp_path, "v"))
    with pytest.raises(SessionDataError) as caught:
        await _store(tmp_path).load("v")
    assert fragment in caught.value.message


async def test_non_strict_json_in_a_file_is_refused(tmp_path: Path) -> None:
    path = _file(tmp_path, "nan")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(_legacy_file("nan"))[:-1] + ', "x": NaN}', "utf-8")
    with pytest.raises(SessionDataError, match="not strict JSON"):
        await _store(tmp_path).load("nan")


async def test_row_113_unsafe_ids_are_refused_before_any_io(tmp_path: Path) -> None:
    outside = tmp_path / "escaped.json"
    outside.write_text("{}", "utf-8")
    store = _store(tmp_path / "root")
    with pytest.raises(UnsafeSessionIdError, match="Unsafe sessionId"):
        await store.delete("../../escaped")
    assert outside.exists()
    too_long = "é" * 101  # 202 UTF-8 bytes: the lock file name would not fit in 255 later
    for bad in ("", " ", ".", "..", "a/b", "a\\b", "a\x00b", "/abs", "a\nb", "a\x7fb", too_long):
        with pytest.raises(UnsafeSessionIdError):
            await store.load(bad)
        with pytest.raises(UnsafeSessionIdError):
            await store.create(id=bad)
        with pytest.raises(UnsafeSessionIdError):
            await store.delete(bad)
    assert not (tmp_path / "root").exists()
    longest = "a" * 200
    assert (await store.create(id=longest))["id"] == longest
    assert (await store.delete(longest)) is True


async def test_a_symlinked_session_file_is_refused_and_its_target_untouched(
    tmp_path: Path,
) -> None:
    store = _store(tmp_path / "root")
    await store.create(id="real")
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps(_legacy_file("evil")), "utf-8")
    (tmp_path / "root" / "sessions" / "evil.json").symlink_to(outside)
    with pytest.raises(SessionDataError):
        await store.load("evil")
    assert [summary["id"] for summary in await store.list()] == ["real"]
    assert json.loads(outside.read_text("utf-8"))["id"] == "evil"


async def test_missing_session_and_delete(tmp_path: Path) -> None:
    store = _store(tmp_path)
    with pytest.raises(SessionNotFoundError) as caught:
        await store.load("nope")
    assert caught.value.code == "SESSION_NOT_FOUND"
    assert await store.get("nope") is None
    await store.create(id="gone")
    with pytest.raises(SessionConflictError):
        await store.delete("gone", expected_revision=7)
    assert await store.delete("gone", expected_revision=1) is True
    assert await store.delete("gone") is False


async def test_create_twice_is_a_conflict(tmp_path: Path) -> None:
    store = _store(tmp_path)
    await store.create(id="dup")
    with pytest.raises(SessionConflictError) as caught:
        await store.create(id="dup")
    assert (caught.value.expected_revision, caught.value.actual_revision) == (0, 1)


async def test_saving_a_new_session_needs_revision_zero(tmp_path: Path) -> None:
    session = cast(StoredSession, _legacy_file("fresh", revision=4))
    with pytest.raises(SessionConflictError) as caught:
        await _store(tmp_path).save(session)
    assert (caught.value.expected_revision, caught.value.actual_revision) == (4, None)
    assert not _file(tmp_path, "fresh").exists()


async def test_save_refuses_what_is_not_a_strict_json_session(tmp_path: Path) -> None:
    store = _store(tmp_path)
    session = await store.create(id="s")
    session["metadata"]["bad"] = float("inf")
    with pytest.raises(SessionDataError, match="strict JSON"):
        await store.save(session)
    session["metadata"].pop("bad")
    session["tags"] = "not-a-list"  # type: ignore[typeddict-item]
    with pytest.raises(SessionDataError, match="tags"):
        await store.save(session)
    assert (await store.load("s"))["revision"] == 1


async def test_unknown_keys_of_other_writers_round_trip(tmp_path: Path) -> None:
    _write(tmp_path, _legacy_file("k", kind="worktree", futureField={"x": [1, 2]}))
    store = _store(tmp_path)
    session = await store.load("k")
    await store.save(session)
    again = cast(dict[str, Any], await store.load("k"))
    assert again["futureField"] == {"x": [1, 2]}
    assert again["kind"] == "worktree"


async def test_list_orders_by_last_run_then_updated(tmp_path: Path) -> None:
    _write(tmp_path, _legacy_file("a", updatedAt="2026-01-03T00:00:00.000Z"))
    _write(
        tmp_path,
        _legacy_file(
            "b",
            updatedAt="2026-01-01T00:00:00.000Z",
            lastRunAt="2026-01-05T00:00:00.000Z",
            messages=[{"role": "user", "content": [{"type": "text", "text": "x " * 200}]}],
        ),
    )
    _write(tmp_path, _legacy_file("c", updatedAt="2026-01-02T00:00:00.000Z"))
    summaries = await _store(tmp_path).list()
    assert [s["id"] for s in summaries] == ["b", "a", "c"]
    assert summaries[1]["preview"] == "old question"
    assert len(summaries[0]["preview"]) == 160 and summaries[0]["preview"].endswith("...")
    assert (summaries[0]["messageCount"], summaries[0]["runCount"]) == (1, 0)


async def test_a_held_write_lock_times_out_typed_and_a_stale_one_is_broken(
    tmp_path: Path,
) -> None:
    store = _store(tmp_path, lock_timeout=0.2)
    session = await store.create(id="locked")
    lock = tmp_path / "sessions" / "locked.json.lock"
    lock.write_text('{"owner": "someone else"}', "utf-8")
    session["title"] = "changed"
    with pytest.raises(SessionBusyError) as caught:
        await store.save(session)
    assert caught.value.code == "SESSION_BUSY" and caught.value.retryable
    assert lock.exists()
    stale = time.time() - 60
    os.utime(lock, (stale, stale))
    await store.save(session)
    assert session["revision"] == 2
    assert not lock.exists()


async def test_atomic_writes_leave_no_temp_files(tmp_path: Path) -> None:
    store = LegacyJsonV1SessionStore(tmp_path)  # durable: fsync on
    session = await store.create(id="a")
    for index in range(5):
        session["title"] = f"t{index}"
        await store.save(session)
    names = sorted(p.name for p in (tmp_path / "sessions").iterdir())
    assert names == ["a.json"]


async def test_checkpoints_save_list_restore_delete(tmp_path: Path) -> None:
    store = _store(tmp_path)
    session = await store.create(id="c", initial_messages=[{"role": "user", "content": "v1"}])
    checkpoint = await store.save_checkpoint("c", "before edit")
    folder = tmp_path / "sessions" / ".checkpoints" / "c"
    assert (folder / f"{checkpoint['id']}.json").exists()
    session["messages"].append({"role": "assistant", "content": "v2"})
    await store.save(session)
    listed = await store.list_checkpoints("c")
    assert [c["label"] for c in listed] == ["before edit"]
    restored = await store.restore_checkpoint("c", checkpoint["id"])
    assert restored["messages"] == [{"role": "user", "content": "v1"}]
    assert restored["revision"] == 3
    assert (await store.load("c"))["messages"] == [{"role": "user", "content": "v1"}]
    assert await store.delete_checkpoint("c", checkpoint["id"]) is True
    assert await store.list_checkpoints("c") == []
    with pytest.raises(SessionNotFoundError):
        await store.load_checkpoint("c", checkpoint["id"])
    with pytest.raises(UnsafeSessionIdError):
        await store.load_checkpoint("c", "../x")


async def test_the_turn_lease_serialises_turns_and_is_released(tmp_path: Path) -> None:
    store = _store(tmp_path)
    lease = tmp_path / "sessions" / "t.json.turn.lock"
    order: list[str] = []
    first_in = asyncio.Event()
    release_first = asyncio.Event()

    async def first() -> None:
        async with store.turn_lease("t") as token:
            assert token in lease.read_text("utf-8")
            order.append("first in")
            first_in.set()
            await release_first.wait()
            order.append("first out")

    async def second() -> None:
        await first_in.wait()
        async with store.turn_lease("t"):
            order.append("second in")

    async with asyncio.timeout(10):
        task = asyncio.gather(first(), second())
        await first_in.wait()
        assert order == ["first in"]
        release_first.set()
        await task
    assert order == ["first in", "first out", "second in"]
    assert not lease.exists()


async def test_another_process_turn_lease_blocks_until_timeout_or_stale(tmp_path: Path) -> None:
    store = _store(tmp_path, turn_timeout=0.2, turn_stale_after=5)
    lease = tmp_path / "sessions" / "p.json.turn.lock"
    lease.parent.mkdir(parents=True)
    lease.write_text('{"owner": "other-host:1:abc"}', "utf-8")
    with pytest.raises(SessionBusyError):
        async with store.turn_lease("p"):
            pass
    assert "other-host" in lease.read_text("utf-8")
    stale = time.time() - 60
    os.utime(lease, (stale, stale))
    async with store.turn_lease("p") as token:
        assert token in lease.read_text("utf-8")
    assert not lease.exists()


async def test_the_turn_lease_heartbeat_keeps_it_fresh(tmp_path: Path) -> None:
    store = _store(tmp_path, turn_heartbeat=0.05)
    lease = tmp_path / "sessions" / "h.json.turn.lock"
    async with store.turn_lease("h"):
        old = time.time() - 60
        os.utime(lease, (old, old))
        async with asyncio.timeout(5):
            while lease.stat().st_mtime < time.time() - 30:  # noqa: ASYNC110 (a file has no event)
                await asyncio.sleep(0.02)
    assert not lease.exists()
