"""``ModelSettings``: how an agent's model calls are sampled and shaped (issue 14 §1).

Settings live on the :class:`~actoviq.core.AgentSpec` (part of its digest) and may be given per
run (``model_settings=`` on ``run``/``stream``/``resume``); the run's settings are merged over the
agent's with :meth:`ModelSettings.merged`. The runtime turns them into the fields of the provider
request; the provider's capability preflight refuses a setting the model cannot take with a
:class:`~actoviq.core.CapabilityError` before any network call.

Example:
    >>> settings = ModelSettings(temperature=0.2, reasoning=ReasoningSettings(effort="low"))
    >>> settings.merged(ModelSettings(temperature=0.7)).temperature
    0.7
    >>> to_json(settings)
    {'temperature': 0.2, 'reasoning': {'effort': 'low'}}
"""

from __future__ import annotations

import math
import reprlib
from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal, TypeAlias, cast

import attrs

from actoviq.core._json_rules import has_surrogate
from actoviq.core.converter import converter, register_wire_class, to_json
from actoviq.core.errors import AgentSpecError
from actoviq.core.json import JsonLike, JsonObject, find_json_violation

__all__ = [
    "REASONING_EFFORTS",
    "REASONING_SUMMARIES",
    "ModelSettings",
    "ReasoningEffort",
    "ReasoningSettings",
    "ReasoningSummary",
    "ToolChoiceSetting",
]

ReasoningEffort: TypeAlias = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]
"""How much reasoning to request from a model that supports it."""
ReasoningSummary: TypeAlias = Literal["none", "auto", "concise", "detailed"]
"""Which reasoning summary to request from a model that supports it."""
REASONING_EFFORTS: Final = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
"""Every accepted `ReasoningEffort` value, weakest first."""
REASONING_SUMMARIES: Final = ("none", "auto", "concise", "detailed")
"""Every accepted `ReasoningSummary` value."""

ToolChoiceSetting: TypeAlias = str
"""``"auto"``, ``"required"``, ``"none"``, or the name of the one tool the model must call."""

_MAX_SAFE: Final = 2**53 - 1


def _invalid(name: str, expected: str, value: object) -> AgentSpecError:
    # reprlib bounds the text: a huge or deeply nested value must not make the message huge or
    # raise RecursionError while the error is being built.
    return AgentSpecError(
        f"modelSettings.{name} must be {expected}, got {reprlib.repr(value)}.",
        field=f"modelSettings.{name}",
    )


def _text(name: str, value: object) -> None:
    if value is not None and (type(value) is not str or not value or has_surrogate(value)):
        raise _invalid(name, "a non-empty string of valid Unicode", value)


def _number(name: str, value: object, low: float, high: float | None = None) -> float | int | None:
    if value is None:
        return None
    if type(value) not in (int, float) or not math.isfinite(cast(float, value)):
        raise _invalid(name, "a finite number", value)
    number = cast(float, value)
    if number < low or (high is not None and number > high):
        bound = f"between {low} and {high}" if high is not None else f">= {low}"
        raise _invalid(name, f"a number {bound}", value)
    return cast("float | int", value)


def _integer(name: str, value: object, low: int) -> int | None:
    if value is None:
        return None
    if type(value) is not int or not low <= value <= _MAX_SAFE:
        raise _invalid(name, f"a safe integer >= {low}", value)
    return value


def _json_object(name: str) -> Any:
    def convert(value: Mapping[str, JsonLike] | None) -> JsonObject | None:
        if value is None:
            return None
        if not isinstance(value, Mapping) or find_json_violation(dict(value)) is not None:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise _invalid(name, "a JSON object", value)
        return cast(JsonObject, dict(value))

    return convert


