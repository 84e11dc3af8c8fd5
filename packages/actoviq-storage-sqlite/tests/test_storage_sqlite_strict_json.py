"""Typed failures at the storage boundary (issue 11 §3): unopenable files, wrong record types,
and stored text that strict JSON refuses. The store-level rules run in the conformance suite
(``actoviq.runtime.stores.conformance.strict_json``) on every backend."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from actoviq.core import TextItem
from actoviq.runtime import StorageDataError, StorageUnavailableError, StoreRuntimeSessionAdapter
from actoviq.runtime.stores import StoredSessionItem
from actoviq.runtime.stores.conformance import StoreBundle
from actoviq.storage.sqlite import SqliteRuntimeSessionAdapter, SqliteStorage
from actoviq.storage.sqlite._journal import decode_turns
from actoviq.storage.sqlite.legacy import read_legacy_session_file

STAMP = "2026-01-01T00:00:00.000Z"


def _not_databases(folder: Path) -> dict[str, Path]:
    text = folder / "notes.db"
    text.write_text("these are my notes, not a database\n" * 50, "utf-8")
    noise = folder / "noise.db"
    noise.write_bytes(bytes(range(256)) * 64)
    header = folder / "header-only.db"
    header.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4080)
    return {"text": text, "noise": noise, "header": header}


@pytest.mark.parametrize("kind", ["text", "noise", "header"])
async def test_opening_a_file_that_is_not_a_database_is_refused_typed(
    tmp_path: Path, kind: str
) -> None:
    path = _not_databases(tmp_path)[kind]
    before = path.read_bytes()
    with pytest.raises(StorageUnavailableError) as caught:
        await SqliteStorage.open(path)
    error = caught.value
    assert error.code == "STORAGE_UNAVAILABLE"
    assert error.retryable is False  # retrying cannot turn it into a database
    assert "cannot be opened" in error.message
    assert isinstance(error.cause, Exception)
    assert path.read_bytes() == before  # nothing was written to the user's file


async def test_a_database_path_under_a_file_is_refused_typed(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x", "utf-8")
    with pytest.raises(StorageUnavailableError):
        await SqliteStorage.open(blocker / "sub" / "actoviq.db")


async def test_a_real_database_still_opens_after_the_refusals(tmp_path: Path) -> None:
    path = tmp_path / "ok.db"
    sqlite3.connect(path).close()  # an empty SQLite file is a database
    async with await SqliteStorage.open(path) as storage:
        await storage.sessions.create(tenant_id="t", session_id="s")
        assert await storage.sessions.get(tenant_id="t", session_id="s") is not None


_NOT_ITEMS: dict[str, Any] = {
    "a dict": [{"type": "text", "role": "user", "text": "hi"}],
    "a tuple": [("text", "user", "hi")],
    "one bare item": TextItem(role="user", text="hi"),
    "a string": "hi",
    "None": None,
    "an item then a dict": [TextItem(role="user", text="ok"), {"type": "text"}],
}


@pytest.mark.parametrize("what", sorted(_NOT_ITEMS))
async def test_runtime_adapters_require_canonical_items(bundle: StoreBundle, what: str) -> None:
    kept = TextItem(role="user", text="kept")
    adapters = (StoreRuntimeSessionAdapter, SqliteRuntimeSessionAdapter)
    for index, adapter_type in enumerate(adapters):
        adapter = adapter_type(bundle.sessions)
        session = f"{what}-{index}"
        revision = await adapter.append(
            tenant_id="t", session_id=session, items=[kept], expected_revision="0"
        )
        with pytest.raises(StorageDataError) as caught:
            await adapter.append(
                tenant_id="t",
                session_id=session,
                items=_NOT_ITEMS[what],
                expected_revision=revision,
            )
        assert "canonical item" in caught.value.message
        loaded = await adapter.load(tenant_id="t", session_id=session)
        assert (loaded.items, loaded.revision) == ((kept,), revision)


def test_stored_text_nested_beyond_the_parser_is_refused_typed() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    for ids, payloads in (('["a"]', f'[{{"x":{deep}}}]'), (f"[{deep}]", '[{"x":1}]')):
        row = (1, 1, STAMP, ids, '"text"', None, payloads)
        with pytest.raises(StorageDataError, match="nests deeper"):
            decode_turns([row], 0, None)


@pytest.mark.parametrize(
    "payload",
    [
        {"type": "text", "role": "user", "text": "x\ud800"},
        {"type": "tool_call", "id": "c", "name": "n", "input": {"n": 2**53 + 1}},
        {"type": "text", "role": "user", "text": "ok", "metadata": {"k\udfff": 1}},
    ],
)
def test_foreign_rows_that_are_not_strict_json_fail_typed_when_read_as_items(
    payload: dict[str, Any],
) -> None:
    # What another writer could have put in a row: the runtime adapter's decoding refuses it.
    entry = StoredSessionItem(
        sequence=1, item_id="i", kind=str(payload["type"]), payload=payload, created_at=STAMP
    )
    with pytest.raises(StorageDataError, match="not a canonical item"):
        StoreRuntimeSessionAdapter.transcript_items(
            StoreRuntimeSessionAdapter.__new__(StoreRuntimeSessionAdapter), entry
        )


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ('{"version": 1, "id": "s", "messages": [], "runs": [], "x": ' + "[" * 100_000, "nested"),
        ('{"version": 1, "id": "s", "messages": [], "runs": [], "x": "\\ud800"}', "surrogate"),
        (
            '{"version": 1, "id": "s", "messages": [], "runs": [], "x": 9007199254740993}',
            "integer beyond",
        ),
    ],
)
def test_legacy_files_that_are_not_strict_json_are_refused_typed(
    tmp_path: Path, body: str, problem: str
) -> None:
    path = tmp_path / "sessions" / "s.json"
    path.parent.mkdir()
    path.write_text(body, "utf-8")
    with pytest.raises(StorageDataError, match=problem):
        read_legacy_session_file(path, tmp_path)
