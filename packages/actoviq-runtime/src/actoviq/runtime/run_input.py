"""The start of a run: prepareInput, session load, instructions, input guardrails, beforeRun.

These are the steps of :meth:`RunExecution.main <actoviq.runtime.loop.RunExecution.main>` before
the turn loop (spec 03 §1.7 with the D5 fixes). A resumed run only re-checks its session
revision; a fresh one builds its transcript and saves the first checkpoint.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from actoviq.core import CanonicalItem, RunError, TextItem
from actoviq.runtime.failures import persistence_error
from actoviq.runtime.middleware import MiddlewareInvariantViolationError, MiddlewareStage

if TYPE_CHECKING:
    from actoviq.runtime.execution import RunExecution

__all__ = ["load_session", "prepare_input", "start_transcript"]


async def prepare_input(run: RunExecution) -> list[CanonicalItem]:
    """The run input after the ``prepareInput`` stage (which must return canonical items).

    Raises:
        MiddlewareInvariantViolationError: middleware returned something else.
    """
    if not run.pipeline.has(MiddlewareStage.PREPARE_INPUT):
        return list(run.input)  # nobody listens: not even a stage call
    original = tuple(run.input)
    prepared = await run.stage(
        MiddlewareStage.PREPARE_INPUT,
        lambda ctx: ctx.input,
        lambda: original,
        input=original,
    )
    if prepared is original:
        return list(original)
    return _check_items(prepared, MiddlewareStage.PREPARE_INPUT, run.run_id)


async def load_session(
    run: RunExecution, prepared: list[CanonicalItem], fresh: bool
) -> list[CanonicalItem]:
    """Load the run's session: a fresh run prepends its history, a resumed one checks its revision.

    With ``session_history="provided"`` the history is not prepended and the input is not
    appended at the end (the caller passed the conversation itself).

    Raises:
        RunError: ``SESSION_REVISION_CONFLICT`` or ``SESSION_SERVICE_REQUIRED``.
    """
    assert run.session_id is not None
    store = await run.session_store()
    try:
        loaded = await run.bounded(
            store.load(tenant_id=run.tenant_id or "default", session_id=run.session_id)
        )
    except Exception as error:
        raise persistence_error("session.load", error, run.run_id) from error
    if not fresh:
        if run.turn > 0 and loaded.revision != run.expected_revision:
            raise _revision_conflict(run.run_id, run.expected_revision, loaded.revision)
        return prepared
    if run.expected_revision is not None and run.expected_revision != loaded.revision:
        raise _revision_conflict(run.run_id, run.expected_revision, loaded.revision)
    run.expected_revision = loaded.revision
    if run.provided_history:
        # The input is the history the model sees; the session already holds the conversation,
        # so nothing of the input is appended (state.input = the items this run will append).
        run.input = []
    await run.save()
    await run.emit(
        "session.loaded",
        {
            "sessionId": run.session_id,
            "revision": loaded.revision,
            "itemCount": len(loaded.items),
        },
    )
    if run.provided_history:
        return prepared
    return [*loaded.items, *prepared]


async def start_transcript(run: RunExecution, prepared: list[CanonicalItem]) -> None:
    """Prepend the instructions, check the input guardrails, save, then run ``beforeRun``.

    Raises:
        RunError: ``INSTRUCTIONS_INVALID``, ``GUARDRAIL_INVALID`` or ``INPUT_GUARDRAIL_REJECTED``.
    """
    instructions = run.agent.instructions
    system = run.entry.system_item
    if system is not None:
        text = ""  # the cached system message of a static instruction
        prepared = [system, *prepared]
    elif isinstance(instructions, str):
        text = instructions
    else:
        value: Any = instructions(run.run_context)
        if inspect.isawaitable(value):
            value = await run.bounded(value)
        if not isinstance(value, str):
            raise RunError(
                "Agent instructions must resolve to a string.",
                code="INSTRUCTIONS_INVALID",
                run_id=run.run_id,
                phase="prepare_input",
            )
        text = value
    if text:
        prepared = [TextItem(role="system", text=text), *prepared]
    for guardrail in run.agent.input_guardrails:
        decision = await run.guardrail(guardrail.evaluate(run.run_context, tuple(prepared)))
        if not decision.allowed:
            raise RunError(
                decision.reason or f"Input guardrail {guardrail.id} rejected input.",
                code="INPUT_GUARDRAIL_REJECTED",
                run_id=run.run_id,
                phase="prepare_input",
            )
    run.transcript = prepared
    await run.save()
    if run.pipeline.has(MiddlewareStage.BEFORE_RUN):
        await run.stage(
            MiddlewareStage.BEFORE_RUN, lambda ctx: None, lambda: None, input=tuple(prepared)
        )


def _revision_conflict(run_id: str, expected: str | None, actual: str) -> RunError:
    """The typed error of a session whose revision is not the one the run expects."""
    return RunError(
        f"Session revision conflict: expected {expected}, found {actual}.",
        code="SESSION_REVISION_CONFLICT",
        run_id=run_id,
        phase="runtime",
        details={"expectedRevision": expected, "actualRevision": actual},
    )


def _check_items(value: object, stage: MiddlewareStage, run_id: str) -> list[CanonicalItem]:
    from actoviq.core import ITEM_TYPES, PreservedItem

    if isinstance(value, list | tuple):
        items = list(cast(Sequence[object], value))
        if all(isinstance(item, (*ITEM_TYPES.values(), PreservedItem)) for item in items):
            return cast(list[CanonicalItem], items)
    raise MiddlewareInvariantViolationError(
        stage, f"{stage.value} middleware must return canonical input items.", run_id=run_id
    )
