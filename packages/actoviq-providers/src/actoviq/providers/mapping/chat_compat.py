"""How an OpenAI-compatible Chat Completions server differs from the official API (pure data).

:class:`OpenAICompat` is the profile :class:`~actoviq.providers.openai.OpenAIChatProvider` builds
its request bodies with. Its defaults are the official API's behaviour; the named presets hold
what the servers users run document (or were checked to do) differently:

- ``openai``: ``content: null``, ``max_completion_tokens`` (the official API).
- ``llama.cpp``: ``content: ""``, ``max_tokens``. llama-cpp-python's server answers 500 to a
  ``null`` or missing content and ignores ``max_completion_tokens``; llama.cpp's own
  ``llama-server`` accepts both choices.
- ``vllm``: ``content: null``, ``max_tokens``. vLLM takes both fields; ``max_tokens`` is honoured
  by every release.
- ``ollama``: ``content: ""``, ``max_tokens``. Ollama's compatibility layer documents
  ``max_tokens`` (not ``max_completion_tokens``) and string or part-list content only.

All four accept ``stream_options.include_usage`` (servers that do not send the usage chunk leave
a streamed call's usage unknown).

Example:
    >>> OpenAICompat.preset("llama.cpp").max_tokens_field
    'max_tokens'
"""

from __future__ import annotations

from typing import ClassVar, Final, Literal, TypeAlias

import attrs

from actoviq.providers.errors import ProviderConfigurationError

__all__ = ["AssistantToolContent", "MaxTokensField", "OpenAICompat", "OpenAICompatLike"]

AssistantToolContent: TypeAlias = Literal["null", "empty"]
MaxTokensField: TypeAlias = Literal["max_completion_tokens", "max_tokens"]


@attrs.frozen(kw_only=True, slots=True)
class OpenAICompat:
    """A Chat Completions compatibility profile; the defaults keep the official API's behaviour.

    Attributes:
        name: a label for messages and ``repr`` (the preset name, or ``"custom"``).
        assistant_tool_content: the ``content`` of an assistant message that only carries tool
            calls (or reasoning): ``"null"`` sends ``null`` (official API), ``"empty"`` sends
            ``""`` (servers that answer 500 to ``null``).
        max_tokens_field: the body field that carries a request's output-token limit, when one
            is set: ``"max_completion_tokens"`` (official API) or ``"max_tokens"``.
        stream_usage: ask for a final usage chunk on streamed calls
            (``stream_options.include_usage``); servers that ignore it leave usage unknown.
    """

    PRESETS: ClassVar[tuple[str, ...]] = ("openai", "llama.cpp", "vllm", "ollama")

    name: str = "custom"
    assistant_tool_content: AssistantToolContent = attrs.field(
        default="null", validator=attrs.validators.in_(("null", "empty"))
    )
    max_tokens_field: MaxTokensField = attrs.field(
        default="max_completion_tokens",
        validator=attrs.validators.in_(("max_completion_tokens", "max_tokens")),
    )
    stream_usage: bool = True

    @property
    def tool_call_content(self) -> str | None:
        """The ``content`` value sent with an assistant tool-call message."""
        return "" if self.assistant_tool_content == "empty" else None

    @classmethod
    def preset(cls, name: str) -> OpenAICompat:
        """The named preset: ``openai``, ``llama.cpp``, ``vllm`` or ``ollama``.

        ``llama-cpp``, ``llamacpp`` and ``llama_cpp`` name the llama.cpp preset too.

        Raises:
            ProviderConfigurationError: an unknown name (the message lists the known ones).
        """
        key = name.strip().lower().replace("_", "-")
        found = _PRESETS.get(_ALIASES.get(key, key))
        if found is None:
            raise ProviderConfigurationError(
                f"Unknown OpenAI-compatible server preset {name!r}; known presets: "
                f"{', '.join(cls.PRESETS)} (or build an OpenAICompat(...) yourself)."
            )
        return found

    @classmethod
    def llama_cpp(cls) -> OpenAICompat:
        """llama.cpp servers (llama-cpp-python's ``llama_cpp.server`` and ``llama-server``)."""
        return _PRESETS["llama.cpp"]

    @classmethod
    def vllm(cls) -> OpenAICompat:
        """VLLM's OpenAI-compatible server."""
        return _PRESETS["vllm"]

    @classmethod
    def ollama(cls) -> OpenAICompat:
        """Ollama's OpenAI compatibility endpoint (``/v1``)."""
        return _PRESETS["ollama"]


OpenAICompatLike: TypeAlias = "OpenAICompat | str"
"""A profile, or the name of a preset."""

OFFICIAL: Final = OpenAICompat(name="openai")
_PRESETS: Final[dict[str, OpenAICompat]] = {
    "openai": OFFICIAL,
    "llama.cpp": OpenAICompat(
        name="llama.cpp", assistant_tool_content="empty", max_tokens_field="max_tokens"
    ),
    "vllm": OpenAICompat(name="vllm", max_tokens_field="max_tokens"),
    "ollama": OpenAICompat(
        name="ollama", assistant_tool_content="empty", max_tokens_field="max_tokens"
    ),
}
_ALIASES: Final[dict[str, str]] = {
    "llama-cpp": "llama.cpp",
    "llamacpp": "llama.cpp",
    "llama-server": "llama.cpp",
}


def resolve_compat(value: OpenAICompatLike | None) -> OpenAICompat:
    """``value`` as a profile: ``None`` is the official API, a string names a preset."""
    if value is None:
        return OFFICIAL
    if isinstance(value, str):
        return OpenAICompat.preset(value)
    return value
