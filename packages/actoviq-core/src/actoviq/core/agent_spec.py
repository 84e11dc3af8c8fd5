"""``AgentSpec``: the immutable declaration of an agent (spec 02 §1.4, ADR-002).

An AgentSpec holds no live client, store, timer or connection. Tools and middleware are
referenced by id and registered with the runtime; instructions may be a string or a (sync or
async) callable of the :class:`~actoviq.core.run.RunContext`.

Example:
    >>> spec = AgentSpec(id="concise", name="Concise", instructions="Be brief.",
    ...                  model="openai-responses:gpt-4.1-mini", tools=("lookup",))
    >>> spec.digest().startswith("sha256v1:")
    True
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Generic, TypeAlias, TypeVar, cast

import attrs

from actoviq.core._validate import camel
from actoviq.core.errors import AgentSpecError
from actoviq.core.items import CanonicalItem
from actoviq.core.json import (
    MAX_SAFE_INTEGER,
    MAX_WIRE_DEPTH,
    JsonObject,
    JsonValue,
    dumps_canonical,
    find_json_violation,
    json_value_error,
)
from actoviq.core.model_ref import ModelRefParts, model_ref_parts

if TYPE_CHECKING:
    from actoviq.core.run import RunContext

__all__ = [
    "DEFAULT_RUN_LIMITS",
    "AgentSpec",
    "GuardrailDecision",
    "HandoffRef",
    "InputGuardrail",
    "MiddlewareRef",
    "OutputGuardrail",
    "OutputSchema",
    "PromptSource",
    "RefSpec",
    "RunLimits",
    "RunLimitsPatch",
    "ToolRef",
    "resolve_instructions",
]

TContext = TypeVar("TContext")
TOutput = TypeVar("TOutput")


PromptSource: TypeAlias = "str | Callable[[RunContext[Any]], str | Awaitable[str]]"


@attrs.frozen(kw_only=True, slots=True)
class RefSpec:
    """A reference by id with JSON options: ``{id, options?}`` (tools and middleware)."""

    id: str
    options: JsonObject | None = None


ToolRef: TypeAlias = "str | RefSpec"
MiddlewareRef: TypeAlias = "str | RefSpec"


@attrs.frozen(kw_only=True, slots=True)
class GuardrailDecision:
    """The verdict of a guardrail."""

    allowed: bool
    reason: str | None = None
    metadata: JsonObject | None = None


@attrs.frozen(kw_only=True, slots=True)
class InputGuardrail:
    """Checks the run input before the first model call."""

    id: str
    evaluate: Callable[
        [RunContext[Any], Sequence[CanonicalItem]], GuardrailDecision | Awaitable[GuardrailDecision]
    ]


@attrs.frozen(kw_only=True, slots=True)
class OutputGuardrail:
    """Checks the final output before the run completes."""

    id: str
    evaluate: Callable[[RunContext[Any], Any], GuardrailDecision | Awaitable[GuardrailDecision]]


@attrs.frozen(kw_only=True, slots=True)
class HandoffRef:
    """A declared handoff to another agent."""

    id: str
    target_agent_id: str
    description: str | None = None
    filter: (
        Callable[
            [RunContext[Any], Sequence[CanonicalItem]],
            Sequence[CanonicalItem] | Awaitable[Sequence[CanonicalItem]],
        ]
        | None
    ) = None
    metadata: JsonObject | None = None


@attrs.frozen(kw_only=True, slots=True)
class OutputSchema(Generic[TOutput]):
    """A JSON Schema for structured output, with an optional ``parse`` into a Python value."""

    name: str
    schema: JsonObject
    description: str | None = None
    strict: bool | None = None
    parse: Callable[[JsonValue], TOutput] | None = None


def _check_limit(name: str, value: object, *, minimum: int = 0, number: bool = False) -> None:
    wire = camel(name)
    if number:
        if type(value) not in (int, float) or not (value >= minimum) or value != value:  # type: ignore[operator]
            raise AgentSpecError(f"limits.{wire} must be a finite number >= {minimum}.", field=wire)
        if value == float("inf"):
            raise AgentSpecError(f"limits.{wire} must be a finite number >= {minimum}.", field=wire)
        return
    if type(value) is not int or value < minimum or value > MAX_SAFE_INTEGER:
        raise AgentSpecError(f"limits.{wire} must be a safe integer >= {minimum}.", field=wire)


@attrs.frozen(kw_only=True, slots=True)
class RunLimits:
    """Resolved run limits; the defaults are the reference runtime's ``DEFAULT_LIMITS``."""

    max_turns: int = 32
    run_deadline_ms: int = 900_000
    model_call_timeout_ms: int = 120_000
    tool_timeout_ms: int = 120_000
    hook_timeout_ms: int = 30_000
    max_parallel_tools: int = 10
    max_subagent_depth: int = 1
    max_subagent_fanout: int = 8
    stream_buffer_size: int = 256
    max_input_tokens: int = 1_000_000
    max_output_tokens: int = 64_000
    max_total_tokens: int = 1_000_000
    max_cost_usd: float = 100

    def __attrs_post_init__(self) -> None:
        for field in attrs.fields(RunLimits):
            value = getattr(self, field.name)
            if field.name == "max_cost_usd":
                _check_limit(field.name, value, number=True)
            elif field.name == "stream_buffer_size":
                _check_limit(field.name, value, minimum=2)
            elif field.name in ("max_turns", "max_parallel_tools"):
                _check_limit(field.name, value, minimum=1)
            else:
                _check_limit(field.name, value)

    def merged(self, *patches: RunLimitsPatch | None) -> RunLimits:
        """Apply partial limits in order; a later patch wins."""
        values = attrs.asdict(self)
        for patch in patches:
            if patch is None:
                continue
            for field in attrs.fields(RunLimitsPatch):
                value = getattr(patch, field.name)
                if value is not None:
                    values[field.name] = value
        return RunLimits(**values)


