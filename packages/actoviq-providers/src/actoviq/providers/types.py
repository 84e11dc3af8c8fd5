"""The model-call contract: requests, responses, stream events and call context (spec 02 §2.1).

Everything here is a frozen attrs value registered with core's converter, so requests, responses and
stream events serialise to the reference camelCase wire JSON with :func:`actoviq.core.to_json` and
load back with :func:`actoviq.core.from_json`.

Example:
    >>> from actoviq.core import TextItem, to_json
    >>> request = ModelRequest(model="p:m", input=[TextItem(role="user", text="hi")])
    >>> to_json(request)["input"]
    [{'type': 'text', 'role': 'user', 'text': 'hi'}]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Literal, TypeAlias, cast

import attrs

from actoviq.core import (
    UNSET,
    AbortSignal,
    CanonicalItem,
    JsonObject,
    JsonValue,
    ModelRefParts,
    OutputItem,
    Unset,
    Usage,
    converter,
    from_json,
    item_from_json,
    register_wire_class,
)

__all__ = [
    "FinishReason",
    "ModelCallContext",
    "ModelOutputSchema",
    "ModelReasoningRequest",
    "ModelRefLike",
    "ModelRequest",
    "ModelResponse",
    "ModelStreamEvent",
    "ModelToolDefinition",
    "ModelToolPolicy",
    "OutputModality",
    "ProviderEvent",
    "ReasoningDelta",
    "ReasoningEffort",
    "ReasoningSummary",
    "RefusalDelta",
    "ResolvedModel",
    "ResponseCompleted",
    "TextDelta",
    "ToolCallDelta",
    "ToolChoice",
    "UsageReport",
]

FinishReason: TypeAlias = Literal[
    "stop", "length", "tool_calls", "content_filter", "refusal", "cancelled", "error", "unknown"
]
"""Why a model turn ended, normalised across providers."""
OutputModality: TypeAlias = Literal["text", "image", "audio"]
"""A kind of output a model can produce."""
ReasoningEffort: TypeAlias = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]
"""How much reasoning to request from a model that supports it."""
ReasoningSummary: TypeAlias = Literal["none", "auto", "concise", "detailed"]
"""Which reasoning summary to request from a model that supports it."""
ModelRefLike: TypeAlias = "str | ModelRefParts | ResolvedModel"
"""What may name a model: ``"provider:model"``, ``"model"`` (default provider), parts, resolved."""


def _tuple(value: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(value)


def _opt_tuple(value: Iterable[Any] | None) -> tuple[Any, ...] | None:
    return None if value is None else tuple(value)


@attrs.frozen(kw_only=True, slots=True)
class ResolvedModel:
    """A model reference after its provider accepted it.

    Attributes:
        provider_id: the id of the provider instance that owns the model.
        model_id: the provider's model name.
        ref: the reference as given, normalised to ``{provider, model}`` (02 §6.8 item 17).
        metadata: optional JSON-safe data from the provider.
    """

    provider_id: str
    model_id: str
    ref: ModelRefParts
    metadata: JsonObject | None = None


@attrs.frozen(kw_only=True, slots=True)
class ModelToolDefinition:
    """A tool the model may call: a JSON Schema for its input, or a provider-hosted tool."""

    name: str
    input_schema: JsonObject = attrs.field(factory=lambda: cast(JsonObject, {}))
    description: str | None = None
    strict: bool | None = None
    hosted: bool | None = None
    provider_options: JsonObject | None = None


@attrs.frozen(kw_only=True, slots=True)
class ToolChoice:
    """Force one named tool (``{type: "tool", name}`` on the wire)."""

    type: ClassVar[Literal["tool"]] = "tool"
    name: str


ModelToolPolicy: TypeAlias = "Literal['none', 'auto', 'required'] | ToolChoice"
"""Whether the model may, must or must not call tools, or which tool it must call."""


@attrs.frozen(kw_only=True, slots=True)
class ModelOutputSchema:
    """Ask for JSON output validated against ``schema``."""

    name: str
    schema: JsonObject
    description: str | None = None
    strict: bool | None = None


@attrs.frozen(kw_only=True, slots=True)
class ModelReasoningRequest:
    """Ask for reasoning: effort, summary style and (Anthropic) a thinking budget."""

    effort: ReasoningEffort | None = None
    summary: ReasoningSummary | None = None
    budget_tokens: int | None = None


@attrs.frozen(kw_only=True, slots=True)
class ModelRequest:
    """One model call, provider-neutral.

    Attributes:
        model: ``"provider:model"``, ``"model"``, ``ModelRefParts`` or a ``ResolvedModel``.
        input: the whole transcript (any canonical items, prior model output included).
        tools: tool definitions; ``tool_policy`` says whether/which the model must call.
        parallel_tool_calls: allow several tool calls in one turn.
        output_schema: request structured JSON output.
        output_modalities: requested output kinds (``text``/``image``/``audio``).
        reasoning: reasoning effort/summary/budget.
        max_output_tokens, temperature, top_p, stop_sequences: sampling controls.
        seed: a sampling seed (needs the ``seed`` capability: Chat Completions only).
        prompt_cache_key: enables prompt caching (Anthropic: only presence matters).
        metadata: forwarded provider metadata.
        provider_options: ``{provider_id: {...}}`` escape hatch, namespaced by adapter instance id.
    """

    model: str | ModelRefParts | ResolvedModel
    input: tuple[CanonicalItem, ...] = attrs.field(converter=_tuple)
    tools: tuple[ModelToolDefinition, ...] | None = attrs.field(default=None, converter=_opt_tuple)
    tool_policy: Literal["none", "auto", "required"] | ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    output_schema: ModelOutputSchema | None = None
    output_modalities: tuple[OutputModality, ...] | None = attrs.field(
        default=None, converter=_opt_tuple
    )
    reasoning: ModelReasoningRequest | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    stop_sequences: tuple[str, ...] | None = attrs.field(default=None, converter=_opt_tuple)
    prompt_cache_key: str | None = None
    metadata: JsonObject | None = None
    provider_options: JsonObject | None = None


@attrs.frozen(kw_only=True, slots=True)
class ModelCallContext:
    """Per-call context. Adapters use only ``signal`` and ``deadline``; the rest is carried.

    Attributes:
        signal: aborting it cancels the call (its reason is raised as-is when it is an exception).
        deadline: absolute Unix epoch **milliseconds**; a past deadline fails before the network.
    """

    run_id: str | None = None
    trace_id: str | None = None
    span_id: str | None = None
    signal: AbortSignal | None = None
    deadline: float | None = None
    metadata: JsonObject | None = None


@attrs.frozen(kw_only=True, slots=True)
class ModelResponse:
    """The outcome of one model call.

    Attributes:
        id: provider response id (never empty).
        model: the resolved model that answered.
        output: canonical output items, in order (unknown provider items kept as ``raw``).
        finish_reason: why the model stopped.
        usage: this call's usage (``requests`` is 1 for a real call); :data:`UNSET` when the
            provider reported none (unknown, which is not zero: see :attr:`has_usage`). A
            response built without ``usage`` has unknown usage.
        structured_output: parsed JSON when ``output_schema`` was requested; may be ``None``
            (JSON null); :data:`UNSET` when absent (see :attr:`has_structured_output`).
        raw_response: the whole provider response, only with ``include_raw_response=True``.
    """

    id: str
    model: ResolvedModel
    output: tuple[OutputItem, ...] = attrs.field(converter=_tuple)
    finish_reason: FinishReason = "stop"
    usage: Usage | Unset = UNSET
    structured_output: JsonValue | Unset = UNSET
    raw_response: JsonValue | Unset = UNSET

    @property
    def has_usage(self) -> bool:
        """True when the provider reported usage (:attr:`usage` is a :class:`Usage`)."""
        return self.usage is not UNSET

    @property
    def has_structured_output(self) -> bool:
        """True when ``structured_output`` is present (even when it is JSON null)."""
        return self.structured_output is not UNSET

    @property
    def text(self) -> str:
        """The concatenated assistant text of :attr:`output`."""
        from actoviq.core import TextItem

        return "".join(item.text for item in self.output if isinstance(item, TextItem))


# --- stream events -------------------------------------------------------------------------------


@attrs.frozen(kw_only=True, slots=True)
class TextDelta:
    """A piece of assistant text (``text.delta``)."""

    type: ClassVar[Literal["text.delta"]] = "text.delta"
    delta: str
    output_index: int | None = None


@attrs.frozen(kw_only=True, slots=True)
class ToolCallDelta:
    """A piece of a tool call's JSON arguments (``tool_call.delta``); ``call_id`` is final."""

    type: ClassVar[Literal["tool_call.delta"]] = "tool_call.delta"
    call_id: str
    arguments_delta: str
    name: str | None = None
    output_index: int | None = None


