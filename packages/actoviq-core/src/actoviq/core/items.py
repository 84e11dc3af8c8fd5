"""The 14 canonical item types (spec 02 §1.2, ADR-001).

Items are frozen, slotted, keyword-only attrs classes. The discriminator ``type`` is a class-level
constant, so ``match`` statements and ``isinstance`` both work. Construction validates every field
and raises :class:`~actoviq.core.errors.ItemValidationError` naming the wire field.

Example:
    >>> TextItem(role="user", text="Hello").type
    'text'
"""

from __future__ import annotations

from typing import Any, ClassVar, Final, Literal, TypeAlias, cast

import attrs

from actoviq.core._unset import UNSET, Unset
from actoviq.core._validate import (
    check_bool,
    check_json,
    check_json_object,
    check_literal,
    check_opt_json_object,
    check_opt_literal,
    check_opt_str,
    check_str,
)
from actoviq.core.errors import ItemValidationError
from actoviq.core.json import JsonObject, JsonValue

__all__ = [
    "ITEM_TYPES",
    "ArtifactRefItem",
    "AudioItem",
    "AudioSource",
    "Base64Source",
    "CanonicalItem",
    "DocumentItem",
    "DocumentSource",
    "ErrorItem",
    "ErrorSource",
    "FileSource",
    "HandoffCallItem",
    "HandoffResultItem",
    "ImageDetail",
    "ImageItem",
    "ImageSource",
    "InputItem",
    "MediaRole",
    "MessageRole",
    "OutputItem",
    "PreservedItem",
    "RawItem",
    "ReasoningItem",
    "RefusalItem",
    "ResultStatus",
    "StructuredItem",
    "TextItem",
    "ToolCallItem",
    "ToolResultItem",
    "UrlSource",
    "assert_output_item",
    "is_output_item",
]

MessageRole: TypeAlias = Literal["system", "user", "assistant"]
"""The role of a text item."""
MediaRole: TypeAlias = Literal["user", "assistant"]
"""The roles that may carry media items."""
ImageDetail: TypeAlias = Literal["auto", "low", "high"]
"""The resolution hint of an image item (`auto`, `low`, `high`)."""
ResultStatus: TypeAlias = Literal["success", "error"]
"""Whether a tool result item reports success or an error."""
ErrorSource: TypeAlias = Literal["model", "tool", "handoff", "provider", "runtime"]
"""Which part of a run produced an error item."""

_ROLES = ("system", "user", "assistant")
_MEDIA_ROLES = ("user", "assistant")
_STATUSES = ("success", "error")


# --- media sources -------------------------------------------------------------------------------


@attrs.frozen(kw_only=True, slots=True)
class UrlSource:
    """Media addressed by URL."""

    kind: ClassVar[Literal["url"]] = "url"
    url: str = attrs.field(validator=check_str)


@attrs.frozen(kw_only=True, slots=True)
class Base64Source:
    """Inline media: base64 ``data`` with its ``media_type`` (both required)."""

    kind: ClassVar[Literal["base64"]] = "base64"
    media_type: str = attrs.field(validator=check_str)
    data: str = attrs.field(validator=check_str)


@attrs.frozen(kw_only=True, slots=True)
class FileSource:
    """A provider or artifact-store file reference that an adapter resolves."""

    kind: ClassVar[Literal["file"]] = "file"
    file_id: str = attrs.field(validator=check_str)


MediaSource: TypeAlias = UrlSource | Base64Source | FileSource
ImageSource: TypeAlias = MediaSource
"""Where the bytes of an image item come from: a URL, inline base64 or a provider file id."""
AudioSource: TypeAlias = MediaSource
"""Where the bytes of an audio item come from: a URL, inline base64 or a provider file id."""
DocumentSource: TypeAlias = MediaSource
"""Where the bytes of a document item come from: a URL, inline base64 or a provider file id."""