@attrs.frozen(kw_only=True, slots=True)
class RunLimitsPatch:
    """Partial limits (an AgentSpec's, a run's or a resume's); ``None`` means inherit."""

    max_turns: int | None = None
    run_deadline_ms: int | None = None
    model_call_timeout_ms: int | None = None
    tool_timeout_ms: int | None = None
    hook_timeout_ms: int | None = None
    max_parallel_tools: int | None = None
    max_subagent_depth: int | None = None
    max_subagent_fanout: int | None = None
    stream_buffer_size: int | None = None
    max_input_tokens: int | None = None
    max_output_tokens: int | None = None
    max_total_tokens: int | None = None
    max_cost_usd: float | None = None

    def __attrs_post_init__(self) -> None:
        # Validate by resolving against the defaults: the same rules as RunLimits.
        DEFAULT_RUN_LIMITS.merged(self)


DEFAULT_RUN_LIMITS: Final = RunLimits()


def _ref_json(ref: Any, kind: str, index: int) -> JsonValue:
    if isinstance(ref, str):
        if not ref.strip():
            raise AgentSpecError(f"{kind}[{index}] must be a non-empty id.", field=kind)
        return ref
    if isinstance(ref, RefSpec):
        if not ref.id.strip():
            raise AgentSpecError(f"{kind}[{index}].id must not be empty.", field=kind)
        if ref.options is None:
            return {"id": ref.id}
        if find_json_violation(ref.options) is not None or type(ref.options) is not dict:
            raise AgentSpecError(f"{kind}[{index}].options must be a JSON object.", field=kind)
        return {"id": ref.id, "options": ref.options}
    raise AgentSpecError(
        f"{kind}[{index}] must be a string id or RefSpec, got {type(ref).__name__}.", field=kind
    )


def _limits_json(limits: RunLimitsPatch | None) -> JsonObject | None:
    if limits is None:
        return None
    data: JsonObject = {}
    for field in attrs.fields(RunLimitsPatch):
        value = getattr(limits, field.name)
        if value is not None:
            data[camel(field.name)] = value
    return data


def _as_tuple(value: Any) -> tuple[Any, ...]:
    if isinstance(value, str):
        return (value,)
    return tuple(value)


