"""A model that reuses a tool call id in a later turn (some number their calls per turn): after an
approval, the resumed run keeps the new call's result instead of taking it for the earlier one's,
so the model sees it and the side effect runs exactly once per call."""

from __future__ import annotations

from actoviq.core import AgentSpec, ToolCallItem, ToolResultItem
from actoviq.providers import ModelRegistry, ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import AgentRuntime, InterruptionDecision, RuntimeServices, tool


async def test_an_approved_call_reusing_an_earlier_call_id_keeps_its_result() -> None:
    effects: list[int] = []
    seen: list[list[str]] = []

    @tool(effect="side-effect", requires_approval=True)
    def charge(amount: int) -> str:
        """Charge the card."""
        effects.append(amount)
        return f"receipt-{amount}"

    def answer(request: ModelRequest) -> ScriptedTurn:
        results = [item for item in request.input if isinstance(item, ToolResultItem)]
        seen.append([str(result.output) for result in results])
        if len(results) < 2:
            call = ToolCallItem(id="call-1", name="charge", input={"amount": 7 + len(results)})
            return ScriptedTurn(tool_calls=[call])
        return ScriptedTurn(text="done")

    models = ModelRegistry([ScriptedProvider([answer], id="scripted", repeat_last=True)])
    agent = AgentSpec(
        id="biller", name="Biller", instructions="Charge.", model="scripted:m", tools=["charge"]
    )
    async with AgentRuntime(models=models, tools=[charge], services=RuntimeServices()) as runtime:
        result = await runtime.run(agent, "charge twice")
        for _ in range(2):
            assert result.status == "interrupted"
            assert result.state is not None
            decisions = [InterruptionDecision.approve(entry.id) for entry in result.interruptions]
            async with runtime.resume(result.state, decisions) as handle:
                result = await handle.result()
    assert result.status == "completed" and result.output == "done"
    assert effects == [7, 8]
    assert seen[-1] == ["receipt-7", "receipt-8"]
