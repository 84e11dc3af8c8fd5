"""A workflow graph with a bounded review-revise loop, run durably on SQLite.

``draft`` writes a first version; ``review`` is a loop node whose body is ``revise -> critique``:
it runs round after round until the critic approves, at most three rounds; ``publish`` takes the
approved text. The run is durable (``DurableGraphRunner``): every node execution, loop rounds
included, is stored with its status and output, so running the same ``run_id`` again (after a
crash, or by mistake) runs nothing that already completed.

Offline (``ACTOVIQ_OFFLINE=1`` or no API key) a scripted writer and critic play the models (the
writer adds a sentence per round, the critic approves three sentences); with ``OPENAI_API_KEY``
or ``ANTHROPIC_API_KEY`` real models write and judge.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path
from typing import Any

from actoviq.core import AgentSpec, TextItem
from actoviq.orchestration import (
    ChildRunner,
    DurableGraphRunner,
    LoopRound,
    NodeContext,
    WorkflowEdge,
    WorkflowGraph,
    WorkflowNode,
    agent_workflow_node,
    loop_node,
)
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider
from actoviq.runtime import AgentRuntime
from actoviq.storage.sqlite import SqliteStorage

MODEL_CALLS: list[str] = []


def scripted(request: ModelRequest) -> Any:
    """Offline: the writer adds a sentence per round; the critic approves three sentences."""
    texts = [i.text for i in request.input if isinstance(i, TextItem)]
    system, last = texts[0], texts[-1]
    MODEL_CALLS.append(system.split("]")[0] + "]")
    if system.startswith("[critic]"):
        return "APPROVE" if last.count(".") >= 3 else "REVISE: add an example."
    return (last.split("Draft: ", 1)[-1] + " More detail.").strip()


def models() -> tuple[ModelRegistry, str, str]:
    """A real provider when a key is set (and not offline), else the scripted one."""
    offline = os.environ.get("ACTOVIQ_OFFLINE") == "1"
    if not offline and os.environ.get("OPENAI_API_KEY"):
        from actoviq.providers.openai import OpenAIResponsesProvider

        name = os.environ.get("ACTOVIQ_OPENAI_MODEL", "gpt-4.1-mini")
        return ModelRegistry([OpenAIResponsesProvider()]), f"openai-responses:{name}", name
    if not offline and os.environ.get("ANTHROPIC_API_KEY"):
        from actoviq.providers.anthropic import AnthropicProvider

        name = os.environ.get("ACTOVIQ_ANTHROPIC_MODEL", "claude-3-5-haiku-latest")
        return ModelRegistry([AnthropicProvider()]), f"anthropic:{name}", name
    return ModelRegistry([ScriptedProvider([scripted], repeat_last=True)]), "scripted:m", "offline"


def build_graph(runner: ChildRunner, model: str) -> WorkflowGraph:
    """draft -> review (loop: revise -> critique, until approved, <= 3 rounds) -> publish."""
    writer: AgentSpec[Any, Any] = AgentSpec(
        id="writer", name="Writer", model=model,
        instructions="[writer] Improve the draft; answer with the new text only.",
    )  # fmt: skip
    critic: AgentSpec[Any, Any] = AgentSpec(
        id="critic", name="Critic", model=model,
        instructions="[critic] Answer APPROVE, or REVISE: with one concrete request.",
    )  # fmt: skip

    def latest(ctx: NodeContext) -> str:
        previous = ctx.input["previous"]
        return str(previous["revise"]) if previous else str(ctx.input["input"])

    revise = agent_workflow_node(
        "revise", runner, writer, output="value", input=lambda ctx: f"Draft: {latest(ctx)}"
    )
    critique = agent_workflow_node(
        "critique", runner, critic, output="value",
        input=lambda ctx: f"Review this text: {ctx.outputs['revise']}",
    )  # fmt: skip
    body = WorkflowGraph(
        nodes=[revise, critique], edges=[WorkflowEdge(source="revise", target="critique")]
    )

    def approved(round: LoopRound) -> bool:
        verdict = str(round.outputs["critique"])
        print(f"  round {round.iteration + 1}: {verdict}")
        return verdict.upper().startswith("APPROVE")

    def start_from_draft(ctx: NodeContext, iteration: int, previous: Any) -> Any:
        outputs = None if previous is None else dict(previous.outputs)
        return {"input": ctx.outputs["draft"], "iteration": iteration, "previous": outputs}

    review = loop_node("review", body, until=approved, max_iterations=3, prepare=start_from_draft)
    draft = WorkflowNode(id="draft", execute=lambda ctx: f"CAS compares, then sets: {ctx.input}.")
    publish = WorkflowNode(id="publish", reduce=lambda ctx: ctx.inputs["review"].outputs["revise"])
    return WorkflowGraph(
        nodes=[draft, review, publish],
        edges=[
            WorkflowEdge(source="draft", target="review"),
            WorkflowEdge(source="review", target="publish"),
        ],
    )


async def main() -> None:
    registry, model, label = models()
    print(f"provider: {label}")
    with tempfile.TemporaryDirectory() as folder:
        async with (
            await SqliteStorage.open(Path(folder) / "runs.db") as storage,
            AgentRuntime(models=registry) as runtime,
        ):
            runner = ChildRunner(runtime)
            graph = build_graph(runner, model)
            durable = DurableGraphRunner(storage.workflows)
            effects: dict[str, Any] = {"draft": "read", "publish": "read"}
            async with runner.open_root("newsletter") as root:
                result = await durable.run(
                    graph, graph_id="newsletter", run_id="issue-42", input="a short note",
                    scope=root, effects=effects, default_effect="read",
                )  # fmt: skip
            loop = result.outputs["review"]
            print(f"rounds: {loop.iterations}, approved: {loop.converged}")
            print(f"published: {result.outputs['publish']}")
            for node in await durable.nodes("issue-42"):
                print(f"  stored {node.node_id}#{node.iteration}: {node.status}")
            calls = len(MODEL_CALLS)
            async with runner.open_root("newsletter-again") as root:
                again = await durable.run(
                    graph, graph_id="newsletter", run_id="issue-42", scope=root
                )
            print(f"second call: same text {again.outputs['publish'] == result.outputs['publish']}"
                  f", model calls {len(MODEL_CALLS) - calls}")  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())
