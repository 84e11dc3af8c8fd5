"""Route a request to the executor of its explicit trust tier (spec 04 §2.2).

Trust is never inferred. An untrusted request without a sandbox executor fails closed with
:class:`UntrustedWorkflowRejectedError`; it never falls back to a trusted or in-process executor.
There is no default trusted executor either: in-process execution must be chosen by name.
"""

from __future__ import annotations

from types import TracebackType

from actoviq.workflow.errors import UntrustedWorkflowRejectedError, WorkflowConfigurationError
from actoviq.workflow.types import (
    SandboxWorkflowExecutor,
    TrustedWorkflowExecutor,
    WorkflowExecutionRequest,
    WorkflowExecutionResult,
)

__all__ = ["WorkflowExecutorRouter", "execute_workflow"]


class WorkflowExecutorRouter:
    """Send ``trusted`` requests to the trusted executor and ``untrusted`` ones to the sandbox.

    Args:
        trusted_executor: e.g. :class:`TrustedInProcessWorkflowExecutor`; None refuses trusted
            requests with :class:`WorkflowConfigurationError`.
        sandbox_executor: e.g. :class:`BubblewrapWorkflowExecutor`; None refuses untrusted
            requests with :class:`UntrustedWorkflowRejectedError` (fail closed).

    Example:
        >>> router = WorkflowExecutorRouter()
        >>> router.sandbox_executor is None
        True
    """

    def __init__(
        self,
        *,
        trusted_executor: TrustedWorkflowExecutor | None = None,
        sandbox_executor: SandboxWorkflowExecutor | None = None,
    ) -> None:
        self.trusted_executor = trusted_executor
        self.sandbox_executor = sandbox_executor

    async def execute(self, request: WorkflowExecutionRequest) -> WorkflowExecutionResult:
        """Route ``request`` (the same object) by its ``trust`` field.

        Raises:
            UntrustedWorkflowRejectedError: untrusted request, no sandbox executor.
            WorkflowConfigurationError: unknown trust tier, or trusted request without a trusted
                executor.
        """
        trust: object = getattr(request, "trust", None)
        if trust == "trusted":
            if self.trusted_executor is None:
                raise WorkflowConfigurationError(
                    "Trusted workflow execution needs an explicitly configured trusted executor "
                    "(e.g. TrustedInProcessWorkflowExecutor)."
                )
            return await self.trusted_executor.execute(request)
        if trust == "untrusted":
            if self.sandbox_executor is None:
                raise UntrustedWorkflowRejectedError()
            return await self.sandbox_executor.execute(request)
        raise WorkflowConfigurationError(f"Unknown workflow trust tier: {trust}.")

    async def aclose(self) -> None:
        """Close both executors."""
        if self.trusted_executor is not None:
            await self.trusted_executor.aclose()
        if self.sandbox_executor is not None:
            await self.sandbox_executor.aclose()

    async def __aenter__(self) -> WorkflowExecutorRouter:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


async def execute_workflow(
    request: WorkflowExecutionRequest,
    *,
    trusted_executor: TrustedWorkflowExecutor | None = None,
    sandbox_executor: SandboxWorkflowExecutor | None = None,
) -> WorkflowExecutionResult:
    """One-shot: route ``request`` through a router over the given executors (not closed here)."""
    router = WorkflowExecutorRouter(
        trusted_executor=trusted_executor, sandbox_executor=sandbox_executor
    )
    return await router.execute(request)
