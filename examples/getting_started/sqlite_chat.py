"""Newcomer program 2: a chat whose history lives in a SQLite file and survives a restart.

``python sqlite_chat.py "message"`` answers one message in the session ``me`` of ``chat.db``.
Without an argument the example talks twice, the second time from a new process, which still
knows the first message. Offline (no OPENAI_API_KEY, or ACTOVIQ_OFFLINE=1) a scripted model
answers from the history it is given.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from actoviq.core import TextItem
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider
from actoviq.runtime import AgentSpec, open_runtime

OFFLINE = os.environ.get("ACTOVIQ_OFFLINE") == "1" or not os.environ.get("OPENAI_API_KEY")


def models() -> ModelRegistry | None:
    """None with a key (the runtime then uses the environment's providers), else a script."""
    if not OFFLINE:
        return None

    def answer(request: ModelRequest) -> str:
        seen = " ".join(item.text for item in request.input if isinstance(item, TextItem))
        return "Your name is Ada." if "Ada" in seen and "name?" in seen else "Nice to meet you!"

    return ModelRegistry([ScriptedProvider([answer])], default_model="scripted:demo")


# --- the program ---------------------------------------------------------------------------------

agent = AgentSpec(id="chat", name="Chat", instructions="Be brief.")


async def main(path: str, message: str) -> None:
    async with open_runtime(path, models=models()) as runtime:  # sessions in the SQLite file
        result = await runtime.run(agent, message, session_id="me")
        print(f"> {message}\n{result.output}")


if __name__ == "__main__":
    if len(sys.argv) == 3:
        asyncio.run(main(sys.argv[1], sys.argv[2]))
    else:  # the demo: two processes on one file
        database = str(Path(tempfile.mkdtemp()) / "chat.db")
        asyncio.run(main(database, "My name is Ada."))
        subprocess.run([sys.executable, __file__, database, "What is my name?"], check=True)
