"""A retry policy that no run could accept is refused where the child is declared.

Before: ``AgentTool``, ``agent_workflow_node`` and ``HandoffSpec`` accepted ``retry-safe`` for a
side-effect child (or for an idempotent write with no key) and raised ``ChildPolicyError`` only
when a model first called the tool or the graph reached the node, mid-run.
"""

from __future__ import annotations

from typing import Any

import pytest

from actoviq.core import AgentSpec
from actoviq.orchestration import (
    AgentTool,
    ChildFailurePolicy,
    ChildPolicyError,
    ChildRunner,
    HandoffSpec,
    agent_workflow_node,
)
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider
from actoviq.runtime import AgentRuntime

WORKER: AgentSpec[Any, Any] = AgentSpec(id="worker", name="Worker", instructions="x", model="s:m")
RETRY = ChildFailurePolicy.retry_safe(3)


def _key(_: object) -> str:
    return "k"


@pytest.fixture
async def runner() -> Any:
    async with AgentRuntime(models=ModelRegistry([ScriptedProvider(["ok"], id="s")])) as runtime:
        yield ChildRunner(runtime)


@pytest.mark.parametrize(
    ("effect", "keyed"), [(None, False), ("side-effect", True), ("idempotent-write", False)]
)
async def test_unretryable_declarations_are_refused(
    runner: ChildRunner, effect: Any, keyed: bool
) -> None:
    key = _key if keyed else None
    with pytest.raises(ChildPolicyError):
        AgentTool(WORKER, runner, failure_policy=RETRY, effect=effect, idempotency_key=key)
    with pytest.raises(ChildPolicyError):
        agent_workflow_node(
            "n",
            runner,
            WORKER,
            input=lambda ctx: "go",
            failure_policy=RETRY,
            effect=effect,
            idempotency_key=key,
        )


@pytest.mark.parametrize(("effect", "keyed"), [("read", False), ("idempotent-write", True)])
async def test_retryable_declarations_are_accepted(
    runner: ChildRunner, effect: Any, keyed: bool
) -> None:
    key = _key if keyed else None
    tool = AgentTool(WORKER, runner, failure_policy=RETRY, effect=effect, idempotency_key=key)
    assert tool.failure_policy is RETRY
    node = agent_workflow_node(
        "n",
        runner,
        WORKER,
        input=lambda ctx: "go",
        failure_policy=RETRY,
        effect=effect,
        idempotency_key=key,
    )
    assert node.id == "n"


def test_a_retry_safe_handoff_is_refused() -> None:
    with pytest.raises(ChildPolicyError):
        HandoffSpec(id="to_worker", target=WORKER, failure_policy=RETRY)
    assert HandoffSpec(id="to_worker", target=WORKER).failure_policy is None