@attrs.frozen(kw_only=True, slots=True)
class ReasoningDelta:
    """A piece of reasoning text (``reasoning.delta``)."""

    type: ClassVar[Literal["reasoning.delta"]] = "reasoning.delta"
    delta: str | None = None
    opaque: JsonValue | Unset = UNSET
    output_index: int | None = None


@attrs.frozen(kw_only=True, slots=True)
class RefusalDelta:
    """A piece of a refusal message (``refusal.delta``; a port addition, 02 §6.8 items 2 and 4)."""

    type: ClassVar[Literal["refusal.delta"]] = "refusal.delta"
    delta: str
    output_index: int | None = None


@attrs.frozen(kw_only=True, slots=True)
class UsageReport:
    """Usage so far (``usage``); the last one of a stream is the call's usage."""

    type: ClassVar[Literal["usage"]] = "usage"
    usage: Usage


@attrs.frozen(kw_only=True, slots=True)
class ProviderEvent:
    """A provider's own event, re-emitted only when the caller opts in (D4, 02 §6.8 item 14)."""

    type: ClassVar[Literal["provider.event"]] = "provider.event"
    provider: str
    event: JsonValue


@attrs.frozen(kw_only=True, slots=True)
class ResponseCompleted:
    """The final response (``response.completed``); every successful stream yields exactly one."""

    type: ClassVar[Literal["response.completed"]] = "response.completed"
    response: ModelResponse


