"""Middleware definitions: ``define_middleware`` and the ``@middleware`` decorator (spec 03 §3.2).

A handler is ``handle(ctx, next)`` (sync or async). ``next()`` takes no argument and returns an
awaitable of the downstream result; handlers transform results, not contexts.

Example:
    >>> async def timing(ctx, next):
    ...     return await next()
    >>> define_middleware("timing", "wrapModelCall", timing, priority=10).stage.value
    'wrapModelCall'
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeAlias, cast

import attrs

from actoviq.runtime.middleware.errors import MiddlewareConfigurationError
from actoviq.runtime.middleware.stages import MiddlewareStage, as_middleware_stage

__all__ = [
    "MAX_SAFE_INTEGER",
    "MiddlewareDefinition",
    "MiddlewareHandler",
    "Next",
    "define_middleware",
    "middleware",
]

MAX_SAFE_INTEGER = 2**53 - 1

Next: TypeAlias = Callable[[], Awaitable[Any]]
"""Calls the rest of the middleware chain."""
# Handlers are typed per stage by their authors; the pipeline itself is type-erased.
MiddlewareHandler: TypeAlias = Callable[[Any, Next], Any]
"""A middleware function: takes the stage context and `next`, returns the stage result."""


@attrs.frozen(kw_only=True, slots=True)
class MiddlewareDefinition:
    """A named handler at one stage; a lower priority runs first and wraps the higher ones."""

    name: str
    stage: MiddlewareStage = attrs.field(converter=as_middleware_stage)
    priority: int
    handle: MiddlewareHandler = attrs.field(eq=False)

    def __attrs_post_init__(self) -> None:
        _validate(self.name, self.stage, self.priority, self.handle)


def _validate(name: object, stage: object, priority: object, handle: object) -> None:
    if not isinstance(name, str) or not name.strip():
        raise MiddlewareConfigurationError("Middleware name must not be empty.")
    as_middleware_stage(stage)
    if (
        isinstance(priority, bool)
        or not isinstance(priority, int)
        or abs(priority) > MAX_SAFE_INTEGER
    ):
        raise MiddlewareConfigurationError(
            f'Middleware "{name}" priority must be a safe integer; got {priority!r}.'
        )
    if not callable(handle):
        raise MiddlewareConfigurationError(f'Middleware "{name}" handle must be callable.')


def define_middleware(
    definition: str | MiddlewareDefinition | Mapping[str, Any],
    stage: MiddlewareStage | str | None = None,
    handle: MiddlewareHandler | None = None,
    *,
    priority: int = 0,
) -> MiddlewareDefinition:
    """Validate and freeze a middleware definition.

    Accepts ``define_middleware(name, stage, handle, priority=...)``, an existing
    :class:`MiddlewareDefinition`, or a mapping ``{name, stage, priority, handle}``.

    Raises:
        MiddlewareConfigurationError: a non-definition, blank name, unknown stage, a priority
            that is not a safe integer, or a non-callable handle.
    """
    if isinstance(definition, MiddlewareDefinition):
        return attrs.evolve(definition)
    if isinstance(definition, Mapping):
        data: Mapping[str, Any] = definition
        name, stage, handle = data.get("name"), data.get("stage"), data.get("handle")
        priority = data.get("priority", 0)
    elif isinstance(definition, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        name = definition
    else:
        raise MiddlewareConfigurationError(
            "Middleware definition must be a name, a mapping or a MiddlewareDefinition."
        )
    _validate(name, stage, priority, handle)
    return MiddlewareDefinition(
        name=cast(str, name).strip(),
        stage=as_middleware_stage(stage),
        priority=priority,
        handle=cast(MiddlewareHandler, handle),
    )


def middleware(
    stage: MiddlewareStage | str, *, name: str | None = None, priority: int = 0
) -> Callable[[MiddlewareHandler], MiddlewareDefinition]:
    """Decorator form of :func:`define_middleware` (the name defaults to the function name)."""

    def decorate(handle: MiddlewareHandler) -> MiddlewareDefinition:
        label = name if name is not None else getattr(handle, "__name__", "")
        return define_middleware(label, stage, handle, priority=priority)

    return decorate