def _check_source(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, UrlSource | Base64Source | FileSource):
        owner = getattr(type(instance), "type", type(instance).__name__)
        raise ItemValidationError(
            f"{owner}.source must be a UrlSource, Base64Source or FileSource, "
            f"got {type(value).__name__}.",
            field="source",
            item_type=str(owner),
        )


# --- the 14 items --------------------------------------------------------------------------------
# Field order follows the reference wire order: required fields, then optionals, then id/metadata.


@attrs.frozen(kw_only=True, slots=True)
class TextItem:
    """Text from the system, the user or the assistant."""

    type: ClassVar[Literal["text"]] = "text"
    role: MessageRole = attrs.field(validator=check_literal(_ROLES))
    text: str = attrs.field(validator=check_str)
    id: str | None = attrs.field(default=None, validator=check_opt_str)
    metadata: JsonObject | None = attrs.field(default=None, validator=check_opt_json_object)


@attrs.frozen(kw_only=True, slots=True)
class ImageItem:
    """An image; ``role`` is ``user``, ``assistant`` or absent (never ``system``)."""

    type: ClassVar[Literal["image"]] = "image"
    source: ImageSource = attrs.field(validator=_check_source)
    role: MediaRole | None = attrs.field(default=None, validator=check_opt_literal(_MEDIA_ROLES))
    detail: ImageDetail | None = attrs.field(
        default=None, validator=check_opt_literal(("auto", "low", "high"))
    )
    alt_text: str | None = attrs.field(default=None, validator=check_opt_str)
    id: str | None = attrs.field(default=None, validator=check_opt_str)
    metadata: JsonObject | None = attrs.field(default=None, validator=check_opt_json_object)


@attrs.frozen(kw_only=True, slots=True)
class AudioItem:
    """Audio, optionally with a transcript."""

    type: ClassVar[Literal["audio"]] = "audio"
    source: AudioSource = attrs.field(validator=_check_source)
    role: MediaRole | None = attrs.field(default=None, validator=check_opt_literal(_MEDIA_ROLES))
    transcript: str | None = attrs.field(default=None, validator=check_opt_str)
    id: str | None = attrs.field(default=None, validator=check_opt_str)
    metadata: JsonObject | None = attrs.field(default=None, validator=check_opt_json_object)


@attrs.frozen(kw_only=True, slots=True)
class DocumentItem:
    """A document (PDF, text…), optionally named."""

    type: ClassVar[Literal["document"]] = "document"
    source: DocumentSource = attrs.field(validator=_check_source)
    role: MediaRole | None = attrs.field(default=None, validator=check_opt_literal(_MEDIA_ROLES))
    name: str | None = attrs.field(default=None, validator=check_opt_str)
    media_type: str | None = attrs.field(default=None, validator=check_opt_str)
    id: str | None = attrs.field(default=None, validator=check_opt_str)
    metadata: JsonObject | None = attrs.field(default=None, validator=check_opt_json_object)


@attrs.frozen(kw_only=True, slots=True)
class ArtifactRefItem:
    """A reference to a large or durable payload held outside the conversation."""

    type: ClassVar[Literal["artifact_ref"]] = "artifact_ref"
    artifact_id: str = attrs.field(validator=check_str)
    name: str | None = attrs.field(default=None, validator=check_opt_str)
    media_type: str | None = attrs.field(default=None, validator=check_opt_str)
    description: str | None = attrs.field(default=None, validator=check_opt_str)
    id: str | None = attrs.field(default=None, validator=check_opt_str)
    metadata: JsonObject | None = attrs.field(default=None, validator=check_opt_json_object)


@attrs.frozen(kw_only=True, slots=True)
class ToolCallItem:
    """A model's request to call a tool; ``id`` links it to exactly one ``ToolResultItem``."""

    type: ClassVar[Literal["tool_call"]] = "tool_call"
    id: str = attrs.field(validator=check_str)
    name: str = attrs.field(validator=check_str)
    input: JsonObject = attrs.field(validator=check_json_object)
    metadata: JsonObject | None = attrs.field(default=None, validator=check_opt_json_object)