ModelStreamEvent: TypeAlias = (
    TextDelta
    | ToolCallDelta
    | ReasoningDelta
    | RefusalDelta
    | UsageReport
    | ProviderEvent
    | ResponseCompleted
)
"""Any event of a provider's normalised model stream."""
STREAM_EVENT_TYPES: dict[str, type[Any]] = {
    cls.type: cls
    for cls in (
        TextDelta,
        ToolCallDelta,
        ReasoningDelta,
        RefusalDelta,
        UsageReport,
        ProviderEvent,
        ResponseCompleted,
    )
}


# --- wire registration ---------------------------------------------------------------------------


def _ref_from_json(data: Any) -> ModelRefParts:
    if isinstance(data, str):
        provider, _, model = data.partition(":")
        return ModelRefParts(provider=provider, model=model)
    mapping = cast(Mapping[str, Any], data)
    return ModelRefParts(provider=str(mapping["provider"]), model=str(mapping["model"]))


def _model_from_json(data: Any) -> str | ModelRefParts | ResolvedModel:
    if isinstance(data, str):
        return data
    mapping = cast(Mapping[str, Any], data)
    if "providerId" in mapping:
        return from_json(ResolvedModel, data)
    return _ref_from_json(data)


def _policy_from_json(data: Any) -> Any:
    if isinstance(data, str):
        return data
    return ToolChoice(name=str(cast(Mapping[str, Any], data)["name"]))


def _event_from_json(data: Any) -> ModelStreamEvent:
    event_type = cast(Mapping[str, Any], data).get("type")
    cls = STREAM_EVENT_TYPES.get(event_type) if isinstance(event_type, str) else None
    if cls is None:
        from actoviq.core import UnknownItemTypeError

        raise UnknownItemTypeError(event_type, cast(Mapping[str, Any], data))
    return cast(ModelStreamEvent, from_json(cls, data))


register_wire_class(ModelRefParts)
register_wire_class(ResolvedModel, decoders={"ref": _ref_from_json})
register_wire_class(ModelToolDefinition)
register_wire_class(ToolChoice, type_tag=("type", "tool"))
register_wire_class(ModelOutputSchema)
register_wire_class(ModelReasoningRequest)
register_wire_class(
    ModelRequest,
    decoders={
        "model": _model_from_json,
        "input": lambda data: tuple(item_from_json(entry) for entry in data),
        "tools": lambda data: tuple(from_json(ModelToolDefinition, entry) for entry in data),
        "tool_policy": _policy_from_json,
        "output_schema": lambda data: from_json(ModelOutputSchema, data),
        "reasoning": lambda data: from_json(ModelReasoningRequest, data),
        "output_modalities": tuple,
        "stop_sequences": tuple,
    },
)
register_wire_class(
    ModelResponse,
    decoders={
        "model": lambda data: from_json(ResolvedModel, data),
        "output": lambda data: tuple(item_from_json(entry) for entry in data),
        "usage": lambda data: from_json(Usage, data),
    },
)
register_wire_class(ModelCallContext)
# The signal is live state, never wire data: drop it when serialising a context.
_context_hook = converter.get_unstructure_hook(ModelCallContext)
converter.register_unstructure_hook_func(
    lambda candidate: candidate is ModelCallContext,
    lambda context: _context_hook(attrs.evolve(context, signal=None)),
)


def _usage_from_json(data: Any) -> Usage:
    return from_json(Usage, data)


def _response_from_json(data: Any) -> ModelResponse:
    return from_json(ModelResponse, data)


for _tag, _cls in STREAM_EVENT_TYPES.items():
    _decoders: dict[str, Any] = {}
    if _cls is UsageReport:
        _decoders["usage"] = _usage_from_json
    if _cls is ResponseCompleted:
        _decoders["response"] = _response_from_json
    register_wire_class(_cls, type_tag=("type", _tag), decoders=_decoders)


def stream_event_from_json(data: Any) -> ModelStreamEvent:
    """Load one stream event from its ``type``-tagged wire mapping."""
    return _event_from_json(data)
