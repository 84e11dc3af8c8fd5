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
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import (
    TYPE_CHECKING,
    Any,
    Final,
    Generic,
    TypeAlias,
    TypedDict,
    Unpack,
    cast,
    overload,
)

import attrs
from typing_extensions import TypeVar

from actoviq.core._validate import camel
from actoviq.core.errors import AgentSpecError
from actoviq.core.items import CanonicalItem
from actoviq.core.json import (
    MAX_SAFE_INTEGER,
    MAX_WIRE_DEPTH,
    JsonLike,
    JsonObject,
    JsonValue,
    dumps_canonical,
    find_json_violation,
    json_value_error,
)
from actoviq.core.model_ref import ModelRefParts, model_ref_parts
from actoviq.core.model_settings import ModelSettings
from actoviq.core.output_schema import OutputSchema, output_schema_of

if TYPE_CHECKING:
    from actoviq.core.run import RunContext

__all__ = [
    "DEFAULT_OUTPUT_RETRIES",
    "DEFAULT_RUN_LIMITS",
    "AgentSpec",
    "AgentSpecOptions",
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

# Defaults (PEP 696) so that ``AgentSpec(...)`` is never ``AgentSpec[Unknown, Unknown]`` and
# ``AgentSpec[MyContext]`` means an agent answering text.
TContext = TypeVar("TContext", default=Any)
TOutput = TypeVar("TOutput", default=str)
_O = TypeVar("_O")

DEFAULT_OUTPUT_RETRIES: Final = 1
"""How many times invalid structured output is sent back to the model before the run fails."""


PromptSource: TypeAlias = "str | Callable[[RunContext[Any]], str | Awaitable[str]]"
"""Agent instructions: fixed text, or a function of the run context (sync or async)."""


@attrs.frozen(kw_only=True, slots=True)
class RefSpec:
    """A reference by id with JSON options: ``{id, options?}`` (tools and middleware)."""

    id: str
    options: JsonObject | None = None


ToolRef: TypeAlias = "str | RefSpec"
"""A tool named by its registered name, or a `RefSpec` with options."""
MiddlewareRef: TypeAlias = "str | RefSpec"
"""A middleware named by its registered id, or a `RefSpec` with options."""


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
"""The limits an agent runs with when its spec sets none (`RunLimits()` defaults)."""


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


def _as_tuple(field: str) -> Callable[[Any], tuple[Any, ...]]:
    def convert(value: Any) -> tuple[Any, ...]:
        if isinstance(value, str):
            return (value,)
        try:
            return tuple(value)
        except TypeError:  # None, a number ...: refused typed, like every other bad field
            raise AgentSpecError(
                f"{field} must be a list, got {type(value).__name__}.", field=field
            ) from None

    return convert


class AgentSpecOptions(TypedDict, total=False):
    """The other keyword arguments of :class:`AgentSpec` (see the class for their meaning)."""

    description: str | None
    model: str | ModelRefParts | None
    tools: Iterable[str | RefSpec] | str
    handoffs: Iterable[HandoffRef]
    input_guardrails: Iterable[InputGuardrail]
    output_guardrails: Iterable[OutputGuardrail]
    middleware: Iterable[str | RefSpec] | str
    limits: RunLimitsPatch | None
    metadata: Mapping[str, JsonLike] | None
    model_settings: ModelSettings | None
    output_retries: int


Instructions: TypeAlias = "str | Callable[[RunContext[Any]], str | Awaitable[str]]"


@attrs.frozen(kw_only=True, slots=True, eq=False, init=False)
class AgentSpec(Generic[TContext, TOutput]):
    """An immutable agent declaration.

    ``AgentSpec(output=City)`` (an attrs class, dataclass, TypedDict, pydantic model or any type
    hint) makes the agent answer with a validated ``City``: runs return ``RunResult[City]``. A
    JSON Schema ``dict`` or an :class:`OutputSchema` work too. Without ``output`` the agent
    answers text (``RunResult[str]``).

    Attributes:
        id: unique per runtime; names the agent in states, events and sessions.
        name: a human-readable name.
        instructions: the system prompt, or a (sync or async) function of the run context.
        description: what the agent does (handoff and tool descriptions).
        model: ``"provider:model"``; the runtime's default model when omitted.
        tools: the registered tool names (or :class:`RefSpec`) the agent may call.
        handoffs: agents it may hand the conversation to.
        output: the structured output schema (see above).
        input_guardrails / output_guardrails: checks before the first model call and on the
            final output.
        middleware: registered middleware references.
        limits: run limits merged over the runtime's.
        metadata: JSON metadata (part of the digest).
        model_settings: sampling and request settings of every model call (part of the digest);
            a run's ``model_settings=`` is merged over them.
        output_retries: how many times output that fails the schema is sent back to the model
            with the validation errors before the run fails (``STRUCTURED_OUTPUT_INVALID``).

    Equality is by :meth:`digest`-relevant content plus identity of callables, so two specs built
    the same way compare equal.
    """

    id: str
    name: str
    instructions: str | Callable[[RunContext[TContext]], str | Awaitable[str]]
    description: str | None = None
    model: str | ModelRefParts | None = None
    tools: tuple[str | RefSpec, ...] = attrs.field(default=(), converter=_as_tuple("tools"))
    handoffs: tuple[HandoffRef, ...] = attrs.field(default=(), converter=_as_tuple("handoffs"))
    output: OutputSchema[TOutput] | None = None
    input_guardrails: tuple[InputGuardrail, ...] = attrs.field(
        default=(), converter=_as_tuple("inputGuardrails")
    )
    output_guardrails: tuple[OutputGuardrail, ...] = attrs.field(
        default=(), converter=_as_tuple("outputGuardrails")
    )
    middleware: tuple[str | RefSpec, ...] = attrs.field(
        default=(), converter=_as_tuple("middleware")
    )
    limits: RunLimitsPatch | None = None
    metadata: JsonObject | None = None
    model_settings: ModelSettings | None = None
    output_retries: int = DEFAULT_OUTPUT_RETRIES

    @overload
    def __init__(
        self: AgentSpec[Any, str],
        *,
        id: str,
        name: str,
        instructions: Instructions,
        output: None = None,
        **options: Unpack[AgentSpecOptions],
    ) -> None: ...

    @overload
    def __init__(
        self: AgentSpec[Any, _O],
        *,
        id: str,
        name: str,
        instructions: Instructions,
        output: type[_O] | OutputSchema[_O],
        **options: Unpack[AgentSpecOptions],
    ) -> None: ...

    @overload
    def __init__(
        self: AgentSpec[Any, Any],  # a JSON Schema says nothing about the value's type
        *,
        id: str,
        name: str,
        instructions: Instructions,
        output: Mapping[str, JsonLike],
        **options: Unpack[AgentSpecOptions],
    ) -> None: ...

    def __init__(
        self,
        *,
        id: str,
        name: str,
        instructions: Instructions,
        output: object = None,
        **options: Unpack[AgentSpecOptions],
    ) -> None:
        agent_id = id if isinstance(id, str) else ""  # pyright: ignore[reportUnnecessaryIsInstance]
        metadata = options.get("metadata")
        if metadata is not None and isinstance(metadata, Mapping) and type(metadata) is not dict:  # pyright: ignore[reportUnnecessaryIsInstance]
            options["metadata"] = dict(metadata)
        init = cast(Any, self).__attrs_init__
        init(
            id=id,
            name=name,
            instructions=instructions,
            output=output_schema_of(output, agent_id),
            **options,
        )

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
        if self.model_settings is not None and not isinstance(self.model_settings, ModelSettings):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise AgentSpecError(
                f'Agent "{self.id}" model_settings must be a ModelSettings.',
                field="modelSettings",
            )
        retries = self.output_retries
        if type(retries) is not int or not 0 <= retries <= 100:
            raise AgentSpecError(
                f'Agent "{self.id}" output_retries must be an int between 0 and 100.',
                field="outputRetries",
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
        # Added after 1.0 previews: present only when set, so earlier digests stay valid.
        if self.model_settings is not None and not self.model_settings.is_empty:
            data["modelSettings"] = self.model_settings.to_json()
        if self.output_retries != DEFAULT_OUTPUT_RETRIES:
            data["outputRetries"] = self.output_retries
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
            and self.model_settings == other_spec.model_settings
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