@attrs.frozen(kw_only=True, slots=True)
class ToolResultItem:
    """The result of one tool call; ``output`` may be JSON ``null``."""

    type: ClassVar[Literal["tool_result"]] = "tool_result"
    call_id: str = attrs.field(validator=check_str)
    status: ResultStatus = attrs.field(validator=check_literal(_STATUSES))
    output: JsonValue = attrs.field(validator=check_json)
    name: str | None = attrs.field(default=None, validator=check_opt_str)
    id: str | None = attrs.field(default=None, validator=check_opt_str)
    metadata: JsonObject | None = attrs.field(default=None, validator=check_opt_json_object)


@attrs.frozen(kw_only=True, slots=True)
class HandoffCallItem:
    """A transfer of the conversation to another agent."""

    type: ClassVar[Literal["handoff_call"]] = "handoff_call"
    id: str = attrs.field(validator=check_str)
    target_agent_id: str = attrs.field(validator=check_str)
    input: JsonValue = attrs.field(validator=check_json)
    metadata: JsonObject | None = attrs.field(default=None, validator=check_opt_json_object)


@attrs.frozen(kw_only=True, slots=True)
class HandoffResultItem:
    """The outcome of a handoff."""

    type: ClassVar[Literal["handoff_result"]] = "handoff_result"
    call_id: str = attrs.field(validator=check_str)
    target_agent_id: str = attrs.field(validator=check_str)
    status: ResultStatus = attrs.field(validator=check_literal(_STATUSES))
    output: JsonValue = attrs.field(validator=check_json)
    id: str | None = attrs.field(default=None, validator=check_opt_str)
    metadata: JsonObject | None = attrs.field(default=None, validator=check_opt_json_object)


@attrs.frozen(kw_only=True, slots=True)
class ReasoningItem:
    """Provider reasoning; ``opaque`` is never interpreted by core (any JSON, including null)."""

    type: ClassVar[Literal["reasoning"]] = "reasoning"
    opaque: JsonValue = attrs.field(validator=check_json)
    provider: str | None = attrs.field(default=None, validator=check_opt_str)
    summary: str | None = attrs.field(default=None, validator=check_opt_str)
    id: str | None = attrs.field(default=None, validator=check_opt_str)
    metadata: JsonObject | None = attrs.field(default=None, validator=check_opt_json_object)


@attrs.frozen(kw_only=True, slots=True)
class RawItem:
    """A provider item with no canonical equivalent: the lossless escape hatch."""

    type: ClassVar[Literal["raw"]] = "raw"
    provider: str = attrs.field(validator=check_str)
    value: JsonValue = attrs.field(validator=check_json)
    id: str | None = attrs.field(default=None, validator=check_opt_str)
    metadata: JsonObject | None = attrs.field(default=None, validator=check_opt_json_object)


@attrs.frozen(kw_only=True, slots=True)
class StructuredItem:
    """Validated structured output; ``role`` is always ``assistant``."""

    type: ClassVar[Literal["structured"]] = "structured"
    value: JsonValue = attrs.field(validator=check_json)
    schema_name: str | None = attrs.field(default=None, validator=check_opt_str)
    # attrs' overloads widen the literal default to str; the validator enforces the literal.
    role: Literal["assistant"] = attrs.field(  # pyright: ignore[reportAssignmentType]
        default="assistant", validator=check_literal(("assistant",))
    )
    id: str | None = attrs.field(default=None, validator=check_opt_str)
    metadata: JsonObject | None = attrs.field(default=None, validator=check_opt_json_object)


