"""Tool calls as DBOS steps, with our exactly-once-or-reconcile rule for side effects.

Inside a durable run every tool call is a DBOS step named ``actoviq.tool:<name>``; DBOS records
its output (wire JSON) and a replayed workflow returns the record instead of calling the tool.

* ``read`` and ``idempotent-write`` tools may be retried by DBOS step retries
  (:class:`StepRetry`); an idempotent write sees the same ``ctx.idempotency_key`` every time.
* ``side-effect`` tools are never retried. Before one runs, a marker step records the attempt;
  if the process dies inside the tool, the replay finds the marker of an earlier attempt and no
  recorded output, so the call is **not** run again: it settles as a failure of kind
  ``cancelled``, which the runtime turns into the ``unknown`` pending state and a
  ``reconciliation`` interruption (decide it with ``committed``/``failed``), recorded too.

Outside a DBOS workflow the wrapped tool runs exactly like the original.
"""

from __future__ import annotations

import asyncio
import inspect
import uuid
from collections.abc import Awaitable, Iterable
from typing import Any, cast

import attrs

from actoviq.core import JsonObject, JsonValue, ToolExecutionError, ToolFailure, from_json, to_json
from actoviq.dbos.models import in_workflow
from actoviq.runtime import (
    RuntimeTool,
    ToolArtifact,
    ToolExecutionContext,
    ToolInterruptionRequiredError,
    ToolOutput,
    ToolRegistry,
    ToolRetry,
    ToolSuspension,
    runs_on_loop,
    to_tool_json,
)
from dbos import DBOS, StepOptions

__all__ = [
    "TOOL_START_STEP_NAME",
    "TOOL_STEP_PREFIX",
    "DurableToolExecute",
    "StepRetry",
    "durable_tools",
]

TOOL_STEP_PREFIX = "actoviq.tool:"
"""DBOS step name prefix of a tool call (``actoviq.tool:<tool name>``)."""
TOOL_START_STEP_NAME = "actoviq.tool-start"
"""DBOS step name of the marker recorded before a side-effect tool runs."""

# Exceptions that are the tool's answer (not a transient failure): never retried by DBOS.
_CONTROL = (ToolRetry, ToolSuspension, ToolInterruptionRequiredError, ToolExecutionError)


@attrs.frozen(kw_only=True)
class StepRetry:
    """DBOS step retries for ``read`` and ``idempotent-write`` tools (never side effects).

    Attributes:
        max_attempts: attempts in all (>= 1; 1 means no retry).
        interval_seconds: the first delay between attempts.
        backoff_rate: the factor applied to the delay after each failed attempt.
    """

    max_attempts: int = attrs.field(default=3, validator=attrs.validators.ge(1))
    interval_seconds: float = attrs.field(default=0.5, validator=attrs.validators.ge(0))
    backoff_rate: float = attrs.field(default=2.0, validator=attrs.validators.ge(1))


def _is_transient(error: BaseException) -> bool:
    return not isinstance(error, _CONTROL)


def _output_json(result: object) -> JsonObject:
    if isinstance(result, ToolOutput):
        record: JsonObject = {"value": result.json_value()}
        if result.artifacts:
            record["artifacts"] = [cast(JsonValue, to_json(a)) for a in result.artifacts]
        if result.model_text is not None:
            record["modelText"] = result.model_text
        return record
    return {"value": cast(JsonValue, to_tool_json(result))}


def _output_from(record: JsonObject) -> ToolOutput:
    artifacts = record.get("artifacts")
    model_text = record.get("modelText")
    return ToolOutput(
        value=record.get("value"),
        artifacts=tuple(
            from_json(ToolArtifact, entry) for entry in cast(list[Any], artifacts or [])
        ),
        model_text=model_text if isinstance(model_text, str) else None,
    )


class DurableToolExecute:
    """The ``execute`` of a durable tool: the original call as a recorded DBOS step.

    Args:
        tool: the original tool.
        retry: step retries for read / idempotent-write tools (None: no retry).
    """

    __slots__ = ("_retry", "_tool")

    def __init__(self, tool: RuntimeTool, retry: StepRetry | None) -> None:
        self._tool = tool
        self._retry = retry

    @property
    def tool(self) -> RuntimeTool:
        """The original tool."""
        return self._tool

    async def _call(self, ctx: ToolExecutionContext, args: Any) -> object:
        execute = self._tool.execute
        if runs_on_loop(execute):
            result = execute(ctx, args)
        else:
            result = await asyncio.to_thread(execute, ctx, args)
        if inspect.isawaitable(result):
            result = await cast(Awaitable[object], result)
        return result

    async def __call__(self, ctx: ToolExecutionContext, args: Any) -> object:
        """Run the call: directly outside a workflow, as recorded DBOS step(s) inside one."""
        if not in_workflow():
            return await self._call(ctx, args)
        descriptor = self._tool.descriptor
        name = f"{TOOL_STEP_PREFIX}{descriptor.name}"
        if descriptor.effect == "side-effect":
            return await self._side_effect(ctx, args, name)
        options: StepOptions = {"name": name}
        retry = self._retry
        if retry is not None and retry.max_attempts > 1:
            options.update(
                retries_allowed=True,
                max_attempts=retry.max_attempts,
                interval_seconds=retry.interval_seconds,
                backoff_rate=retry.backoff_rate,
                should_retry=_is_transient,
            )

        async def step() -> JsonObject:
            return _output_json(await self._call(ctx, args))

        return _output_from(await DBOS.run_step_async(options, step))

    async def _side_effect(self, ctx: ToolExecutionContext, args: Any, name: str) -> object:
        attempt = uuid.uuid4().hex  # this execution's nonce: a replay draws another one
        marker = await DBOS.run_step_async({"name": TOOL_START_STEP_NAME}, lambda: attempt)
        crashed_inside = marker != attempt

        async def step() -> JsonObject:
            if crashed_inside:
                # An earlier attempt started this call and never recorded an outcome: it may
                # have had its effect. Record that instead of running it again.
                return {"unknown": True}
            return _output_json(await self._call(ctx, args))

        record = await DBOS.run_step_async({"name": name}, step)
        if record.get("unknown") is True:
            tool_name = self._tool.descriptor.name
            raise ToolExecutionError(
                ToolFailure(
                    kind="cancelled",
                    tool_name=tool_name,
                    call_id=ctx.call_id,
                    message=(
                        f'Tool "{tool_name}" was interrupted by a process crash and may have '
                        "committed; reconcile it."
                    ),
                )
            )
        return _output_from(record)


def durable_tools(
    tools: ToolRegistry | Iterable[RuntimeTool], *, retry: StepRetry | None = None
) -> ToolRegistry:
    """A registry with every tool's ``execute`` wrapped in :class:`DurableToolExecute`.

    Descriptors (name, schema, effect, approval gate) are unchanged, so the agent digest and the
    runtime's policy checks see the same tools.
    """
    wrapped: list[RuntimeTool] = []
    for tool in tools:
        if isinstance(tool.execute, DurableToolExecute):
            wrapped.append(tool)
        else:
            wrapped.append(
                RuntimeTool(descriptor=tool.descriptor, execute=DurableToolExecute(tool, retry))
            )
    return ToolRegistry(wrapped)
