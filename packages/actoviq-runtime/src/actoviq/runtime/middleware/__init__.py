"""Middleware for the Actoviq runtime: twelve fixed stages, priorities, the onion pipeline.

Example:
    >>> from actoviq.runtime.middleware import MiddlewarePipeline, define_middleware
    >>> async def early(ctx, next):
    ...     return f"early({await next()})"
    >>> MiddlewarePipeline([define_middleware("early", "beforeRun", early, priority=-20)]).format()
    'beforeRun[0] @-20 early'
"""

from actoviq.runtime.middleware.context import (
    MiddlewareContext,
    MiddlewareDeadline,
    MiddlewareErrorContext,
    RuntimeMiddlewareContext,
    RunView,
    UsageView,
    read_only_state,
)
from actoviq.runtime.middleware.definition import (
    MiddlewareDefinition,
    MiddlewareHandler,
    Next,
    define_middleware,
    middleware,
)
from actoviq.runtime.middleware.errors import (
    MiddlewareConfigurationError,
    MiddlewareContextError,
    MiddlewareDeadlineExceededError,
    MiddlewareError,
    MiddlewareInvariantViolationError,
    MiddlewareNextCalledTwiceError,
    MiddlewarePriorityConflictError,
    MiddlewareRegistryError,
    MiddlewareTimeoutError,
    UnknownMiddlewareStageError,
)
from actoviq.runtime.middleware.pipeline import (
    MiddlewareEntryDescription,
    MiddlewarePipeline,
    MiddlewarePipelineBuilder,
    build_middleware_pipeline,
    create_middleware_pipeline_builder,
)
from actoviq.runtime.middleware.registry import MiddlewareRef, MiddlewareRegistry
from actoviq.runtime.middleware.stages import (
    MIDDLEWARE_STAGE_ORDER,
    MiddlewareStage,
    as_middleware_stage,
    is_middleware_stage,
    middleware_stage_index,
)

__all__ = [
    "MIDDLEWARE_STAGE_ORDER",
    "MiddlewareConfigurationError",
    "MiddlewareContext",
    "MiddlewareContextError",
    "MiddlewareDeadline",
    "MiddlewareDeadlineExceededError",
    "MiddlewareDefinition",
    "MiddlewareEntryDescription",
    "MiddlewareError",
    "MiddlewareErrorContext",
    "MiddlewareHandler",
    "MiddlewareInvariantViolationError",
    "MiddlewareNextCalledTwiceError",
    "MiddlewarePipeline",
    "MiddlewarePipelineBuilder",
    "MiddlewarePriorityConflictError",
    "MiddlewareRef",
    "MiddlewareRegistry",
    "MiddlewareRegistryError",
    "MiddlewareStage",
    "MiddlewareTimeoutError",
    "Next",
    "RunView",
    "RuntimeMiddlewareContext",
    "UnknownMiddlewareStageError",
    "UsageView",
    "as_middleware_stage",
    "build_middleware_pipeline",
    "create_middleware_pipeline_builder",
    "define_middleware",
    "is_middleware_stage",
    "middleware",
    "middleware_stage_index",
    "read_only_state",
]