@attrs.frozen(kw_only=True, slots=True)
class RefusalItem:
    """The model refused; ``provider_data`` may be JSON null, so absent is :data:`UNSET`."""

    type: ClassVar[Literal["refusal"]] = "refusal"
    message: str = attrs.field(validator=check_str)
    provider_data: JsonValue | Unset = attrs.field(default=UNSET, validator=check_json)
    # attrs' overloads widen the literal default to str; the validator enforces the literal.
    role: Literal["assistant"] = attrs.field(  # pyright: ignore[reportAssignmentType]
        default="assistant", validator=check_literal(("assistant",))
    )
    id: str | None = attrs.field(default=None, validator=check_opt_str)
    metadata: JsonObject | None = attrs.field(default=None, validator=check_opt_json_object)


@attrs.frozen(kw_only=True, slots=True)
class ErrorItem:
    """An error recorded in the transcript (model, tool, handoff, provider or runtime)."""

    type: ClassVar[Literal["error"]] = "error"
    source: ErrorSource = attrs.field(
        validator=check_literal(("model", "tool", "handoff", "provider", "runtime"))
    )
    code: str = attrs.field(validator=check_str)
    message: str = attrs.field(validator=check_str)
    retryable: bool = attrs.field(validator=check_bool)
    call_id: str | None = attrs.field(default=None, validator=check_opt_str)
    details: JsonObject | None = attrs.field(default=None, validator=check_opt_json_object)
    id: str | None = attrs.field(default=None, validator=check_opt_str)
    metadata: JsonObject | None = attrs.field(default=None, validator=check_opt_json_object)


@attrs.frozen(kw_only=True, slots=True)
class PreservedItem:
    """An item of a ``type`` this version does not know, kept verbatim (D2: keep, never coerce).

    Only produced by ``item_from_json(..., preserve_unknown=True)``; it serialises back to exactly
    the mapping it was read from. Adapters reject it before the network.
    """

    data: JsonObject = attrs.field(validator=check_json_object)

    @property
    def type(self) -> str:
        """The unknown ``type`` string as read."""
        value = self.data.get("type")
        return value if isinstance(value, str) else ""


CanonicalItem: TypeAlias = (
    TextItem
    | ImageItem
    | AudioItem
    | DocumentItem
    | ArtifactRefItem
    | ToolCallItem
    | ToolResultItem
    | HandoffCallItem
    | HandoffResultItem
    | ReasoningItem
    | RawItem
    | StructuredItem
    | RefusalItem
    | ErrorItem
)
"""Any canonical conversation item: the union every provider, store and event speaks."""
InputItem: TypeAlias = CanonicalItem
"""A canonical item given as run input (any `CanonicalItem`)."""
OutputItem: TypeAlias = CanonicalItem
"""A canonical item produced by a run (any `CanonicalItem`)."""

ITEM_TYPES: Final[dict[str, type[CanonicalItem]]] = {
    cls.type: cls
    for cls in (
        TextItem,
        ImageItem,
        AudioItem,
        DocumentItem,
        ArtifactRefItem,
        ToolCallItem,
        ToolResultItem,
        HandoffCallItem,
        HandoffResultItem,
        ReasoningItem,
        RawItem,
        StructuredItem,
        RefusalItem,
        ErrorItem,
    )
}
"""Every canonical ``type`` string mapped to its class, in reference order."""


def is_output_item(item: object) -> bool:
    """True when ``item`` may be appended by a model or the runtime (assistant roles only)."""
    if not isinstance(item, tuple(ITEM_TYPES.values())):
        return False
    if isinstance(item, TextItem):
        return item.role == "assistant"
    if isinstance(item, ImageItem | AudioItem | DocumentItem):
        return item.role in (None, "assistant")
    return True


def assert_output_item(item: object) -> OutputItem:
    """Raise :class:`ItemValidationError` unless :func:`is_output_item` holds."""
    if not is_output_item(item):
        item_type = getattr(item, "type", type(item).__name__)
        raise ItemValidationError(
            f"{item_type} is not a valid output item: model and runtime output must have "
            "role 'assistant' (or no role for media).",
            field="role",
            item_type=str(item_type),
        )
    return cast(OutputItem, item)
