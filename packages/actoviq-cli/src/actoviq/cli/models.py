"""Model providers for ``--model provider:model``: one code path, offline or with a key.

Built-in provider ids: ``scripted`` (offline, see :mod:`actoviq.cli.scripted`),
``openai-responses``, ``openai-chat`` (keys from ``$OPENAI_API_KEY``) and ``anthropic``
(``$ANTHROPIC_API_KEY``). ``[providers.<id>]`` tables add more (an OpenAI-compatible server, a
``factory = "module:callable"``). Only the providers a command needs are built, and the SDKs are
imported only then.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final, cast

from actoviq.cli.config import PROVIDER_KINDS, CliSettings, ProviderSettings
from actoviq.cli.errors import (
    CliConfigError,
    CliExtraMissingError,
    CliUsageError,
    ProviderKeyMissingError,
)
from actoviq.cli.loading import load_reference
from actoviq.core import JsonObject
from actoviq.providers import ModelProvider, ModelRegistry

__all__ = [
    "DEFAULT_KEY_VARIABLES",
    "build_registry",
    "describe_providers",
    "provider_id_of",
    "provider_settings",
]

DEFAULT_KEY_VARIABLES: Final[Mapping[str, str]] = {
    "openai-responses": "OPENAI_API_KEY",
    "openai-chat": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
}
_EXTRA: Final[Mapping[str, str]] = {
    "openai-responses": "openai",
    "openai-chat": "openai",
    "anthropic": "anthropic",
}
_LOCAL_KEY: Final = "unused-local-key"  # OpenAI-compatible servers often need no key


def provider_id_of(model: str) -> str:
    """The provider id of ``provider:model`` (a bare model name is refused: say which provider).

    Raises:
        CliUsageError: no ``provider:`` prefix.
    """
    provider, sep, name = model.partition(":")
    if not sep or not provider or not name:
        raise CliUsageError(
            f"Model {model!r} must be 'provider:model' (e.g. openai-responses:gpt-4.1-mini, "
            "anthropic:claude-sonnet-4-5, or scripted:demo offline).",
            details={"model": model},
        )
    return provider


def provider_settings(settings: CliSettings, provider_id: str) -> ProviderSettings:
    """The configured provider, or a built-in one by id.

    Raises:
        CliUsageError: neither configured nor built in.
    """
    configured = settings.providers.get(provider_id)
    if configured is not None:
        return configured
    if provider_id in PROVIDER_KINDS:
        return ProviderSettings(id=provider_id, kind=provider_id)
    known = sorted({*PROVIDER_KINDS, *settings.providers})
    raise CliUsageError(
        f"Unknown model provider {provider_id!r} (known: {', '.join(known)}; add "
        f"[providers.{provider_id}] to actoviq.toml for another one).",
        details={"provider": provider_id},
    )


def _key(config: ProviderSettings, environ: Mapping[str, str]) -> str | None:
    variable = config.api_key_env or DEFAULT_KEY_VARIABLES.get(config.kind)
    value = environ.get(variable) if variable else None
    if value:
        return value
    if config.base_url is not None:
        return _LOCAL_KEY
    if variable is not None:
        raise ProviderKeyMissingError(config.id, variable)
    return None


def _sdk_options(config: ProviderSettings, key: str | None) -> dict[str, Any]:
    options: dict[str, Any] = {"id": config.id, "api_key": key}
    if config.base_url is not None:
        options["base_url"] = config.base_url
    if config.timeout is not None:
        options["timeout"] = config.timeout
    if config.max_retries is not None:
        options["max_retries"] = config.max_retries
    return options


def _build(settings: CliSettings, config: ProviderSettings, environ: Mapping[str, str]) -> Any:
    if config.factory is not None:
        factory = load_reference(config.factory, "provider factory", roots=(settings.root,))
        if not callable(factory):
            raise CliConfigError("provider factory is not callable", key=f"providers.{config.id}")
        return factory()
    if config.kind == "scripted":
        from actoviq.cli.scripted import load_script, scripted_provider

        script = config.script
        if script is None and environ.get("ACTOVIQ_SCRIPT"):
            script = Path(environ["ACTOVIQ_SCRIPT"])
        return scripted_provider(load_script(script) if script else (), id=config.id)
    key = _key(config, environ)
    try:
        if config.kind == "anthropic":
            from actoviq.providers.anthropic import AnthropicProvider

            return AnthropicProvider(**_sdk_options(config, key))
        from actoviq.providers import openai as openai_adapters
    except ImportError as error:
        raise CliExtraMissingError(
            f"Provider {config.id!r}", _EXTRA[config.kind], error.name or "the SDK"
        ) from None
    if config.kind == "openai-chat":
        return openai_adapters.OpenAIChatProvider(**_sdk_options(config, key))
    return openai_adapters.OpenAIResponsesProvider(**_sdk_options(config, key))


def build_registry(
    settings: CliSettings, models: Iterable[str], *, environ: Mapping[str, str] | None = None
) -> ModelRegistry:
    """A registry with the providers ``models`` (``provider:model`` refs) need, built lazily.

    Raises:
        CliUsageError: an unknown provider or a model without a provider.
        ProviderKeyMissingError: a real provider without its key variable.
        CliExtraMissingError: the provider's SDK extra is not installed.
    """
    env = os.environ if environ is None else environ
    providers: list[ModelProvider] = []
    seen: set[str] = set()
    for model in models:
        provider_id = provider_id_of(model)
        if provider_id in seen:
            continue
        seen.add(provider_id)
        providers.append(
            cast(ModelProvider, _build(settings, provider_settings(settings, provider_id), env))
        )
    return ModelRegistry(providers)


def _availability(config: ProviderSettings, environ: Mapping[str, str]) -> tuple[bool, str | None]:
    if config.factory is not None or config.kind == "scripted":
        return True, None
    try:
        _key(config, environ)
    except ProviderKeyMissingError as error:
        return False, f"set {error.variable}"
    import importlib.util

    module = "anthropic" if config.kind == "anthropic" else "openai"
    if importlib.util.find_spec(module) is None:
        return False, f"pip install 'actoviq-cli[{_EXTRA[config.kind]}]'"
    return True, None


def describe_providers(
    settings: CliSettings, *, environ: Mapping[str, str] | None = None
) -> list[JsonObject]:
    """Every built-in and configured provider: kind, whether usable here and why not."""
    env = os.environ if environ is None else environ
    ids = [*PROVIDER_KINDS, *(p for p in settings.providers if p not in PROVIDER_KINDS)]
    described: list[JsonObject] = []
    for provider_id in ids:
        config = provider_settings(settings, provider_id)
        available, hint = _availability(config, env)
        entry: JsonObject = {
            "id": provider_id,
            "kind": config.kind,
            "configured": provider_id in settings.providers,
            "available": available,
        }
        variable = config.api_key_env or DEFAULT_KEY_VARIABLES.get(config.kind)
        if variable is not None and config.factory is None:
            entry["keyVariable"] = variable
        if config.base_url is not None:
            entry["baseUrl"] = config.base_url
        if hint is not None:
            entry["hint"] = hint
        described.append(entry)
    return described
