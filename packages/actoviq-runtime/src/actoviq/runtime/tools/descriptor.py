"""The tool descriptor and the values a tool sees and returns (spec 03 §4.1, D5).

A :class:`RuntimeTool` is a :class:`ToolDescriptor` (name, description, input schema, behaviour)
plus an ``execute`` function. The :func:`~actoviq.runtime.tools.tool` decorator builds one from a
typed function; this module is the explicit descriptor form.

Example:
    >>> from actoviq.runtime.tools import json_schema_input
    >>> double = RuntimeTool(
    ...     descriptor=ToolDescriptor(
    ...         name="double",
    ...         input=json_schema_input({"type": "object", "required": ["x"]}),
    ...         behavior=ToolBehavior(effect="read"),
    ...     ),
    ...     execute=lambda ctx, args: args["x"] * 2,
    ... )
    >>> double.descriptor.effect
    'read'
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, cast

import attrs

from actoviq.core import (
    AbortSignal,
    Interruption,
    JsonObject,
    JsonValue,
    clone_json_value,
    register_wire_class,
)
from actoviq.runtime.tools.effects import TOOL_EFFECTS, ToolEffect
from actoviq.runtime.tools.errors import ToolDefinitionError, ToolProgressError
from actoviq.runtime.tools.frozen import FrozenJson, freeze_json, thaw_json

if TYPE_CHECKING:
    from actoviq.runtime.tools.decisions import InterruptionDecision

__all__ = [
    "DEFAULT_TOOL_MAX_OUTPUT_CHARS",
    "DEFAULT_TOOL_MAX_RETRIES",
    "RuntimeTool",
    "ToolApproval",
    "ToolArtifact",
    "ToolBehavior",
    "ToolDescriptor",
    "ToolEffect",
    "ToolExecuteFn",
    "ToolExecutionContext",
    "ToolOutput",
    "ToolProgressSink",
    "ToolSchema",
    "tool_effect",
]


def _identity(value: object) -> object:
    return value


def _check_timeout(_: object, __: object, value: float | None) -> None:
    if value is None:
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)  # pyright: ignore[reportUnnecessaryIsInstance]
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ToolDefinitionError("Tool timeoutMs must be a positive finite number.")


def _check_effect(_: object, __: object, value: str | None) -> None:
    if value is not None and value not in TOOL_EFFECTS:
        raise ToolDefinitionError(
            f"Tool effect must be one of {', '.join(TOOL_EFFECTS)}; got {value!r}."
        )


DEFAULT_TOOL_MAX_RETRIES = 1
"""Consecutive retries (``ToolRetry`` or invalid arguments) a tool accepts by default."""
DEFAULT_TOOL_MAX_OUTPUT_CHARS = 1_000_000
"""The default bound on a tool result's size (characters of its JSON text, see ToolBehavior)."""


def _check_output_chars(_: object, __: object, value: int | None) -> None:
    if value is not None and (type(value) is not int or not 1 <= value <= 2**53 - 1):
        raise ToolDefinitionError("Tool maxOutputChars must be a positive int.")


def _check_retries(_: object, __: object, value: int | None) -> None:
    if value is not None and (type(value) is not int or not 0 <= value <= 100):
        raise ToolDefinitionError("Tool maxRetries must be an int between 0 and 100.")


@attrs.frozen(kw_only=True, slots=True)
class ToolBehavior:
    """How a tool may be run.

    Attributes:
        effect: ``read``, ``idempotent-write`` or ``side-effect``; undeclared means side-effect.
        timeout_ms: per-call timeout (positive, finite); the run's tool timeout applies otherwise.
        requires_approval: an approval gate that no policy can lift (D5).
        parallel_safe: set False to keep a ``read`` tool out of parallel batches.
        concurrency_key: declared for parity; not used by the runtime.
        max_retries: how many consecutive calls in a run may end in ``ToolRetry`` or invalid
            arguments before the run fails (``TOOL_RETRIES_EXCEEDED``); None means
            :data:`DEFAULT_TOOL_MAX_RETRIES`. A successful call resets the count.
        max_output_chars: the largest result the call may return, in characters of its JSON
            text (plus its ``model_text``); None means :data:`DEFAULT_TOOL_MAX_OUTPUT_CHARS`. A
            larger result is not truncated: the call fails with kind ``validation`` (cause
            :class:`~actoviq.runtime.ToolOutputTooLargeError`, code ``TOOL_OUTPUT_TOO_LARGE``,
            with the size and the limit), so nothing of it reaches the transcript, events or
            storage, and the model and the host both see why.
    """

    effect: ToolEffect | None = attrs.field(default=None, validator=_check_effect)
    timeout_ms: float | None = attrs.field(default=None, validator=_check_timeout)
    requires_approval: bool = False
    parallel_safe: bool | None = None
    concurrency_key: str | None = None
    max_retries: int | None = attrs.field(default=None, validator=_check_retries)
    max_output_chars: int | None = attrs.field(default=None, validator=_check_output_chars)

    @property
    def retry_budget(self) -> int:
        """``max_retries``, or the default when undeclared."""
        return DEFAULT_TOOL_MAX_RETRIES if self.max_retries is None else self.max_retries

    @property
    def output_limit(self) -> int:
        """``max_output_chars``, or the default when undeclared."""
        limit = self.max_output_chars
        return DEFAULT_TOOL_MAX_OUTPUT_CHARS if limit is None else limit


