"""``actoviq run`` and ``actoviq resume``: one run, streamed, through its approvals.

``run`` streams the answer; a tool call needing approval asks ``[y/N/always]`` on a terminal or
follows ``--approve`` / ``--reject`` / ``--interrupt``. A run left paused prints its id (the last
line of stdout) and exits 3; ``resume RUN_ID --approve CALL`` continues it from the checkpoint
store in any process, exactly once (a second resume of the same state is refused, exit 5).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, cast

from actoviq.cli.agents import resolve_agent, setup_agent
from actoviq.cli.approvals import ApprovalMode, Approver, describe_interruption, select_decisions
from actoviq.cli.config import load_settings
from actoviq.cli.driving import drive
from actoviq.cli.environment import CliEnvironment
from actoviq.cli.errors import CliNotFoundError, CliUsageError
from actoviq.cli.exit_codes import ExitCode
from actoviq.cli.output import Output
from actoviq.cli.render import sink_for
from actoviq.core import JsonObject, JsonValue, RunResult, find_json_violation
from actoviq.runtime import RunStateStaleError
from actoviq.surfaces import AgentRuntimeBridgeAdapter

if TYPE_CHECKING:
    from actoviq.cli.invocation import Invocation

__all__ = ["ask_terminal", "interactive", "report_result", "resume_command", "run_command"]


class _LeavePaused(Exception):
    """The user pressed Ctrl-C or Ctrl-D at an approval prompt."""


def interactive(output: Output) -> bool:
    """Whether to ask questions: a terminal on stdin and stderr, and no ``--json``."""
    return not output.json_mode and sys.stdin.isatty() and sys.stderr.isatty()


async def ask_terminal(question: str) -> str:
    """Read one answer on the terminal (the run is paused, so blocking is fine)."""
    import click

    try:
        answer: str = click.prompt(
            question, default="", show_default=False, err=True, prompt_suffix=""
        )
        return answer
    except (click.Abort, EOFError):
        raise _LeavePaused from None


class _TerminalApprover(Approver):
    async def decide(self, interruptions: Any) -> Any:
        try:
            return await super().decide(interruptions)
        except _LeavePaused:
            return None


def make_approver(mode: ApprovalMode | None, output: Output) -> Approver:
    """The approver for ``mode`` (None: ask on a terminal, else leave the run paused)."""
    if mode is None:
        mode = "ask" if interactive(output) else "interrupt"
    return _TerminalApprover(mode, ask=ask_terminal if mode == "ask" else None)


def _json_output(value: Any) -> JsonValue:
    """The output as the terminal shows it: JSON, through the surface redaction."""
    from actoviq.surfaces import redact_surface_value

    return redact_surface_value(value if find_json_violation(value) is None else repr(value))


def report_result(output: Output, result: RunResult[Any]) -> ExitCode:
    """Say how the run ended (a JSON document with ``--json``) and return the exit code."""
    code = {
        "completed": ExitCode.OK,
        "interrupted": ExitCode.INTERRUPTED,
        "cancelled": ExitCode.CANCELLED,
    }.get(result.status, ExitCode.FAILED)
    if output.json_mode:
        document: JsonObject = {
            "kind": "result",
            "runId": result.run_id,
            "agentId": result.agent_id,
            "status": result.status,
            "output": _json_output(result.output),
            "usage": cast(JsonObject, result.usage.to_json()),
            "interruptions": [
                {
                    "id": i.id,
                    "kind": i.kind,
                    "reason": i.reason,
                    **({"callId": i.call_id} if i.call_id else {}),
                    **({"toolName": i.tool_name} if i.tool_name else {}),
                }
                for i in result.interruptions
            ],
            "exitCode": int(code),
        }
        if result.session_id is not None:
            document["sessionId"] = result.session_id
        output.emit(document)
        return code
    if result.status == "interrupted":
        waiting = ", ".join(describe_interruption(i) for i in result.interruptions)
        first = result.interruptions[0] if result.interruptions else None
        call = (first.call_id or first.id) if first is not None else "CALL"
        output.note(f"Run {result.run_id} is waiting for a decision: {waiting}", "yellow")
        if first is not None and first.kind != "approval":
            # It may have run before a crash: only the user knows whether it took effect.
            hint = f"--failed {call}   (or --retry {call} to run it again)"
        else:
            hint = f"--approve {call}   (or --reject {call})"
        output.note(f"Continue it with: actoviq resume {result.run_id} {hint}", "yellow")
        output.stdout.write(result.run_id + "\n")
        output.stdout.flush()
    elif result.status == "cancelled":
        output.note(f"Run {result.run_id} was cancelled.", "yellow")
    return code


async def _prompt_text(prompt: str) -> str:
    if prompt != "-":
        return prompt
    import asyncio

    text = await asyncio.to_thread(sys.stdin.read)
    if not text.strip():
        raise CliUsageError("The prompt read from stdin is empty.")
    return text


async def run_command(
    invocation: Invocation,
    output: Output,
    *,
    agent: str,
    prompt: str,
    model: str | None,
    session: str | None,
    mode: ApprovalMode | None,
    show_reasoning: bool,
) -> int:
    """``actoviq run``: see the module docstring."""
    settings = load_settings(invocation.config, db=invocation.db)
    resolved = resolve_agent(settings, agent, model=model)
    setup = setup_agent(settings, resolved)
    text = await _prompt_text(prompt)
    approver = make_approver(mode, output)
    sink = sink_for(output, show_reasoning=show_reasoning or settings.show_reasoning)
    async with CliEnvironment(settings) as env:
        # Without a session nothing must be read before the first model call: the storage
        # opens when the run has something worth keeping (see actoviq.cli.checkpoints).
        runtime = env.runtime(setup, defer_checkpoints=session is None)
        bridge = AgentRuntimeBridgeAdapter(runtime, resolved.spec, target="cli")
        stream = bridge.stream(
            text, session_id=session, tenant_id=settings.tenant, metadata=resolved.metadata()
        )
        result = await drive(bridge, stream, sink, approver)
        return report_result(output, result)


async def resume_command(
    invocation: Invocation,
    output: Output,
    *,
    run_id: str,
    approve: tuple[str, ...],
    reject: tuple[str, ...],
    retry: tuple[str, ...],
    failed: tuple[str, ...],
    reason: str | None,
    agent: str | None,
    model: str | None,
    show_reasoning: bool,
) -> int:
    """``actoviq resume``: see the module docstring."""
    from actoviq.cli.agents import metadata_reference
    from actoviq.runtime import InterruptionDecision, SerializedRunState

    settings = load_settings(invocation.config, db=invocation.db)
    async with CliEnvironment(settings) as env:
        state = await (await env.checkpoints()).load(run_id)
        if state is None:
            raise CliNotFoundError(
                f"No checkpoint for run {run_id!r} in {settings.storage} (tenant "
                f"{settings.tenant!r}).",
                details={"runId": run_id},
            )
        parsed = SerializedRunState.from_json(state)
        recorded_agent, recorded_model = metadata_reference(parsed.metadata)
        resolved = resolve_agent(
            settings, agent or recorded_agent or parsed.agent_id, model=model or recorded_model
        )
        setup = setup_agent(settings, resolved)
        approver = make_approver(None, output)
        decisions: list[InterruptionDecision] = []
        if parsed.status == "interrupted":
            # Any other status is the runtime's to judge: a crashed (running) run resumes into
            # reconciliation, a completed or superseded one is refused (RUN_STATE_STALE, exit 5).
            decisions = select_decisions(
                parsed.interruptions,
                approve=approve,
                reject=reject,
                retry=retry,
                failed=failed,
                reason=reason,
            )
        if not decisions and parsed.status == "interrupted":
            asked = await approver.decide(parsed.interruptions)
            if asked is None:
                raise CliUsageError(
                    f"Run {run_id} waits for: "
                    + ", ".join(describe_interruption(i) for i in parsed.interruptions)
                    + ". Decide with --approve/--reject CALL (or --retry/--failed).",
                    details={"runId": run_id},
                )
            decisions = asked
        runtime = env.runtime(setup)
        bridge = AgentRuntimeBridgeAdapter(runtime, resolved.spec, target="cli")
        sink = sink_for(output, show_reasoning=show_reasoning or settings.show_reasoning)
        try:
            stream = bridge.resume(state, decisions)
            result = await drive(bridge, stream, sink, approver)
        except RunStateStaleError as error:
            _lease_hint(output, error)
            raise
        return report_result(output, result)


def _lease_hint(output: Output, error: RunStateStaleError) -> None:
    """When another process holds the run, say when its claim lapses if that process died."""
    import time

    expires = (error.details or {}).get("leaseExpiresAt")
    if error.reason != "claimed" or output.json_mode or not isinstance(expires, int | float):
        return
    left = max(0.0, expires / 1000 - time.time())
    output.note(
        f"If the process running it crashed, its claim lapses in {left:.0f} s; resume it then.",
        "yellow",
    )
