"""Turning 0.x options into the one runtime's parts: provider, limits, agents, inputs."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

from actoviq.compat.errors import CompatConfigurationError
from actoviq.core import (
    AgentSpec,
    CanonicalItem,
    ModelRefParts,
    ModelSettings,
    ReasoningSettings,
    RunLimitsPatch,
    TextItem,
)
from actoviq.providers import ModelProvider
from actoviq.providers.legacy import (
    LegacyModelApiProvider,
    LegacyModelRequest,
    ModelProviderLegacyAdapter,
    from_legacy_request,
)
from actoviq.runtime import AgentInput

__all__ = [
    "DEFAULT_LEGACY_MODEL",
    "AgentCache",
    "build_provider",
    "check_model",
    "convert_input",
    "limits_patch",
    "model_settings",
]

DEFAULT_LEGACY_MODEL: Final = "default"
"""The model id sent when a ``modelApi`` client names none (the ModelApi decides)."""
_TIERS: Final = frozenset({"min", "medium", "max"})
_PROVIDER_KEYS: Final = ("provider", "apiKey", "authToken", "baseURL", "maxRetries")


def check_model(model: object) -> str:
    """``model`` if it is a usable model id.

    Raises:
        NotImplementedError: a 0.x tier (``min``/``medium``/``max``).
        CompatConfigurationError: not a non-empty string.
    """
    if not isinstance(model, str) or not model.strip():
        raise CompatConfigurationError(f"model must be a non-empty model id; got {model!r}.")
    if model in _TIERS:
        raise NotImplementedError(
            f"model tier {model!r} is a 0.x feature actoviq.compat does not resolve; pass a full "
            "model id (e.g. 'gpt-4.1-mini' or 'claude-sonnet-4-5'), or set "
            "ModelRegistry(default_model=...) on an AgentRuntime."
        )
    return model


def build_provider(options: Mapping[str, Any]) -> ModelProvider:
    """The provider the client's runtime uses (created, never connected yet).

    ``modelApi`` wins and excludes the provider options. A ``ModelProviderLegacyAdapter`` is
    unwrapped: the runtime calls its provider directly, without a legacy round trip.

    Raises:
        CompatConfigurationError: conflicting or invalid provider options, or no model for a
            native provider.
    """
    model_api = options.get("modelApi")
    if model_api is not None:
        clashing = [key for key in _PROVIDER_KEYS if key in options]
        if clashing:
            raise CompatConfigurationError(
                f"modelApi replaces {', '.join(clashing)}: configure the ModelApi instead."
            )
        if isinstance(model_api, ModelProviderLegacyAdapter):
            return model_api.provider
        if not callable(getattr(model_api, "create_message", None)) or not callable(
            getattr(model_api, "stream_message", None)
        ):
            raise CompatConfigurationError(
                "modelApi must have create_message(request) and stream_message(request)."
            )
        return LegacyModelApiProvider(model_api=model_api)
    name = options.get("provider", "anthropic")
    if "model" not in options:
        raise CompatConfigurationError(
            f"model is required with provider={name!r}: pass a full model id, e.g. "
            "model='gpt-4.1-mini' or model='claude-sonnet-4-5'."
        )
    timeout_ms = options.get("timeoutMs")
    common: dict[str, Any] = {
        "api_key": options.get("apiKey"),
        "base_url": options.get("baseURL"),
        "timeout": None if timeout_ms is None else timeout_ms / 1000.0,
    }
    if "maxRetries" in options:
        common["max_retries"] = options["maxRetries"]
    if name == "openai":
        if "authToken" in options:
            raise CompatConfigurationError("authToken is an Anthropic option; use apiKey.")
        from actoviq.providers.openai import OpenAIResponsesProvider

        return OpenAIResponsesProvider(**common)
    if name == "anthropic":
        from actoviq.providers.anthropic import AnthropicProvider

        return AnthropicProvider(auth_token=options.get("authToken"), **common)
    raise CompatConfigurationError(f"provider must be 'anthropic' or 'openai'; got {name!r}.")


def limits_patch(options: Mapping[str, Any]) -> RunLimitsPatch | None:
    """The runtime limits the 0.x timeouts and iteration cap give (None when none is set)."""
    pairs = {
        "max_turns": options.get("maxToolIterations"),
        "run_deadline_ms": options.get("runTimeoutMs"),
        "tool_timeout_ms": options.get("toolTimeoutMs"),
        "model_call_timeout_ms": options.get("timeoutMs"),
    }
    given = {key: value for key, value in pairs.items() if value is not None}
    if not given:
        return None
    for key, value in given.items():
        if type(value) is not int or value <= 0:
            raise CompatConfigurationError(f"{key} must be a positive integer; got {value!r}.")
    return RunLimitsPatch(**given)


_TOOL_CHOICES: Final = {"auto": "auto", "any": "required", "none": "none"}


def _tool_choice(choice: object) -> dict[str, Any]:
    """The model settings of a legacy ``toolChoice`` (``{type, name?, disable_parallel_...}``)."""
    if not isinstance(choice, Mapping):
        raise CompatConfigurationError(
            "toolChoice must be {type: 'auto'|'any'|'tool'|'none', name?}; got "
            f"{type(choice).__name__}."
        )
    spec = cast(Mapping[str, Any], choice)
    kind, name = spec.get("type"), spec.get("name")
    fields: dict[str, Any] = {}
    if kind == "tool":
        if not isinstance(name, str) or not name:
            raise CompatConfigurationError("toolChoice of type 'tool' needs the tool's name.")
        fields["tool_choice"] = name
    elif kind in _TOOL_CHOICES:
        fields["tool_choice"] = _TOOL_CHOICES[kind]
    else:
        raise CompatConfigurationError(
            f"toolChoice type must be 'auto', 'any', 'tool' or 'none'; got {kind!r}."
        )
    disable = spec.get("disable_parallel_tool_use")
    if disable is not None:
        fields["parallel_tool_calls"] = not disable
    return fields


def model_settings(options: Mapping[str, Any]) -> ModelSettings | None:
    """The runtime :class:`~actoviq.core.ModelSettings` of the 0.x sampling options.

    ``maxTokens`` → ``max_output_tokens``, ``temperature``, ``topP`` → ``top_p``, ``toolChoice``
    → ``tool_choice`` (``any`` is ``required``) and ``parallel_tool_calls``, ``userId`` → request
    metadata ``user_id`` (merged into ``metadata``), ``effort`` → ``reasoning.effort`` (``auto``
    leaves it to the model). None when none is set.

    Raises:
        CompatConfigurationError: a malformed ``toolChoice`` or ``metadata``.
        AgentSpecError: a value ``ModelSettings`` refuses (e.g. a temperature above 2).
    """
    fields: dict[str, Any] = {}
    for option, field in (("maxTokens", "max_output_tokens"), ("temperature", "temperature")):
        if options.get(option) is not None:
            fields[field] = options[option]
    if options.get("topP") is not None:
        fields["top_p"] = options["topP"]
    if options.get("toolChoice") is not None:
        fields.update(_tool_choice(options["toolChoice"]))
    metadata = options.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise CompatConfigurationError("metadata must be a JSON object.")
    merged: dict[str, Any] = dict(cast(Mapping[str, Any], metadata or {}))
    if options.get("userId") is not None:
        merged["user_id"] = options["userId"]
    if merged:
        fields["metadata"] = merged
    effort = options.get("effort")
    if effort is not None and effort != "auto":
        fields["reasoning"] = ReasoningSettings(effort=effort)
    return ModelSettings(**fields) if fields else None


class AgentCache:
    """One registered :class:`AgentSpec` per (system prompt, model) the client runs with."""

    def __init__(
        self, provider_id: str, tools: Sequence[str], settings: ModelSettings | None = None
    ) -> None:
        self._provider_id = provider_id
        self._tools = tuple(tools)
        self._settings = settings
        self._agents: dict[tuple[str, str], AgentSpec[Any, Any]] = {}

    def get(self, system_prompt: str | None, model: str) -> AgentSpec[Any, Any]:
        """The agent for that prompt and model (built once)."""
        key = (system_prompt or "", model)
        found = self._agents.get(key)
        if found is not None:
            return found
        digest = hashlib.sha256(json.dumps(key).encode("utf-8")).hexdigest()[:16]
        agent: AgentSpec[Any, Any] = AgentSpec(
            id=f"compat-{digest}",
            name="compat",
            instructions=system_prompt or "",
            model=ModelRefParts(provider=self._provider_id, model=model),
            tools=self._tools,
            model_settings=self._settings,
        )
        self._agents[key] = agent
        return agent


def convert_input(value: object, provider_id: str) -> tuple[AgentInput, list[CanonicalItem], str]:
    """``(runtime input, canonical items, prompt text)`` of a 0.x input.

    A string is one user message; a list is the content blocks of one user message, mapped by
    the legacy bridge's block mapping (text, images, tool results, thinking; other blocks become
    raw items of the client's provider).

    Raises:
        TypeError: neither a string nor a list of content blocks.
    """
    if isinstance(value, str):
        return value, [TextItem(role="user", text=value)], value
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        blocks = list(cast(Sequence[object], value))
        if not all(isinstance(block, Mapping) for block in blocks):
            raise TypeError("run() input must be a string or a list of content blocks (dicts).")
        request: LegacyModelRequest = {
            "model": "-",
            "messages": [{"role": "user", "content": cast(list[Any], blocks)}],
            "max_tokens": 1,
        }
        items = list(from_legacy_request(request, provider_id).input)
        text = "".join(item.text for item in items if isinstance(item, TextItem))
        return items, items, text
    raise TypeError(
        f"run() input must be a string or a list of content blocks; got {type(value).__name__}."
    )