def _schema_copy(value: Mapping[str, object]) -> JsonObject:
    if not isinstance(value, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ToolDefinitionError("Tool JSON Schema must be a mapping.")
    return cast(JsonObject, clone_json_value(dict(value), "Tool JSON Schema"))


@attrs.frozen(kw_only=True, slots=True)
class ToolSchema:
    """An input or output schema: ``parse`` validates, ``json_schema`` is what the model sees."""

    parse: Callable[[object], object] = _identity
    json_schema: JsonObject = attrs.field(factory=lambda: {}, converter=_schema_copy)


def _strip(value: str) -> str:
    return value.strip() if isinstance(value, str) else value  # pyright: ignore[reportUnnecessaryIsInstance]


def _check_name(_: object, __: object, value: str) -> None:
    if not isinstance(value, str) or not value.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ToolDefinitionError("Tool name must not be empty.")


@attrs.frozen(kw_only=True, slots=True)
class ToolDescriptor:
    """What the runtime and the model know about a tool."""

    name: str = attrs.field(converter=_strip, validator=_check_name)
    description: str = ""
    input: ToolSchema = attrs.field(factory=ToolSchema)
    output: ToolSchema | None = None
    behavior: ToolBehavior = attrs.field(factory=ToolBehavior)
    metadata: JsonObject | None = None

    @property
    def effect(self) -> ToolEffect:
        """The declared effect, ``side-effect`` when undeclared."""
        return tool_effect(self)

    @property
    def requires_approval(self) -> bool:
        """Whether every call needs an approval."""
        return self.behavior.requires_approval

    @property
    def timeout_ms(self) -> float | None:
        """The per-call timeout, if declared."""
        return self.behavior.timeout_ms

    def to_json(self) -> JsonObject:
        """``{name, description, effect, requiresApproval, inputSchema}`` (digest, tool lists)."""
        return {
            "name": self.name,
            "description": self.description,
            "effect": self.effect,
            "requiresApproval": self.requires_approval,
            "inputSchema": clone_json_value(self.input.json_schema),
        }


def tool_effect(descriptor: ToolDescriptor) -> ToolEffect:
    """The effect of a tool; an undeclared effect means ``side-effect`` (ADR-010)."""
    effect = descriptor.behavior.effect
    return effect if effect is not None else "side-effect"


def _check_artifact_id(_: object, __: object, value: object) -> None:
    if not isinstance(value, str) or not value:
        raise ToolDefinitionError("Tool artifact id must be a non-empty string.")


@attrs.frozen(kw_only=True, slots=True)
class ToolArtifact:
    """An artifact a tool produced (kept out of the transcript; reported in ``tool.completed``)."""

    id: str = attrs.field(validator=_check_artifact_id)
    media_type: str | None = None
    name: str | None = None
    metadata: JsonObject | None = None


def _freeze_value(value: object) -> FrozenJson:
    return freeze_json(value, "Tool output value")


def _artifacts(value: object) -> tuple[ToolArtifact, ...]:
    if isinstance(value, ToolArtifact):
        return (value,)
    items = tuple(cast(tuple[object, ...], value))
    for item in items:
        if not isinstance(item, ToolArtifact):
            raise ToolDefinitionError("Tool artifacts must be ToolArtifact values.")
    return cast(tuple[ToolArtifact, ...], items)


@attrs.frozen(kw_only=True, slots=True)
class ToolOutput:
    """A tool's validated result; ``value`` is deep-frozen JSON.

    Example:
        >>> ToolOutput(value={"n": [1]}).json_value()
        {'n': [1]}
    """

    value: FrozenJson = attrs.field(converter=_freeze_value)
    artifacts: tuple[ToolArtifact, ...] = attrs.field(default=(), converter=_artifacts)
    model_text: str | None = None

    def json_value(self) -> JsonValue:
        """A fresh plain-JSON copy of ``value`` (for ``ToolResultItem.output``)."""
        return thaw_json(self.value)

    def artifacts_json(self) -> list[JsonValue]:
        """The artifacts as camelCase JSON (for ``tool.completed``)."""
        from actoviq.core import to_json

        return [cast(JsonValue, to_json(artifact)) for artifact in self.artifacts]


@attrs.frozen(kw_only=True, slots=True)
class ToolApproval:
    """The approval a resumed call runs under."""

    interruption_id: str
    outcome: Literal["approve"] = "approve"
    metadata: JsonObject | None = None


@attrs.frozen(kw_only=True, slots=True)
class ToolResumption:
    """Why a suspended tool runs again: what it suspended with and the host's decisions.

    ``decisions`` answer some (at least one) of ``interruptions``; see ``ToolSuspension``.
    """

    interruptions: tuple[Interruption, ...]
    decisions: tuple[InterruptionDecision, ...]


@attrs.frozen(kw_only=True, slots=True)
class ToolExecutionContext:
    """What a tool (and a policy) sees of its invocation.

    ``deadline`` is an absolute epoch-milliseconds time. ``idempotency_key`` is
    ``"<runId>:<callId>"`` for ``idempotent-write`` tools, so the downstream system can deduplicate.
    ``progress`` is where :meth:`report_progress` goes; the runtime sets it for every call it runs
    (None outside a run, where reports are dropped).
    """

    run_id: str
    call_id: str
    signal: AbortSignal
    deadline: float | None = None
    context: Any = None  # the caller's run context: any object the host passes
    idempotency_key: str | None = None
    approval: ToolApproval | None = None
    workspace_id: str | None = None
    metadata: JsonObject | None = None
    progress: ToolProgressSink | None = None
    resumption: ToolResumption | None = None

    async def report_progress(
        self,
        progress: float,
        total: float | None = None,
        message: str | None = None,
        *,
        data: JsonObject | None = None,
    ) -> None:
        """Report how far the call got; the runtime emits a ``tool.progress`` event.

        The event's data is ``{callId, name, progress: {type: "progress", progress, total?,
        message?, data?}}``. Reports made after the call settled are dropped. Only async tools
        can report (a plain function runs on a worker thread).

        Example:
            >>> # async def execute(ctx, args):
            >>> #     await ctx.report_progress(1, 3, "downloaded")

        Raises:
            ToolProgressError: ``progress``/``total`` is not a finite number, ``message`` is not
                a string, or ``data`` is not a JSON object.
        """
        payload: JsonObject = {"type": "progress", "progress": _finite(progress, "value")}
        if total is not None:
            payload["total"] = _finite(total, "total", optional=True)
        if message is not None:
            if not isinstance(message, str):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise ToolProgressError("Tool progress message must be a string.")
            payload["message"] = message
        if data is not None:
            try:
                payload["data"] = cast(JsonObject, clone_json_value(dict(data), "Tool progress"))
            except Exception as error:
                raise ToolProgressError("Tool progress data must be a JSON object.") from error
        if self.progress is not None:
            await self.progress(payload)


ToolProgressSink: TypeAlias = Callable[[JsonObject], Awaitable[None]]
"""Receives a running tool's progress payload (the runtime emits a ``tool.progress`` event)."""


def _finite(value: object, label: str, *, optional: bool = False) -> float | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ToolProgressError(f"Tool progress {label} must be a finite number; got {value!r}.")
    return float(value)


# Tools are typed per tool; the runtime sees them type-erased (the parsed input is any object).
ToolExecuteFn: TypeAlias = Callable[[ToolExecutionContext, Any], "object | Awaitable[object]"]
"""The function a tool runs: takes the execution context and the parsed input."""


@attrs.frozen(kw_only=True, slots=True)
class RuntimeTool:
    """A tool the runtime can execute: a descriptor plus ``execute(ctx, parsed_input)``."""

    descriptor: ToolDescriptor
    execute: ToolExecuteFn

    def __attrs_post_init__(self) -> None:
        if not callable(self.execute):
            raise ToolDefinitionError(f'Tool "{self.descriptor.name}" must provide execute().')

    @property
    def name(self) -> str:
        """The tool name."""
        return self.descriptor.name


register_wire_class(ToolArtifact)