@attrs.frozen(kw_only=True, slots=True, eq=False)
class AgentSpec(Generic[TContext, TOutput]):
    """An immutable agent declaration.

    Equality is by :meth:`digest`-relevant content plus identity of callables, so two specs built
    the same way compare equal.
    """

    id: str
    name: str
    instructions: str | Callable[[RunContext[TContext]], str | Awaitable[str]]
    description: str | None = None
    model: str | ModelRefParts | None = None
    tools: tuple[str | RefSpec, ...] = attrs.field(default=(), converter=_as_tuple)
    handoffs: tuple[HandoffRef, ...] = attrs.field(default=(), converter=_as_tuple)
    output: OutputSchema[TOutput] | None = None
    input_guardrails: tuple[InputGuardrail, ...] = attrs.field(default=(), converter=_as_tuple)
    output_guardrails: tuple[OutputGuardrail, ...] = attrs.field(default=(), converter=_as_tuple)
    middleware: tuple[str | RefSpec, ...] = attrs.field(default=(), converter=_as_tuple)
    limits: RunLimitsPatch | None = None
    metadata: JsonObject | None = None

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise AgentSpecError("Agent id must not be empty.", field="id")
        if json_value_error(self.id) is not None:
            raise AgentSpecError(
                "Agent id must be a string without lone UTF-16 surrogates.", field="id"
            )
        if not isinstance(self.name, str) or not self.name.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise AgentSpecError(f'Agent "{self.id}" name must not be empty.', field="name")
        if not isinstance(self.instructions, str) and not callable(self.instructions):
            raise AgentSpecError(
                f'Agent "{self.id}" instructions must be a string or function.',
                field="instructions",
            )
        if self.model is not None:
            try:
                model_ref_parts(self.model, default_provider_id="default")
            except ValueError as error:
                raise AgentSpecError(f'Agent "{self.id}" model: {error}', field="model") from None
        if self.limits is not None and not isinstance(self.limits, RunLimitsPatch):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise AgentSpecError(
                f'Agent "{self.id}" limits must be a RunLimitsPatch.', field="limits"
            )
        if self.metadata is not None and (
            type(self.metadata) is not dict or find_json_violation(self.metadata) is not None
        ):
            raise AgentSpecError(
                f'Agent "{self.id}" metadata must be a JSON object.', field="metadata"
            )
        for index, handoff in enumerate(self.handoffs):
            if not isinstance(handoff, HandoffRef):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise AgentSpecError(f"handoffs[{index}] must be a HandoffRef.", field="handoffs")
        if self.output is not None:
            if not isinstance(self.output, OutputSchema):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise AgentSpecError(
                    f'Agent "{self.id}" output must be an OutputSchema.', field="output"
                )
            if type(self.output.schema) is not dict or find_json_violation(self.output.schema):
                raise AgentSpecError(
                    f'Agent "{self.id}" output.schema must be a JSON object.', field="output"
                )
        # Validates tool and middleware references, then the strict-JSON rules (D2) on every
        # string and value of the declaration, so digest() cannot fail later.
        error = json_value_error(
            self.declaration(), f'Agent "{self.id}" declaration', max_depth=MAX_WIRE_DEPTH
        )
        if error is not None:
            field = error.path[2:].split(".")[0].split("[")[0] or "declaration"
            raise AgentSpecError(error.message, field=field)

    def declaration(self) -> JsonObject:
        """The JSON declaration the digest is computed over (callables by reference only)."""
        data: JsonObject = {"id": self.id, "name": self.name}
        if self.description is not None:
            data["description"] = self.description
        data["instructions"] = (
            self.instructions if isinstance(self.instructions, str) else "[function]"
        )
        if self.model is not None:
            data["model"] = (
                self.model if isinstance(self.model, str) else cast(JsonValue, self.model.to_json())
            )
        data["tools"] = [_ref_json(ref, "tools", i) for i, ref in enumerate(self.tools)]
        data["handoffs"] = [
            {"id": handoff.id, "targetAgentId": handoff.target_agent_id}
            for handoff in self.handoffs
        ]
        if self.output is not None:
            output: JsonObject = {"name": self.output.name, "schema": self.output.schema}
            if self.output.strict is not None:
                output["strict"] = self.output.strict
            data["output"] = output
        limits = _limits_json(self.limits)
        if limits is not None:
            data["limits"] = limits
        if self.metadata is not None:
            data["metadata"] = self.metadata
        data["middleware"] = [
            _ref_json(ref, "middleware", i) for i, ref in enumerate(self.middleware)
        ]
        data["inputGuardrails"] = [guardrail.id for guardrail in self.input_guardrails]
        data["outputGuardrails"] = [guardrail.id for guardrail in self.output_guardrails]
        return data

    def digest(self, tool_descriptors: Sequence[Mapping[str, Any]] = ()) -> str:
        """``"sha256v1:<hex>"`` over canonical JSON of the declaration (decision D3).

        Args:
            tool_descriptors: the runtime's descriptors of the agent's tools
                (``{name, effect, requiresApproval, inputSchema}``), so that changing a tool's
                contract invalidates checkpoints taken with the old one.
        """
        payload: JsonObject = {
            "agent": self.declaration(),
            "tools": [cast(JsonValue, dict(descriptor)) for descriptor in tool_descriptors],
        }
        text = dumps_canonical(payload, "agent declaration", max_depth=MAX_WIRE_DEPTH)
        return "sha256v1:" + hashlib.sha256(text.encode("utf-8")).hexdigest()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AgentSpec):
            return NotImplemented
        other_spec = cast("AgentSpec[Any, Any]", other)
        return (
            self.declaration() == other_spec.declaration()
            and self.instructions == other_spec.instructions
            and self.handoffs == other_spec.handoffs
            and self.output == other_spec.output
            and self.input_guardrails == other_spec.input_guardrails
            and self.output_guardrails == other_spec.output_guardrails
        )

    def __hash__(self) -> int:
        return hash(self.digest())


async def resolve_instructions(
    instructions: str | Callable[[RunContext[Any]], str | Awaitable[str]], context: RunContext[Any]
) -> str:
    """Evaluate static or dynamic (sync or async) instructions for a run."""
    if isinstance(instructions, str):
        return instructions
    value = instructions(context)
    if inspect.isawaitable(value):
        value = await value
    if not isinstance(value, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise AgentSpecError(
            f"Dynamic instructions must return a string, got {type(value).__name__}.",
            field="instructions",
        )
    return value
