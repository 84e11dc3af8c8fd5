"""The trusted in-process executor (spec 04 §2.5, §8.3 item 25).

**No sandbox.** The script runs with ``exec`` inside the host process, with the host's privileges,
environment, files and network. Use it only for code you would import yourself; it exists so that
trusted workflows need no subprocess. It must be chosen explicitly: the router has no default
trusted executor.

Deadlines: an ``async`` script is cancelled at its deadline or when the signal fires. A synchronous
``main`` (or a CPU-bound stretch of an async one) cannot be interrupted in-process; it is reported
as timed out only once it returns. Use the local or bubblewrap executor if that matters.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType, TracebackType
from typing import cast

from actoviq.core import AbortController, JsonValue, JsonValueError
from actoviq.workflow._boundary import workflow_boundary
from actoviq.workflow._process import monotonic_ms
from actoviq.workflow.capabilities import (
    clone_json_within,
    invoke_capability,
    resolve_capability_handlers,
    resolve_requested_capabilities,
)
from actoviq.workflow.errors import (
    WorkflowAbortedError,
    WorkflowConfigurationError,
    WorkflowExecutionError,
    WorkflowExecutorError,
    WorkflowMessageLimitError,
    WorkflowOutputLimitError,
    WorkflowTimeoutError,
    WorkflowTrustTierError,
)
from actoviq.workflow.limits import (
    WorkflowExecutorLimits,
    check_option,
    resolve_request_timeout_ms,
)
from actoviq.workflow.types import (
    CapabilityCallContext,
    CapabilityHandler,
    WorkflowExecutionRequest,
    WorkflowExecutionResult,
)

__all__ = ["TrustedInProcessWorkflowExecutor"]

CapabilityFunction = Callable[..., Awaitable[JsonValue]]


class TrustedInProcessWorkflowExecutor:
    r"""Run ``trust="trusted"`` scripts in this process. **Not a sandbox** (see module docs).

    Args:
        limits: protocol limits (§2.3); ``max_message_bytes`` bounds the source, the input and
            capability values, ``max_output_bytes`` the result.
        capabilities: host handlers a run may be granted by name.

    Example:
        >>> import asyncio
        >>> from actoviq.workflow import TrustedWorkflowRequest
        >>> source = "def main(context): return {'echoed': context['input']}"
        >>> result = asyncio.run(
        ...     TrustedInProcessWorkflowExecutor().execute(
        ...         TrustedWorkflowRequest(source=source, input="ok")
        ...     )
        ... )
        >>> result.value
        {'echoed': 'ok'}
    """

    kind: str = "trusted-in-process"

    def __init__(
        self,
        *,
        limits: WorkflowExecutorLimits | None = None,
        capabilities: Mapping[str, CapabilityHandler] | None = None,
    ) -> None:
        check_option(limits, WorkflowExecutorLimits, "limits")
        self._limits = limits or WorkflowExecutorLimits()
        self._handlers = resolve_capability_handlers(capabilities)
        self._closed = False

    async def execute(self, request: WorkflowExecutionRequest) -> WorkflowExecutionResult:
        """Run a trusted request in-process.

        Raises:
            WorkflowTrustTierError: ``trust`` is not ``"trusted"``.
            WorkflowExecutionError: empty or oversized source, the script raised, or the output
                is not JSON.
            WorkflowTimeoutError: the deadline passed.
            WorkflowAbortedError: the signal fired.
            WorkflowOutputLimitError: the result is larger than ``maxOutputBytes``.
            WorkflowCapabilityNotAllowedError: a requested capability is not configured.
        """
        started = monotonic_ms()
        if self._closed:
            raise WorkflowConfigurationError(f"The {self.kind} executor is closed.")
        if request.trust != "trusted":
            raise WorkflowTrustTierError("trusted", request.trust)
        source = cast("object", request.source)  # a caller may pass anything
        if not isinstance(source, str) or not source.strip():
            raise WorkflowExecutionError("Workflow source must be a non-empty string.")
        limits = self._limits
        timeout_ms = resolve_request_timeout_ms(request.timeout_ms, limits)
        granted = resolve_requested_capabilities(request.capabilities, self._handlers)
        try:
            value = clone_json_within(
                request.input, limit=limits.max_message_bytes, label="Workflow input"
            )
        except JsonValueError as error:
            raise WorkflowConfigurationError(error.message) from None
        if len(request.source.encode("utf-8")) > limits.max_message_bytes:
            raise WorkflowExecutionError(
                f"Workflow source exceeded the {limits.max_message_bytes}-byte limit."
            )
        run = AbortController()
        remove = request.signal.add_listener(run.abort) if request.signal is not None else None
        calls = 0

        def make_capability(name: str) -> CapabilityFunction:
            handler = self._handlers[name]
            context = CapabilityCallContext(name=name, trust="trusted", signal=run.signal)

            async def call(argument: JsonValue = None) -> JsonValue:
                nonlocal calls
                calls += 1
                return await invoke_capability(
                    handler,
                    argument,
                    context=context,
                    signal=run.signal,
                    max_message_bytes=limits.max_message_bytes,
                )

            return call

        context: dict[str, object] = {
            "input": value,
            "capabilities": MappingProxyType({name: make_capability(name) for name in granted}),
            "signal": run.signal,
        }
        try:
            async with workflow_boundary(timeout_ms=timeout_ms, signal=request.signal):
                outcome = await _run_script(request.source, context)
        finally:
            if remove is not None:
                remove()
            run.abort(WorkflowAbortedError("Workflow run settled."))
        if monotonic_ms() - started > timeout_ms:
            raise WorkflowTimeoutError(timeout_ms)
        try:
            result = clone_json_within(
                outcome, limit=limits.max_output_bytes, label="Workflow output"
            )
        except JsonValueError:
            raise WorkflowExecutionError("Workflow output is not JSON serializable.") from None
        except WorkflowMessageLimitError:
            raise WorkflowOutputLimitError(limits.max_output_bytes) from None
        return WorkflowExecutionResult(
            value=result,
            trust="trusted",
            executor=self.kind,
            duration_ms=max(0, round(monotonic_ms() - started)),
            capability_calls=calls,
        )

    async def aclose(self) -> None:
        """Refuse further runs (nothing else is held)."""
        self._closed = True

    async def __aenter__(self) -> TrustedInProcessWorkflowExecutor:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def _describe(error: BaseException) -> str:
    """``Kind: text`` of the script's exception, even when its ``__str__`` raises."""
    try:
        text = str(error)
    except Exception:
        text = "<unprintable exception>"
    return f"{type(error).__name__}: {text}"


async def _run_script(source: str, context: dict[str, object]) -> object:
    try:
        namespace: dict[str, object] = {"__name__": "__workflow__"}
        exec(compile(source, "<workflow>", "exec"), namespace)
        main = namespace.get("main")
        if not callable(main):
            raise WorkflowExecutionError("Workflow source must define main(context).")
        outcome: object = main(context)
        if inspect.isawaitable(outcome):
            outcome = await outcome
    except WorkflowExecutorError:
        raise
    except asyncio.CancelledError as error:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise  # a real cancellation (deadline, abort, the caller)
        # the script raised CancelledError itself: its failure, not a cancellation of the host
        raise WorkflowExecutionError(_describe(error), cause=error) from None
    except (Exception, SystemExit, GeneratorExit) as error:
        # The script's own failure, reported typed; sys.exit() in a script never exits the host.
        raise WorkflowExecutionError(_describe(error), cause=error) from None
    return outcome
