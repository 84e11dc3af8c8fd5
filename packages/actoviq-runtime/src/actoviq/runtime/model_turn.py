"""One turn's model call: request, routing, timeout, streaming, usage budget, afterModelResponse.

:func:`model_turn` is the model step of the turn loop in :mod:`actoviq.runtime.loop` (spec 03
§1.7): it emits ``model.requested``, calls the provider (through ``wrapModelCall`` when someone
listens), charges the usage against the run budget, runs ``afterModelResponse``, appends the output
to the transcript, prepares the turn's pending tool calls, saves, then emits ``model.completed``.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any, cast

from actoviq.core import JsonObject, ModelRefParts, RunError, ToolCallItem, Usage
from actoviq.providers import (
    ModelCallContext,
    ModelCallTimeoutError,
    ModelProvider,
    ModelRequest,
    ModelResponse,
    ModelStream,
    ModelToolDefinition,
)
from actoviq.runtime.handoff_tools import handoff_tool_definitions
from actoviq.runtime.middleware import MiddlewareInvariantViolationError, MiddlewareStage
from actoviq.runtime.model_settings import request_settings
from actoviq.runtime.stream_events import model_ref_json, stream_event_payload
from actoviq.runtime.stream_text import StreamTextHold

if TYPE_CHECKING:
    from actoviq.runtime.execution import RunExecution

__all__ = ["model_turn"]


async def model_turn(run: RunExecution) -> ModelResponse:
    """Call the model once for the next turn and record its response on ``run``.

    Raises:
        RunError: ``MODEL_REQUIRED`` (no model anywhere), ``TOOL_NOT_FOUND`` (an agent tool is
            not registered) or ``USAGE_LIMIT_EXCEEDED`` (the run budget is spent).
        MiddlewareInvariantViolationError: middleware returned something that is not a response.
        ModelCallTimeoutError: the model call outlived ``model_call_timeout_ms``.
    """
    model = run.agent.model if run.agent.model is not None else run.parts.default_model
    if model is None:
        raise RunError(
            f'Agent "{run.agent.id}" does not declare a model and no default model exists.',
            code="MODEL_REQUIRED",
            run_id=run.run_id,
            phase="model_call",
        )
    request = _model_request(run, model)
    if not run.skip_event():
        await run.emit("model.requested", {"turn": run.turn + 1, "model": model_ref_json(model)})
    pipeline = run.pipeline
    if pipeline.has(MiddlewareStage.WRAP_MODEL_CALL):
        response = await pipeline.run_wrap(
            MiddlewareStage.WRAP_MODEL_CALL,
            run.middleware_context(model_request=request),
            lambda ctx: _call_model(run, request),
            require_identity=False,
        )
        response = _check_response(run, response)
    else:
        response = await _call_model(run, request)
    usage = response.usage
    if not isinstance(usage, Usage):  # the provider reported none: count the request only
        usage = Usage(requests=1)
    elif usage.requests < 1:
        usage = Usage(**{**_usage_kwargs(usage), "requests": 1})
    run.usage.add(usage)
    total = run.usage.snapshot()
    limits = run.limits
    if (
        total.total_tokens > limits.max_total_tokens
        or total.output_tokens > limits.max_output_tokens
        or total.cost_usd > limits.max_cost_usd
    ):
        raise RunError(
            "Run usage budget exceeded.",
            code="USAGE_LIMIT_EXCEEDED",
            run_id=run.run_id,
            phase="model_call",
            details={
                "totalTokens": total.total_tokens,
                "outputTokens": total.output_tokens,
                "costUsd": total.cost_usd,
            },
        )
    if pipeline.has(MiddlewareStage.AFTER_MODEL_RESPONSE):
        response = _check_response(
            run,
            await pipeline.run_with_error_stage(
                MiddlewareStage.AFTER_MODEL_RESPONSE,
                run.middleware_context(model_request=request, model_response=response),
                lambda ctx: ctx.model_response,
            ),
        )
    run.last_response = response
    output = response.output
    run.turn += 1
    run.generated.extend(output)
    run.transcript.extend(output)
    calls = [item for item in output if isinstance(item, ToolCallItem)]
    if calls:
        from actoviq.runtime.tool_turn import prepare_pending

        run.pending = prepare_pending(run, calls)
    await run.save()
    if not run.skip_event():
        await run.emit(
            "model.completed",
            {
                "turn": run.turn,
                "finishReason": response.finish_reason,
                "usage": cast(
                    JsonObject,
                    (response.usage if isinstance(response.usage, Usage) else usage).to_json(),
                ),
            },
        )
    return response


def _model_request(run: RunExecution, model: str | ModelRefParts) -> ModelRequest:
    entry = run.entry
    tools = entry.tool_definitions
    if tools is None:
        tools = _tool_definitions(run)
        entry.tool_definitions = tools
    settings = run.settings
    if settings is None:
        return ModelRequest(
            model=model,
            input=run.transcript,
            tools=tools or None,
            tool_policy="auto" if tools else "none",
            output_schema=entry.output_schema,
            # No output-token limit: the run's ``max_output_tokens`` is a budget over the whole
            # run (checked after each call), not a per-request cap; a per-request limit comes
            # only from model settings the user sets (adapters needing one use a default).
        )
    return ModelRequest(
        model=model,
        input=run.transcript,
        tools=tools or None,
        output_schema=entry.output_schema,
        **request_settings(run, settings, bool(tools)),
    )


def _tool_definitions(run: RunExecution) -> tuple[ModelToolDefinition, ...]:
    definitions: list[ModelToolDefinition] = []
    registry = run.parts.tools
    for name in run.entry.tool_order:
        tool = registry.resolve(name)
        if tool is None:
            raise RunError(
                f'Agent "{run.agent.id}" references unregistered tool "{name}".',
                code="TOOL_NOT_FOUND",
                phase="before_run",
                details={"tool": name},
            )
        descriptor = tool.descriptor
        definitions.append(
            ModelToolDefinition(
                name=descriptor.name,
                description=descriptor.description or None,
                input_schema=descriptor.input.json_schema,
            )
        )
    if run.entry.handoffs:
        definitions.extend(handoff_tool_definitions(tuple(run.entry.handoffs.values())))
    return tuple(definitions)


def _check_response(run: RunExecution, response: object) -> ModelResponse:
    if not isinstance(response, ModelResponse):
        raise MiddlewareInvariantViolationError(
            MiddlewareStage.WRAP_MODEL_CALL,
            "Model middleware returned a response that violates the canonical response contract.",
            run_id=run.run_id,
        )
    return response


def _route(run: RunExecution, request: ModelRequest) -> ModelProvider:
    """The provider that owns the request's model (routed once per run)."""
    route = run.provider_route
    model = request.model
    if route is not None and route[0] is model:
        return route[1]
    provider = run.parts.models.provider_for(model)
    run.provider_route = (model, provider)
    return provider