def _stop(value: Iterable[str] | str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    given = cast(object, value)
    if isinstance(given, str):
        items: tuple[object, ...] = (given,)
    elif isinstance(given, (bytes, Mapping)) or not isinstance(given, Iterable):
        raise _invalid("stopSequences", "a string or a list of strings", value)
    else:
        items = tuple(cast(Iterable[object], given))
    for item in items:
        if item is None:
            raise _invalid("stopSequences", "non-empty strings", item)
        _text("stopSequences", item)
    return cast(tuple[str, ...], items)


@attrs.frozen(kw_only=True, slots=True)
class ReasoningSettings:
    """Ask the model to reason: effort, summary style, and (Anthropic) a thinking budget.

    Attributes:
        effort: how hard to think (adapters map it to the provider's nearest level).
        summary: the reasoning summary to return (OpenAI Responses).
        budget_tokens: the thinking budget in tokens (Anthropic extended thinking).
    """

    effort: ReasoningEffort | None = None
    summary: ReasoningSummary | None = None
    budget_tokens: int | None = None

    def __attrs_post_init__(self) -> None:
        if self.effort is not None and self.effort not in REASONING_EFFORTS:
            raise _invalid(
                "reasoning.effort", f"one of {', '.join(REASONING_EFFORTS)}", self.effort
            )
        if self.summary is not None and self.summary not in REASONING_SUMMARIES:
            raise _invalid(
                "reasoning.summary", f"one of {', '.join(REASONING_SUMMARIES)}", self.summary
            )
        _integer("reasoning.budgetTokens", self.budget_tokens, 1)


def _reasoning(value: ReasoningSettings | Mapping[str, Any] | None) -> ReasoningSettings | None:
    if value is None or isinstance(value, ReasoningSettings):
        return value
    if isinstance(value, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
        return converter.structure(dict(value), ReasoningSettings)
    raise _invalid("reasoning", "ReasoningSettings", value)


@attrs.frozen(kw_only=True, slots=True)
class ModelSettings:
    """Sampling and request options for an agent's model calls (all optional, ``None`` = unset).

    Attributes:
        temperature: sampling temperature (0 to 2).
        top_p: nucleus sampling mass (0 to 1).
        max_output_tokens: a per-request output cap. Without it requests carry no limit (an
            adapter that needs one uses the model's default); the run's ``limits`` still bound
            the whole run.
        stop_sequences: text at which the model stops (a string or a list of strings).
        seed: a sampling seed for (best-effort) reproducible output.
        reasoning: reasoning effort, summary and budget.
        parallel_tool_calls: let the model call several tools in one turn (``False`` forbids).
        tool_choice: ``"auto"``, ``"required"``, ``"none"`` or the name of a tool the model must
            call. Applies only when the agent has tools.
        prompt_cache_key: a prompt-cache key (providers that cache prompts).
        metadata: request metadata forwarded to the provider (OpenAI: at most 16 string values).
        provider_options: ``{provider_id: {...}}``: extra request fields for one provider, an
            escape hatch each adapter namespaces by its own id.
    """

    temperature: float | None = attrs.field(default=None)
    top_p: float | None = attrs.field(default=None)
    max_output_tokens: int | None = None
    stop_sequences: tuple[str, ...] | None = attrs.field(default=None, converter=_stop)
    seed: int | None = None
    reasoning: ReasoningSettings | None = attrs.field(default=None, converter=_reasoning)
    parallel_tool_calls: bool | None = None
    tool_choice: ToolChoiceSetting | None = None
    prompt_cache_key: str | None = None
    metadata: JsonObject | None = attrs.field(default=None, converter=_json_object("metadata"))
    provider_options: JsonObject | None = attrs.field(
        default=None, converter=_json_object("providerOptions")
    )

    def __attrs_post_init__(self) -> None:
        _number("temperature", self.temperature, 0.0, 2.0)
        _number("topP", self.top_p, 0.0, 1.0)
        _integer("maxOutputTokens", self.max_output_tokens, 1)
        if self.seed is not None and (type(self.seed) is not int or abs(self.seed) > _MAX_SAFE):
            raise _invalid("seed", "a safe integer", self.seed)
        if self.parallel_tool_calls is not None and type(self.parallel_tool_calls) is not bool:
            raise _invalid("parallelToolCalls", "a bool", self.parallel_tool_calls)
        if self.tool_choice is not None and (
            type(self.tool_choice) is not str
            or not self.tool_choice.strip()
            or has_surrogate(self.tool_choice)
        ):
            raise _invalid(
                "toolChoice", '"auto", "required", "none" or a tool name', self.tool_choice
            )
        _text("promptCacheKey", self.prompt_cache_key)
        options = self.provider_options
        if options is not None:
            for provider, value in options.items():
                if type(value) is not dict:
                    raise _invalid(f"providerOptions.{provider}", "a JSON object", value)

    def merged(self, *overrides: ModelSettings | None) -> ModelSettings:
        """These settings with each override applied in order (a later one wins).

        A set field replaces the earlier value; ``reasoning`` merges field by field,
        ``metadata`` key by key and ``provider_options`` per provider (key by key inside).
        """
        result = self
        for override in overrides:
            if override is None or override is result:
                continue
            changes: dict[str, Any] = {}
            for field in attrs.fields(ModelSettings):
                value = getattr(override, field.name)
                if value is None:
                    continue
                current = getattr(result, field.name)
                if field.name == "reasoning" and current is not None:
                    value = attrs.evolve(
                        current,
                        **{
                            name.name: getattr(value, name.name)
                            for name in attrs.fields(ReasoningSettings)
                            if getattr(value, name.name) is not None
                        },
                    )
                elif field.name == "metadata" and current is not None:
                    value = {**current, **value}
                elif field.name == "provider_options" and current is not None:
                    value = _merge_options(current, value)
                changes[field.name] = value
            if changes:
                result = attrs.evolve(result, **changes)
        return result

    def to_json(self) -> JsonObject:
        """The camelCase wire form (unset fields absent)."""
        return cast(JsonObject, to_json(self))

    @property
    def is_empty(self) -> bool:
        """True when no field is set."""
        return all(getattr(self, field.name) is None for field in attrs.fields(ModelSettings))


def _merge_options(base: JsonObject, patch: JsonObject) -> JsonObject:
    merged: JsonObject = dict(base)
    for provider, options in patch.items():
        earlier = merged.get(provider)
        if type(earlier) is dict and type(options) is dict:
            merged[provider] = {**earlier, **options}
        else:
            merged[provider] = options
    return merged


def _stop_from_json(data: object) -> object:
    return tuple(cast(list[object], data)) if type(data) is list else data


register_wire_class(ReasoningSettings)
register_wire_class(
    ModelSettings,
    decoders={
        "reasoning": lambda data: converter.structure(data, ReasoningSettings),
        "stop_sequences": _stop_from_json,
    },
)
