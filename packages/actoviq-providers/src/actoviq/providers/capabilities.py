"""Declared model capabilities and request preflight (spec 02 §2.2).

Capabilities are *declared*, never inferred from a URL or hostname. A provider resolves them in this
order: the adapter default, then the model table (or a full object) given by the caller, then the
caller's resolver, which has the last word. :func:`assert_request_capabilities` raises
:class:`~actoviq.core.CapabilityError` before any network call.

Example:
    >>> caps = merge_capabilities(MINIMAL_CAPABILITIES, {"streaming": True})
    >>> has_capability(caps, "streaming"), has_capability(caps, "input.image")
    (True, False)
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, Literal, TypeAlias, cast

import attrs

from actoviq.core import (
    ArtifactRefItem,
    AudioItem,
    CapabilityError,
    DocumentItem,
    ErrorItem,
    ImageItem,
    RawItem,
    ReasoningItem,
    RefusalItem,
    StructuredItem,
    TextItem,
    ToolCallItem,
    ToolResultItem,
    register_wire_class,
)
from actoviq.providers._item_scan import scan_items
from actoviq.providers.types import ModelRequest, ResolvedModel

__all__ = [
    "ALL_CAPABILITIES",
    "ANTHROPIC_MESSAGES_CAPABILITIES",
    "CAPABILITY_NAMES",
    "LEGACY_CAPABILITIES",
    "MINIMAL_CAPABILITIES",
    "OPENAI_CHAT_COMPAT_CAPABILITIES",
    "OPENAI_RESPONSES_CAPABILITIES",
    "CapabilitiesSource",
    "CapabilityResolver",
    "InputCapabilities",
    "ModelCapabilities",
    "ModelCapability",
    "OutputCapabilities",
    "ReasoningCapabilities",
    "ToolCapabilities",
    "assert_request_capabilities",
    "has_capability",
    "merge_capabilities",
    "required_capabilities_for_request",
    "resolve_model_capabilities",
    "unsupported_capabilities",
]


@attrs.frozen(kw_only=True, slots=True)
class InputCapabilities:
    """Which input modalities the model accepts."""

    text: bool = True
    image: bool = False
    audio: bool = False
    document: bool = False
    artifact: bool = False


@attrs.frozen(kw_only=True, slots=True)
class OutputCapabilities:
    """Which outputs the model produces (``structured``: JSON-schema output)."""

    text: bool = True
    image: bool = False
    audio: bool = False
    structured: bool = False


@attrs.frozen(kw_only=True, slots=True)
class ToolCapabilities:
    """Function tools, parallel calls in one turn, provider-hosted tools."""

    function: bool = False
    parallel: bool = False
    hosted: bool = False


@attrs.frozen(kw_only=True, slots=True)
class ReasoningCapabilities:
    """Reasoning requests and round-tripping of opaque reasoning items."""

    request: bool = False
    opaque_round_trip: bool = False


@attrs.frozen(kw_only=True, slots=True)
class ModelCapabilities:
    """Everything a model declares it supports (every field a bool; defaults = MINIMAL)."""

    input: InputCapabilities = InputCapabilities()
    output: OutputCapabilities = OutputCapabilities()
    tools: ToolCapabilities = ToolCapabilities()
    reasoning: ReasoningCapabilities = ReasoningCapabilities()
    streaming: bool = False
    prompt_caching: bool = False
    stop_sequences: bool = False
    provider_raw_round_trip: bool = False
    seed: bool = False


ModelCapability: TypeAlias = Literal[
    "input.text",
    "input.image",
    "input.audio",
    "input.document",
    "input.artifact",
    "output.text",
    "output.image",
    "output.audio",
    "output.structured",
    "tools.function",
    "tools.parallel",
    "tools.hosted",
    "reasoning.request",
    "reasoning.opaqueRoundTrip",
    "streaming",
    "promptCaching",
    "stopSequences",
    "providerRawRoundTrip",
    "seed",
]
"""A feature a model may support; requests needing a missing one are refused before the network."""

# dotted wire name -> (group attribute or None, member attribute)
_NAMES: Final[dict[str, tuple[str | None, str]]] = {
    "input.text": ("input", "text"),
    "input.image": ("input", "image"),
    "input.audio": ("input", "audio"),
    "input.document": ("input", "document"),
    "input.artifact": ("input", "artifact"),
    "output.text": ("output", "text"),
    "output.image": ("output", "image"),
    "output.audio": ("output", "audio"),
    "output.structured": ("output", "structured"),
    "tools.function": ("tools", "function"),
    "tools.parallel": ("tools", "parallel"),
    "tools.hosted": ("tools", "hosted"),
    "reasoning.request": ("reasoning", "request"),
    "reasoning.opaqueRoundTrip": ("reasoning", "opaque_round_trip"),
    "streaming": (None, "streaming"),
    "promptCaching": (None, "prompt_caching"),
    "stopSequences": (None, "stop_sequences"),
    "providerRawRoundTrip": (None, "provider_raw_round_trip"),
    "seed": (None, "seed"),
}
CAPABILITY_NAMES: Final[tuple[str, ...]] = tuple(_NAMES)
"""Every capability name, dotted and camelCase as on the wire."""

_GROUPS: Final[dict[str, type[Any]]] = {
    "input": InputCapabilities,
    "output": OutputCapabilities,
    "tools": ToolCapabilities,
    "reasoning": ReasoningCapabilities,
}


def _caps(enabled: set[str]) -> ModelCapabilities:
    groups: dict[str, dict[str, bool]] = {name: {} for name in _GROUPS}
    top: dict[str, bool] = {}
    for name, (group, member) in _NAMES.items():
        if group is None:
            top[member] = name in enabled
        else:
            groups[group][member] = name in enabled
    return ModelCapabilities(
        input=InputCapabilities(**groups["input"]),
        output=OutputCapabilities(**groups["output"]),
        tools=ToolCapabilities(**groups["tools"]),
        reasoning=ReasoningCapabilities(**groups["reasoning"]),
        **top,
    )


MINIMAL_CAPABILITIES: Final = _caps({"input.text", "output.text"})
"""Text in, text out: what every provider supports."""
ALL_CAPABILITIES: Final = _caps(set(_NAMES))
"""Every capability (for tests and fully featured providers)."""
OPENAI_RESPONSES_CAPABILITIES: Final = _caps(
    {
        "input.text", "input.image", "output.text", "output.structured", "tools.function",
        "tools.parallel", "tools.hosted", "reasoning.request", "reasoning.opaqueRoundTrip",
        "streaming", "promptCaching", "providerRawRoundTrip",
    }
)  # fmt: skip
"""What the OpenAI Responses adapter supports."""
OPENAI_CHAT_COMPAT_CAPABILITIES: Final = _caps(
    {
        "input.text", "input.image", "output.text", "output.structured", "tools.function",
        "tools.parallel", "streaming", "stopSequences", "providerRawRoundTrip", "seed",
    }
)  # fmt: skip
"""What the OpenAI Chat Completions adapter supports (also for compatible servers)."""
ANTHROPIC_MESSAGES_CAPABILITIES: Final = _caps(
    {
        "input.text", "input.image", "input.document", "output.text", "output.structured",
        "tools.function", "tools.parallel", "reasoning.request", "reasoning.opaqueRoundTrip",
        "streaming", "promptCaching", "stopSequences", "providerRawRoundTrip",
    }
)  # fmt: skip
"""What the Anthropic Messages adapter supports."""
LEGACY_CAPABILITIES: Final = _caps(
    {
        "input.text", "input.image", "input.document", "output.text", "tools.function",
        "tools.parallel", "reasoning.request", "reasoning.opaqueRoundTrip", "streaming",
        "stopSequences", "providerRawRoundTrip",
    }
)  # fmt: skip
"""What a provider wrapped from the 0.x model API supports."""


CapabilityResolver: TypeAlias = Callable[
    [ResolvedModel], "ModelCapabilities | Awaitable[ModelCapabilities]"
]
"""A function giving the capabilities of a resolved model (sync or async)."""
CapabilitiesSource: TypeAlias = (
    "ModelCapabilities | Mapping[str, ModelCapabilities] | CapabilityResolver"
)
"""A full object, a table ``{model_id or "*": caps}``, or a resolver ``(model) -> caps``."""


def merge_capabilities(base: ModelCapabilities, patch: Mapping[str, Any]) -> ModelCapabilities:
    """Return ``base`` with a deep-partial patch applied (dotted names or nested groups).

    ``patch`` may use dotted names (``{"input.image": True}``), group dicts
    (``{"input": {"image": True}}``) or top-level names (``{"promptCaching": True}``); both the
    camelCase wire names and the snake_case attribute names are accepted.
    """
    changes: dict[str, bool] = {}
    for key, value in patch.items():
        if isinstance(value, Mapping):
            for member, flag in cast(Mapping[str, Any], value).items():
                changes[f"{key}.{member}"] = bool(flag)
        else:
            changes[key] = bool(value)
    groups: dict[str, dict[str, bool]] = {name: {} for name in _GROUPS}
    top: dict[str, bool] = {}
    for key, flag in changes.items():
        target = _NAMES.get(key) or _by_attr(key)
        if target is None:
            raise ValueError(f"Unknown capability {key!r}; known: {', '.join(CAPABILITY_NAMES)}.")
        group, member = target
        if group is None:
            top[member] = flag
        else:
            groups[group][member] = flag
    evolved = {
        name: attrs.evolve(getattr(base, name), **members)
        for name, members in groups.items()
        if members
    }
    return attrs.evolve(base, **evolved, **top)


def _by_attr(key: str) -> tuple[str | None, str] | None:
    for group, member in _NAMES.values():
        dotted = member if group is None else f"{group}.{member}"
        if dotted == key:
            return group, member
    return None


def has_capability(caps: ModelCapabilities, name: str) -> bool:
    """True when ``caps`` declares ``name`` (``"input.image"``, ``"streaming"``); unknown: False."""
    target = _NAMES.get(name)
    if target is None:
        return False
    group, member = target
    holder: Any = caps if group is None else getattr(caps, group)
    return bool(getattr(holder, member))


async def resolve_model_capabilities(
    source: CapabilitiesSource | None,
    defaults: ModelCapabilities,
    model: ResolvedModel,
    resolver: CapabilityResolver | None = None,
) -> ModelCapabilities:
    """Resolve a model's capabilities: adapter default, then model table, then caller resolver.

    Args:
        source: ``None`` (the defaults, same object), a full :class:`ModelCapabilities`, a table
            keyed by model id with ``"*"`` as fallback (entries are full objects), or a resolver
            callable (its result replaces the defaults, as in the reference).
        defaults: the adapter's default capabilities.
        model: the resolved model.
        resolver: an additional caller resolver applied last.
    """
    caps = defaults
    if source is None:
        pass
    elif isinstance(source, ModelCapabilities):
        caps = source
    elif isinstance(source, Mapping):
        table = cast(Mapping[str, ModelCapabilities], source)
        caps = table.get(model.model_id) or table.get("*") or defaults
    else:
        caps = await _call(source, model)
    if resolver is not None:
        caps = await _call(resolver, model)
    return caps


async def _call(resolver: CapabilityResolver, model: ResolvedModel) -> ModelCapabilities:
    result = resolver(model)
    if inspect.isawaitable(result):
        result = await result
    if not isinstance(result, ModelCapabilities):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise TypeError(
            f"A capability resolver must return ModelCapabilities, got {type(result).__name__}."
        )
    return result


_ITEM_CAPABILITY: Final[dict[type[Any], str]] = {
    TextItem: "input.text",
    ImageItem: "input.image",
    AudioItem: "input.audio",
    DocumentItem: "input.document",
    ArtifactRefItem: "input.artifact",
    ToolCallItem: "tools.function",
    ToolResultItem: "tools.function",
    ReasoningItem: "reasoning.opaqueRoundTrip",
    StructuredItem: "input.text",
    RefusalItem: "input.text",
    ErrorItem: "input.text",
    RawItem: "providerRawRoundTrip",
}


def required_capabilities_for_request(
    request: ModelRequest, *, streaming: bool = False
) -> list[str]:
    """The capabilities ``request`` needs, unique, in the reference order (02 §2.2).

    Handoff items and unknown items add nothing here: adapters refuse them with
    :class:`~actoviq.core.UnsupportedItemError` instead.
    """
    return _required(request, _item_types(request), streaming)


def _item_types(request: ModelRequest) -> dict[type[Any], None]:
    """The types of the request's items, each once, in order of first appearance.

    The per-item checks then run over this handful of types instead of over every item; a long
    transcript that extends an earlier request's is scanned only after it (:mod:`._item_scan`).
    """
    return scan_items(request.input)[0]


def _required(request: ModelRequest, types: dict[type[Any], None], streaming: bool) -> list[str]:
    needed: dict[str, None] = {"output.text": None}
    if streaming:
        needed["streaming"] = None
    if request.output_schema is not None:
        needed["output.structured"] = None
    if request.reasoning is not None:
        needed["reasoning.request"] = None
    if request.prompt_cache_key:
        needed["promptCaching"] = None
    if request.stop_sequences:
        needed["stopSequences"] = None
    if request.seed is not None:
        needed["seed"] = None
    if request.tools:
        needed["tools.function"] = None
        if any(tool.hosted for tool in request.tools):
            needed["tools.hosted"] = None
    if request.parallel_tool_calls is True:
        needed["tools.parallel"] = None
    for modality in request.output_modalities or ():
        needed[f"output.{modality}"] = None
    for kind in types:
        name = _ITEM_CAPABILITY.get(kind)
        if name is not None:
            needed[name] = None
    return list(needed)


def unsupported_capabilities(caps: ModelCapabilities, required: list[str]) -> list[str]:
    """The names in ``required`` that ``caps`` does not declare, in order."""
    return [name for name in required if not has_capability(caps, name)]


_MISSING_LIMIT = 512
_MISSING: dict[tuple[object, ...], tuple[ModelCapabilities, list[str]]] = {}


def assert_request_capabilities(
    provider_id: str,
    model: ResolvedModel,
    caps: ModelCapabilities,
    request: ModelRequest,
    *,
    streaming: bool = False,
) -> None:
    """Raise :class:`~actoviq.core.CapabilityError` unless ``caps`` cover ``request``.

    Raw items of another provider are refused first (``providerRawRoundTrip``), then reasoning
    items of another provider (02 §6.8 item 10, S8), then missing capabilities.
    """
    # Only raw and reasoning items can belong to another provider: the scan lists those, so a
    # long text transcript costs nothing here.
    types, bound = scan_items(request.input)
    for item in bound:
        if isinstance(item, RawItem) and item.provider != provider_id:
            raise CapabilityError(
                f"Raw item for provider {item.provider} cannot be sent to provider {provider_id}.",
                provider_id=provider_id,
                model=model.model_id,
                capability="providerRawRoundTrip",
            )
        if (
            isinstance(item, ReasoningItem)
            and item.provider is not None
            and item.provider != provider_id
        ):
            raise CapabilityError(
                f"Reasoning item for provider {item.provider} cannot be sent to provider "
                f"{provider_id}.",
                provider_id=provider_id,
                model=model.model_id,
                capability="reasoning.opaqueRoundTrip",
            )
    needed = _required(request, types, streaming)
    # Capabilities are frozen values: what one lacks of a list of names is remembered by the
    # object's identity (the entry keeps it alive, so the id cannot be reused meanwhile).
    key = (id(caps), *needed)
    known = _MISSING.get(key)
    if known is not None and known[0] is caps:
        missing = known[1]
    else:
        missing = unsupported_capabilities(caps, needed)
        if len(_MISSING) >= _MISSING_LIMIT:
            _MISSING.clear()
        _MISSING[key] = (caps, missing)
    if missing:
        raise CapabilityError(
            f"Model {provider_id}/{model.model_id} does not support required capabilities: "
            f"{', '.join(missing)}.",
            provider_id=provider_id,
            model=model.model_id,
            capability=",".join(missing),
        )


def _group_decoder(group_cls: type[Any]) -> Callable[[Any], Any]:
    def decode(data: Any) -> Any:
        return group_cls(**{_snake(key): value for key, value in dict(data).items()})

    return decode


def _snake(name: str) -> str:
    return "".join(f"_{char.lower()}" if char.isupper() else char for char in name)


for _group_cls in (
    InputCapabilities,
    OutputCapabilities,
    ToolCapabilities,
    ReasoningCapabilities,
):
    register_wire_class(_group_cls)
register_wire_class(
    ModelCapabilities,
    decoders={name: _group_decoder(group_cls) for name, group_cls in _GROUPS.items()},
)
