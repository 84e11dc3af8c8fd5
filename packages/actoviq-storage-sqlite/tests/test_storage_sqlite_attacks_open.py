"""Opening storage with the targets a user types (issue 11 §3, issue 14 §5), through the public API.

Bugs found by the adversarial review of resolved promises: the backend claims ``sqlite://`` and
``postgresql://`` URLs, but ``sqlite:///app.db`` raised a raw SQLAlchemy ``InvalidRequestError``
(no asyncio driver) and ``postgres://`` named a dialect SQLAlchemy no longer has; a path with a NUL
or a lone surrogate raised a bare ``ValueError``/``UnicodeEncodeError``; ``open_runtime(None)`` a
bare ``TypeError``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from actoviq.core import AgentSpec
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider
from actoviq.runtime import RuntimeConfigurationError, open_runtime
from actoviq.runtime.stores import StorageDataError, StorageUnavailableError
from actoviq.storage.sqlite import SqliteStorage

CHAT = AgentSpec(id="chat", name="Chat", instructions="Be brief.", model="scripted:m")


async def test_a_plain_sqlite_url_opens_the_file(tmp_path: Path) -> None:
    path = tmp_path / "plain.db"
    models = ModelRegistry([ScriptedProvider(["hi"], repeat_last=True)])
    async with open_runtime(f"sqlite:///{path}", models=models) as runtime:
        result = await runtime.run(CHAT, "hello", session_id="me")
    assert result.status == "completed" and path.exists()


async def test_a_synchronous_driver_is_a_typed_refusal(tmp_path: Path) -> None:
    with pytest.raises(StorageUnavailableError, match="asyncio driver"):
        await SqliteStorage.open(f"sqlite+pysqlite:///{tmp_path / 'sync.db'}")


@pytest.mark.parametrize("name", ["a\x00b.db", "x\ud800.db"], ids=["nul", "surrogate"])
async def test_an_unusable_filename_is_typed(tmp_path: Path, name: str) -> None:
    with pytest.raises(StorageDataError):
        await SqliteStorage.open(str(tmp_path) + "/" + name)


@pytest.mark.parametrize("target", [None, 5])
async def test_a_target_that_is_not_a_path_is_typed(target: Any) -> None:
    with pytest.raises(RuntimeConfigurationError) as caught:
        async with open_runtime(target):
            pass
    assert caught.value.code == "STORAGE_TARGET_INVALID"
