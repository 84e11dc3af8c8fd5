"""The end of a completed run: finalizeOutput, output guardrails, session commit, afterRun.

:func:`finalize` turns the last model response into the run's output (structured output parsed
by the agent's schema, or the assistant text), checks the output guardrails, appends the run's
items to its session (CAS on the revision loaded at the start), runs ``afterRun``, then saves,
emits ``run.completed`` and deletes the checkpoint.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from actoviq.core import JsonObject, RunError, RunResult, TextItem
from actoviq.providers import ModelResponse
from actoviq.runtime.failures import persistence_error
from actoviq.runtime.middleware import MiddlewareInvariantViolationError, MiddlewareStage
from actoviq.runtime.run_outcomes import run_result
from actoviq.runtime.stores import StorageConflictError
from actoviq.runtime.structured_output import check_output, output_error

if TYPE_CHECKING:
    from actoviq.runtime.execution import RunExecution

__all__ = ["default_output", "finalize", "hand_off"]


def default_output(run: RunExecution, response: ModelResponse) -> Any:
    """The output without ``finalizeOutput`` middleware: validated structured output, or the text.

    Raises:
        RunError: ``STRUCTURED_OUTPUT_MISSING`` (the agent has a schema, the model gave no JSON)
            or ``STRUCTURED_OUTPUT_INVALID`` (it does not match the schema or does not parse),
            once the agent's ``output_retries`` are spent.
    """
    if run.agent.output is not None:
        check = check_output(run, response)
        if not check.valid:
            raise output_error(run, check)
        return check.value
    return _assistant_text(response)


def _assistant_text(response: ModelResponse) -> str:
    return "".join(
        item.text
        for item in response.output
        if isinstance(item, TextItem) and item.role == "assistant"
    )


async def finalize(run: RunExecution, response: ModelResponse) -> RunResult[Any]:
    """Complete the run from its last model response.

    Raises:
        RunError: ``OUTPUT_GUARDRAIL_REJECTED``, ``GUARDRAIL_INVALID`` or a session failure.
        MiddlewareInvariantViolationError: ``afterRun`` did not return a :class:`RunResult`.
    """
    if run.pipeline.has(MiddlewareStage.FINALIZE_OUTPUT):
        output = await run.stage(
            MiddlewareStage.FINALIZE_OUTPUT,
            lambda ctx: default_output(run, response),
            lambda: default_output(run, response),
            model_response=response,
        )
    else:
        output = default_output(run, response)
    for guardrail in run.agent.output_guardrails:
        decision = await run.guardrail(guardrail.evaluate(run.run_context, output))
        if not decision.allowed:
            raise RunError(
                decision.reason or f"Output guardrail {guardrail.id} rejected output.",
                code="OUTPUT_GUARDRAIL_REJECTED",
                run_id=run.run_id,
                phase="finalize_output",
            )
    if run.session_id is not None:
        await _commit_session(run, run.session_id)
    return await _complete(run, run_result(run, "completed", output))


async def hand_off(run: RunExecution, response: ModelResponse | None) -> RunResult[Any]:
    """Complete the run because the model handed off (``result.handoff`` set).

    ``finalizeOutput`` and the output guardrails do not run (the target agent produces the
    answer); the output is the assistant text of the handoff turn. The session is committed and
    ``afterRun`` runs as for any completed run; ``handoff.requested`` precedes ``run.completed``.
    """
    handoff = run.handoff
    assert handoff is not None
    output = _assistant_text(response) if response is not None else ""
    if run.session_id is not None:
        await _commit_session(run, run.session_id)
    metadata = handoff.metadata or {}
    requested: JsonObject = {
        "handoffId": metadata.get("handoffId"),
        "callId": handoff.id,
        "sourceAgentId": run.agent.id,
        "targetAgentId": handoff.target_agent_id,
    }
    return await _complete(
        run, run_result(run, "completed", output, handoff=handoff), before=requested
    )


async def _complete(
    run: RunExecution, result: RunResult[Any], *, before: JsonObject | None = None
) -> RunResult[Any]:
    if run.pipeline.has(MiddlewareStage.AFTER_RUN):
        replaced = await run.pipeline.run_with_error_stage(
            MiddlewareStage.AFTER_RUN,
            run.middleware_context(result=result),
            lambda ctx: ctx.result,
        )
        if not isinstance(replaced, RunResult):
            raise MiddlewareInvariantViolationError(
                MiddlewareStage.AFTER_RUN,
                "afterRun middleware must return a RunResult.",
                run_id=run.run_id,
            )
        result = cast(RunResult[Any], replaced)
    run.status = "completed"
    run.terminal = True
    await run.save()  # the commit point: from here on the run has completed
    store = run.parts.checkpoint_store
    if store is None and before is None and run.skip_event():
        return result  # run.completed is counted: nobody could see it
    data: JsonObject = {"status": result.status, "usage": cast(JsonObject, result.usage.to_json())}
    if store is not None and run.persistence.claiming is None:
        # A claiming store keeps the completed record: it is what refuses a late resume. Other
        # stores delete (or tombstone) it; a failed delete cannot undo the completion, so
        # run.completed says it failed.
        try:
            await run.bounded(store.delete(run.run_id))
        except Exception as error:
            failure = persistence_error("checkpoint.delete", error, run.run_id)
            data["checkpoint"] = {"deleted": False, "error": cast(JsonObject, failure.to_json())}
    if before is not None:
        await run.emit("handoff.requested", before, terminal=True)
    await run.emit("run.completed", data, terminal=True)
    return result


async def _commit_session(run: RunExecution, session_id: str) -> None:
    store = await run.session_store()
    try:
        revision = await run.bounded(
            store.append(
                tenant_id=run.tenant_id or "default",
                session_id=session_id,
                items=[*run.input, *run.generated],
                expected_revision=run.expected_revision or "0",
            )
        )
    except StorageConflictError:
        raise  # SESSION_REVISION_CONFLICT: already typed, and it names the step
    except Exception as error:
        raise persistence_error("session.append", error, run.run_id) from error
    run.expected_revision = revision
    await run.save()
    await run.emit("session.committed", {"sessionId": session_id, "revision": revision})