async def _call_model(run: RunExecution, request: ModelRequest) -> ModelResponse:
    # The registry only routes here: the owning provider runs the one capability preflight
    # (every ModelProvider preflights in generate/stream), instead of registry + provider.
    provider = _route(run, request)
    now = time.time() * 1000
    timeout_ms = run.limits.model_call_timeout_ms
    deadline = now + timeout_ms
    context = ModelCallContext(
        run_id=run.run_id,
        trace_id=run.trace.trace_id,
        span_id=run.trace.span_id,
        # Cancellation reaches the provider as task cancellation (the run task is cancelled
        # on abort); also passing the run signal races the provider stream's own abort path.
        signal=None,
        deadline=min(run.deadline_ms, deadline),
    )
    if deadline >= run.deadline_ms:
        # The run deadline comes first and its timer is already armed: no second timer.
        return await _provider_call(run, provider, request, context)
    timer = run.timer
    task = asyncio.current_task()
    if timer is None or timer.busy or task is None:  # e.g. middleware calling twice at once
        try:
            async with asyncio.timeout(timeout_ms / 1000.0):
                return await _provider_call(run, provider, request, context)
        except TimeoutError as error:
            raise ModelCallTimeoutError() from error
    # The run's timer keeps the call's timeout (actoviq.runtime.run_timer): asyncio.timeout's
    # semantics (an expiry becomes the typed timeout unless another cancellation is pending).
    pending = task.cancelling()
    timer.start_call(task)
    try:
        return await _provider_call(run, provider, request, context)
    except asyncio.CancelledError:
        if timer.end_call() and task.cancelling() <= pending:
            raise ModelCallTimeoutError() from TimeoutError()
        raise
    except TimeoutError as error:
        raise ModelCallTimeoutError() from error
    finally:
        timer.end_call()


async def _provider_call(
    run: RunExecution, provider: ModelProvider, request: ModelRequest, context: ModelCallContext
) -> ModelResponse:
    if not run.streaming:
        return await provider.generate(request, context)
    stream = provider.stream(request, context)
    emit = run.emit
    policy = run.parts.redaction
    if policy is not None and policy.scan_text:
        return await _segmented_stream(run, stream, policy.strip_stack_traces)
    async with stream:
        async for event in stream:
            kind, data = stream_event_payload(event)
            await emit(kind, data)
        return await stream.final_response()


async def _segmented_stream(
    run: RunExecution, stream: ModelStream, stack_frames: bool
) -> ModelResponse:
    """Text-scanned events: text deltas re-cut so no secret is scanned in two halves."""
    emit = run.emit
    hold = StreamTextHold(stack_frames=stack_frames)
    async with stream:
        async for event in stream:
            kind, data = stream_event_payload(event)
            if kind == "model.response.completed":
                for held_kind, held in hold.flush():
                    await emit(held_kind, held)
            else:
                taken = hold.take(kind, data)
                if taken is None:
                    continue
                data = taken
            await emit(kind, data)
        for held_kind, held in hold.flush():
            await emit(held_kind, held)
        return await stream.final_response()


def _usage_kwargs(usage: Usage) -> dict[str, Any]:
    return {
        "requests": usage.requests,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
        "audio_input_tokens": usage.audio_input_tokens,
        "audio_output_tokens": usage.audio_output_tokens,
        "cost_usd": usage.cost_usd,
    }
