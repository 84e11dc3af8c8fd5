"""The README code, type-checked (pyright strict, ``make typecheck``) and run (issue 14 §5).

Every ```python block of the root README, the runtime, core, events and storage READMEs and
docs/events.md is embedded below verbatim (indented into a function where it needs one); a test
fails when a block changes without this file, so the published code always type-checks with zero
errors and never needs ``AgentSpec[Any, Any]`` annotations or ``# type: ignore``.
"""

from __future__ import annotations

import asyncio
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from actoviq.core import AgentSpec, ToolCallItem
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import AgentRuntime, RunHandle, tool

ROOT = Path(__file__).resolve().parent.parent
READMES = [
    ROOT / "README.md",
    ROOT / "packages" / "actoviq-core" / "README.md",
    ROOT / "packages" / "actoviq-events" / "README.md",
    ROOT / "packages" / "actoviq-runtime" / "README.md",
]
STORAGE_README = ROOT / "packages" / "actoviq-storage-sqlite" / "README.md"
EVENTS_DOC = ROOT / "docs" / "events.md"


def readme_hello() -> None:
    """The README's first block: ``examples/getting_started/hello.py`` (``make examples``)."""
    import asyncio
    import os

    from actoviq.core import AgentSpec
    from actoviq.providers import ModelRegistry
    from actoviq.providers.testing import ScriptedProvider
    from actoviq.runtime import AgentRuntime

    if os.environ.get("OPENAI_API_KEY") and os.environ.get("ACTOVIQ_OFFLINE") != "1":
        from actoviq.providers.openai import OpenAIResponsesProvider

        provider, model = OpenAIResponsesProvider(), "openai-responses:gpt-4.1-mini"
    else:
        provider, model = ScriptedProvider(["CAS writes only if nothing changed."]), "scripted:demo"

    async def main() -> None:
        agent = AgentSpec(id="concise", name="Concise", instructions="Be brief.", model=model)
        async with AgentRuntime(models=ModelRegistry([provider])) as runtime:
            result = await runtime.run(agent, "Explain compare-and-set in one sentence.")
            print(result.output)

    asyncio.run(main())


def readme_quick_look() -> None:
    import asyncio

    import attrs

    from actoviq.core import AgentSpec, ModelSettings
    from actoviq.providers import ModelRegistry
    from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
    from actoviq.runtime import AgentRuntime, tool

    @attrs.frozen
    class Definition:
        term: str
        meaning: str

    @tool(effect="read")
    def lookup(term: str) -> str:
        """Look a glossary term up."""
        return {"cas": "compare-and-set"}.get(term.lower(), "unknown")

    agent = AgentSpec(
        id="glossary",
        name="Glossary",
        instructions="Define the term the user asks about; use lookup.",
        tools=["lookup"],
        output=Definition,  # runs return RunResult[Definition], validated (and retried) for you
        model_settings=ModelSettings(temperature=0.2),
    )

    async def main() -> None:
        # Offline: a scripted model (OpenAIResponsesProvider() or AnthropicProvider() for real).
        script = ScriptedTurn(structured_output={"term": "CAS", "meaning": "compare-and-set"})
        models = ModelRegistry([ScriptedProvider([script])], default_model="scripted:demo")
        async with AgentRuntime(models=models, tools=[lookup]) as runtime:
            result = await runtime.run(agent, "What is CAS?")
            print(result.output.meaning)  # compare-and-set

    asyncio.run(main())


def runtime_readme() -> None:
    import asyncio

    from actoviq.core import AgentSpec, ToolCallItem
    from actoviq.providers import ModelRegistry
    from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
    from actoviq.runtime import AgentRuntime, InterruptionDecision, tool

    @tool(effect="side-effect", requires_approval=True)
    def send_email(to: str) -> dict[str, object]:
        """Send an email."""
        return {"sent": to}

    async def main() -> None:
        call = ToolCallItem(id="c1", name="send_email", input={"to": "ops@example.test"})
        model = ScriptedProvider([ScriptedTurn(tool_calls=[call]), "Sent."])
        agent = AgentSpec(
            id="mailer",
            name="Mailer",
            instructions="Mail ops.",
            model="scripted:m",
            tools=("send_email",),
        )
        async with AgentRuntime(models=ModelRegistry([model]), tools=[send_email]) as runtime:
            result = await runtime.run(agent, "Tell ops we shipped.")  # pauses for the approval
            decisions = [InterruptionDecision.approve(i.id) for i in result.interruptions]
            result = await runtime.resume(result.state, decisions).result()
            print(result.output)  # Sent.

    asyncio.run(main())


def core_readme() -> None:
    from actoviq.core import ToolCallItem, item_from_json, item_to_json

    call = ToolCallItem(id="call_1", name="lookup", input={"q": "cas"})
    wire = item_to_json(call)  # {'type': 'tool_call', 'id': 'call_1', 'name': 'lookup', ...}
    assert item_from_json(wire) == call


async def events_readme() -> None:
    from actoviq.events import (
        EventDispatcher,
        EventEmitter,
        InMemoryEventSink,
        create_root_trace_context,
        default_processors,
    )

    sink = InMemoryEventSink()
    async with EventDispatcher(default_processors(), [sink]) as dispatcher:
        emitter = EventEmitter(create_root_trace_context("run-1"), dispatcher)
        await emitter.emit("run.started", {"agentId": "assistant"})


async def storage_readme(models: ModelRegistry, agent: AgentSpec[Any, str]) -> list[Any]:
    from actoviq.storage.sqlite import open_runtime

    async with open_runtime("state/actoviq.db", models=models) as runtime:  # or a PostgreSQL URL
        result = await runtime.run(agent, "Hello again", session_id="s1")  # history in the file
        waiting = await runtime.pending("some-run-id")  # what an interrupted run waits for
    return [result.output, waiting]


async def events_doc(handle: RunHandle[str]) -> None:
    from actoviq.events import ModelTextDeltaEvent, RunInterruptedEvent, ToolStartedEvent

    async for event in handle:
        match event:
            case ModelTextDeltaEvent():
                print(event.data["delta"], end="")
            case ToolStartedEvent():
                print(f"[{event.data['name']}]")
            case RunInterruptedEvent():
                for waiting in event.data.get("interruptions", []):
                    print("needs a decision:", waiting["id"], waiting["reason"])
            case _:
                pass


def _squeeze(text: str) -> str:
    """Runs of blank lines as one (the formatter keeps one inside a function, the README two)."""
    return re.sub(r"\n\n+", "\n\n", text)


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text("utf-8"), re.S)


@pytest.mark.parametrize(
    "readme", [*READMES, STORAGE_README, EVENTS_DOC], ids=lambda path: path.parent.name
)
def test_every_readme_block_is_embedded_here_verbatim(readme: Path) -> None:
    source = _squeeze(Path(__file__).read_text("utf-8"))
    blocks = python_blocks(readme)
    assert blocks, f"{readme} has no python block"
    for block in blocks:
        block = _squeeze(block)
        assert any(textwrap.indent(block, " " * width) in source for width in (0, 4, 8)), (
            f"a python block of {readme.relative_to(ROOT)} changed: update {Path(__file__).name}"
        )


def test_the_readme_programs_run(capsys: pytest.CaptureFixture[str]) -> None:
    readme_quick_look()
    runtime_readme()
    core_readme()
    asyncio.run(events_readme())
    printed = capsys.readouterr().out.splitlines()
    assert printed == ["compare-and-set", "Sent."]


async def test_the_storage_readme_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    models = ModelRegistry([ScriptedProvider(["Hi!"])], default_model="scripted:m")
    agent = AgentSpec(id="chat", name="Chat", instructions="Be brief.")
    output, waiting = await storage_readme(models, agent)
    assert (output, waiting) == ("Hi!", ())
    assert (tmp_path / "state" / "actoviq.db").exists()


async def test_the_events_doc_loop_prints_text_tools_and_what_a_run_waits_for(
    capsys: pytest.CaptureFixture[str],
) -> None:
    @tool(effect="read")
    def lookup(term: str) -> str:
        """Look a term up."""
        return term

    @tool(effect="side-effect", requires_approval=True)
    def publish(text: str) -> str:
        """Publish a text."""
        return text

    script = ScriptedProvider(
        [
            ScriptedTurn(tool_calls=[ToolCallItem(id="c1", name="lookup", input={"term": "x"})]),
            ScriptedTurn(
                text="Publishing.",
                stream_deltas=["Publish", "ing."],
                tool_calls=[ToolCallItem(id="c2", name="publish", input={"text": "x"})],
            ),
        ]
    )
    agent = AgentSpec(
        id="doc", name="Doc", instructions="x", model="scripted:m", tools=("lookup", "publish")
    )
    models = ModelRegistry([script])
    async with AgentRuntime(models=models, tools=[lookup, publish]) as runtime:
        handle = runtime.stream(agent, "go")
        await events_doc(handle)
        result = await handle.result()
    printed = capsys.readouterr().out
    assert result.status == "interrupted"
    assert "[lookup]" in printed
    assert "Publishing." in printed
    waiting = result.interruptions[0].id
    assert f'needs a decision: {waiting} Tool "publish" requires approval.' in printed
