"""Helpers shared by the three mapping modules (spec 02 §2.8)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, cast

import attrs

from actoviq.core import (
    MAX_JSON_DEPTH,
    MAX_SAFE_INTEGER,
    UNSET,
    CanonicalItem,
    JsonObject,
    JsonValue,
    ProviderResponseError,
    RawItem,
    RefusalItem,
    StructuredItem,
    TextItem,
    ToolCallItem,
    Unset,
    UnsupportedItemError,
    Usage,
    well_formed_text,
)
from actoviq.providers.errors import ProviderOptionsError, ProviderStreamError
from actoviq.providers.types import (
    FinishReason,
    ModelRequest,
    ModelResponse,
    ModelStreamEvent,
    ProviderEvent,
    ResolvedModel,
)

__all__ = [
    "BaseStreamMapper",
    "MappingOptions",
    "as_dict",
    "as_index",
    "attach_structured_output",
    "compact",
    "dumps_js",
    "finish_reason",
    "json_object",
    "json_value",
    "merge_provider_options",
    "normalize_effort",
    "raw_output",
    "refusal_output",
    "require_object",
    "response_from",
    "safe_json_parse",
    "stream_error",
    "stringify_tool_value",
    "text_output",
    "tool_call_output",
    "unsupported",
    "usage_from_paths",
]


@attrs.frozen(kw_only=True, slots=True)
class MappingOptions:
    """How an adapter maps (ADR-001 / D4).

    Attributes:
        provider_id: the adapter instance id (owner of raw and reasoning items).
        include_raw_response: keep the whole provider response on ``ModelResponse.raw_response``.
        preserve_provider_items: keep unknown provider output as ``raw`` items (else dropped).
        emit_provider_events: re-emit provider stream events as ``provider.event`` (opt-in).
    """

    provider_id: str
    include_raw_response: bool = False
    preserve_provider_items: bool = True
    emit_provider_events: bool = False


def dumps_js(value: object) -> str:
    """``JSON.stringify`` bytes: compact separators, non-ASCII kept."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def compact(**fields: Any) -> dict[str, Any]:
    """A dict without the :data:`UNSET` / ``None``-meaning-absent entries (``None`` → dropped)."""
    return {key: value for key, value in fields.items() if value is not UNSET and value is not None}


def as_dict(value: object) -> dict[str, Any] | None:
    """``value`` as a str-keyed dict, or None."""
    return cast(dict[str, Any], value) if isinstance(value, dict) else None


def as_index(value: object) -> int | None:
    """``value`` when it is an int (not a bool): a stream event's position field."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def require_object(raw: object, provider_id: str, message: str) -> dict[str, Any]:
    """``raw`` as a dict.

    Raises:
        ProviderResponseError: ``raw`` is not an object (``message`` says from where).
    """
    data = as_dict(raw)
    if data is None:
        raise ProviderResponseError(message, provider_id=provider_id)
    return data


def safe_json_parse(value: object) -> object:
    """Parse a JSON string; on failure return the original string. Non-strings pass through."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except (ValueError, RecursionError):  # RecursionError: nested beyond the parser's stack
        return value


def stringify_tool_value(value: JsonValue | Unset) -> str:
    """A tool output as the provider's string content (strings unchanged, else compact JSON)."""
    if isinstance(value, str):
        return value
    return dumps_js(None if value is UNSET else value)


def json_value(value: object) -> JsonValue:
    """Lenient conversion of provider data to strict JSON (D2), without recursion.

    What strict JSON refuses is converted the way JavaScript would deliver it: non-finite
    numbers and integers beyond ±(2^53 - 1) become strings, text with lone UTF-16 surrogates is
    repaired (:func:`~actoviq.core.well_formed_text`: a pair split in two becomes its character,
    a lone one U+FFFD), other objects become their ``str``. A container that would sit
    ``MAX_JSON_DEPTH`` levels deep is kept as its JSON text, so the result (and a one-level
    wrapper around it) stays within the depth limit.
    """
    root: list[Any] = [None]
    stack: list[tuple[object, Any, Any, int]] = [(value, root, 0, 0)]
    while stack:
        current, target, slot, depth = stack.pop()
        target[slot] = _json_leaf(current, depth, stack)
    return cast(JsonValue, root[0])


def _json_leaf(value: object, depth: int, stack: list[tuple[object, Any, Any, int]]) -> Any:
    """``value`` converted; a container comes back empty with its children pushed on ``stack``."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return well_formed_text(str(value))
    if isinstance(value, int):
        number = int(value)
        return number if -MAX_SAFE_INTEGER <= number <= MAX_SAFE_INTEGER else str(number)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Mapping | list | tuple) and depth >= MAX_JSON_DEPTH - 1:
        try:
            return well_formed_text(json.dumps(value, ensure_ascii=False, default=str))
        except (ValueError, RecursionError):
            return "[nested too deep]"
    if isinstance(value, Mapping):
        mapping: dict[str, Any] = {}
        for key, child in cast(Mapping[object, object], value).items():
            if child is not UNSET:
                name = well_formed_text(str(key))
                mapping[name] = None
                stack.append((child, mapping, name, depth + 1))
        return mapping
    if isinstance(value, list | tuple):
        items: list[Any] = [None] * len(cast(Sequence[object], value))
        for index, child in enumerate(cast(Iterable[object], value)):
            stack.append((child, items, index, depth + 1))
        return items
    return well_formed_text(str(value))


def json_object(value: object) -> JsonObject:
    """A dict as JSON; None → ``{}``; anything else → ``{"raw": value}``."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return cast(JsonObject, json_value(cast(object, value)))
    return {"raw": json_value(value)}


def text_output(text: str) -> TextItem:
    """An assistant text item (surrogates repaired: a pair split across deltas is one character)."""
    return TextItem(role="assistant", text=well_formed_text(text))


def tool_call_output(
    call_id: str, name: str, arguments: object, *, empty_is_object: bool = True
) -> ToolCallItem:
    """A tool call; JSON-string arguments are parsed.

    An empty string means ``{}`` (02 §6.8 item 3) unless ``empty_is_object`` is False (the
    reference Responses mapping keeps it as ``{"raw": ""}``, pinned by a golden vector).
    """
    if isinstance(arguments, str):
        arguments = {} if not arguments.strip() and empty_is_object else safe_json_parse(arguments)
    return ToolCallItem(id=call_id, name=name, input=json_object(arguments))


def raw_output(provider: str, value: object) -> RawItem:
    """A provider item kept verbatim."""
    return RawItem(provider=provider, value=json_value(value))


def refusal_output(message: str, provider_data: object = UNSET) -> RefusalItem:
    """A refusal, with the provider's part when given."""
    message = well_formed_text(message)
    if provider_data is UNSET:
        return RefusalItem(message=message)
    return RefusalItem(message=message, provider_data=json_value(provider_data))


_FINISH: Final[dict[str, FinishReason]] = {
    "stop": "stop",
    "end_turn": "stop",
    "completed": "stop",
    "stop_sequence": "stop",  # 02 §6.8 item 3
    "length": "length",
    "max_tokens": "length",
    "max_output_tokens": "length",
    "incomplete": "length",
    "model_context_window_exceeded": "length",
    "tool_calls": "tool_calls",
    "tool_use": "tool_calls",
    "content_filter": "content_filter",
    "refusal": "refusal",
    "cancelled": "cancelled",
    "canceled": "cancelled",
    "failed": "error",
    "error": "error",
}


def finish_reason(value: object) -> FinishReason:
    """Map a provider stop/finish/status value (``pause_turn`` and unknown values: ``unknown``)."""
    return _FINISH.get(value, "unknown") if isinstance(value, str) else "unknown"


def _path(data: Mapping[str, Any], dotted: str) -> int | None:
    current: Any = data
    for part in dotted.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return None
        current = cast(Mapping[str, Any], current)[part]
    if isinstance(current, bool) or not isinstance(current, int | float):
        return None
    if not math.isfinite(current) or current < 0:
        return None
    return int(current)


def usage_from_paths(
    raw: object,
    *,
    input: Sequence[str],
    output: Sequence[str],
    total: Sequence[str] = (),
    cache_read: Sequence[str] = (),
    cache_write: Sequence[str] = (),
    reasoning: Sequence[str] = (),
    audio_input: Sequence[str] = (),
    audio_output: Sequence[str] = (),
) -> Usage | Unset:
    """Usage from the first finite number at each list of dotted paths; ``requests`` is 1.

    A ``raw`` that is not an object (the provider reported no usage) gives :data:`UNSET`:
    usage unknown, never zeros.
    """
    data = as_dict(raw)
    if data is None:
        return UNSET

    def first(paths: Sequence[str]) -> int | None:
        for path in paths:
            found = _path(data, path)
            if found is not None:
                return found
        return None

    tokens_in = first(input) or 0
    tokens_out = first(output) or 0
    explicit_total = first(total)
    return Usage(
        requests=1,
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        total_tokens=explicit_total if explicit_total is not None else tokens_in + tokens_out,
        cache_read_tokens=first(cache_read) or 0,
        cache_write_tokens=first(cache_write) or 0,
        reasoning_tokens=first(reasoning) or 0,
        audio_input_tokens=first(audio_input) or 0,
        audio_output_tokens=first(audio_output) or 0,
    )


def attach_structured_output(
    request: ModelRequest, output: list[CanonicalItem]
) -> JsonValue | Unset:
    """Parse the concatenated text when a schema was requested; append a structured item."""
    schema = request.output_schema
    if schema is None:
        return UNSET
    text = "".join(item.text for item in output if isinstance(item, TextItem))
    if not text:
        return UNSET
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested beyond the parser's stack
        return UNSET
    if _nested_beyond(value, MAX_JSON_DEPTH):
        # How deep the parser goes before RecursionError depends on the Python version (3.13
        # parses thousands of levels): past the depth limit the answer counts as no JSON on
        # every version, so it is retried and then STRUCTURED_OUTPUT_MISSING alike.
        return UNSET
    value = json_value(value)
    output.append(StructuredItem(value=value, schema_name=schema.name))
    return value


def _nested_beyond(value: object, limit: int) -> bool:
    """Whether parsed JSON holds a container more than ``limit`` levels deep (no recursion)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        current, depth = stack.pop()
        kind = type(current)
        if kind is dict:
            children: Any = cast(dict[str, object], current).values()
        elif kind is list:
            children = current
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def unsupported(item: object, provider_id: str, model: str, why: str = "") -> UnsupportedItemError:
    """The typed refusal for a canonical item an adapter does not map (ADR-001, D4)."""
    item_type = str(getattr(item, "type", type(item).__name__))
    reason = f" {why}" if why else ""
    return UnsupportedItemError(
        f"Provider {provider_id} cannot send canonical {item_type!r} items.{reason}",
        item_type=item_type,
        provider_id=provider_id,
        model=model,
        capability=_ITEM_CAPABILITY.get(item_type),
    )


_ITEM_CAPABILITY: Final[dict[str, str]] = {
    "audio": "input.audio",
    "artifact_ref": "input.artifact",
    "document": "input.document",
    "image": "input.image",
}


EFFORT_ORDER: Final = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
"""Canonical reasoning efforts, weakest first."""
OPENAI_EFFORTS: Final = frozenset({"none", "minimal", "low", "medium", "high", "xhigh"})
"""What Responses ``reasoning.effort`` and Chat ``reasoning_effort`` accept."""
ANTHROPIC_EFFORTS: Final = frozenset({"low", "medium", "high", "max"})
"""What Anthropic ``output_config.effort`` (and the legacy ``effort``) accept."""


def normalize_effort(effort: str, supported: frozenset[str]) -> str:
    """Map a canonical effort to one the API accepts, by one rule for every adapter.

    02 §6.8 item 10: a supported effort passes through; any other becomes the strongest
    supported effort not above it, or the weakest supported one when none is below it.

    So OpenAI (Responses and Chat) send ``max`` as ``xhigh``; Anthropic and legacy send ``none`` /
    ``minimal`` as ``low`` and ``xhigh`` as ``high``.

    Example:
        >>> normalize_effort("max", OPENAI_EFFORTS), normalize_effort("minimal", ANTHROPIC_EFFORTS)
        ('xhigh', 'low')
    """
    if effort in supported or effort not in EFFORT_ORDER:
        return effort
    below = [e for e in EFFORT_ORDER[: EFFORT_ORDER.index(effort)] if e in supported]
    if below:
        return below[-1]
    return next(e for e in EFFORT_ORDER if e in supported)


def merge_provider_options(
    request: ModelRequest, provider_id: str, reserved: frozenset[str], body: dict[str, Any]
) -> dict[str, Any]:
    """``{**provider_options[provider_id], **body}``; reserved keys raise (02 §6.8 item 15).

    Raises:
        ProviderOptionsError: the namespace value is not an object, or sets a reserved key.
    """
    options = request.provider_options or {}
    if provider_id not in options:
        return body
    namespace = options[provider_id]
    if not isinstance(namespace, dict):
        raise ProviderOptionsError(
            f"provider_options[{provider_id!r}] must be an object, got {type(namespace).__name__}."
        )
    clashes = sorted(key for key in namespace if key in reserved)
    if clashes:
        raise ProviderOptionsError(
            f"provider_options[{provider_id!r}] cannot set {', '.join(clashes)}: the adapter "
            "builds these from the request fields."
        )
    return {**namespace, **body}


def stream_error(provider_id: str, event: Mapping[str, Any]) -> ProviderResponseError:
    """A stream ``error`` event as a typed error (02 §6.8 items 2-3, S6)."""
    error = as_dict(event.get("error")) or dict(event)
    message = error.get("message")
    kind = error.get("code") or error.get("type")
    retryable = kind in ("overloaded_error", "rate_limit_error", "api_error", "server_error")
    return ProviderResponseError(
        f"Provider {provider_id} stream failed: {message if isinstance(message, str) else kind}.",
        provider_id=provider_id,
        retryable=retryable,
        details={"errorType": str(kind)} if kind else None,
    )


def response_from(
    data: Mapping[str, Any],
    *,
    fallback_id: str,
    model: ResolvedModel,
    request: ModelRequest,
    output: list[CanonicalItem],
    finish: FinishReason,
    usage: Usage | Unset,
    options: MappingOptions,
) -> ModelResponse:
    """A parsed provider response: its id (else ``fallback_id``), structured output, raw body.

    ``usage`` is :data:`UNSET` when the provider reported none (unknown, not zero).
    """
    structured = attach_structured_output(request, output)
    response_id = data.get("id")
    return ModelResponse(
        id=response_id if isinstance(response_id, str) and response_id else fallback_id,
        model=model,
        output=output,
        finish_reason=finish,
        usage=usage,
        structured_output=structured,
        raw_response=json_value(data) if options.include_raw_response else UNSET,
    )


class BaseStreamMapper:
    """State every stream mapper keeps (the call it maps for) and the helpers they share.

    The SDK mappers implement :meth:`_map_event` (one provider event to stream events) and set
    ``_terminal`` when the event that ends a stream arrives; :meth:`map` counts what it
    delivered, so a stream that ends without its terminal event fails with a
    :class:`~actoviq.providers.errors.ProviderStreamError` that is retryable only when nothing
    was delivered (:meth:`_incomplete`).
    """

    def __init__(self, model: ResolvedModel, request: ModelRequest, options: MappingOptions):
        self._model = model
        self._request = request
        self._options = options
        self._terminal = False  # the stream's terminal event arrived
        self._delivered = 0  # stream events returned by map() so far

    def map(self, event: Any) -> list[ModelStreamEvent]:
        """Events for one provider event (counted for :meth:`_incomplete`)."""
        out = self._map_event(event)
        self._delivered += len(out)
        return out

    def _map_event(self, event: Any) -> list[ModelStreamEvent]:
        raise NotImplementedError

    def _incomplete(self, api: str, terminal: str) -> ProviderStreamError:
        """The error for a stream that ended before its terminal event (``terminal``)."""
        delivered = self._delivered
        seen = f"after {delivered} event(s)" if delivered else "before any event"
        return ProviderStreamError(
            f"Provider {self._options.provider_id} ({api}) stream ended {seen} without its "
            f"terminal event ({terminal}): the server closed the stream early (for example a "
            "prompt longer than the model's context, or a dropped connection).",
            provider_id=self._options.provider_id,
            retryable=delivered == 0,
            details={"eventsDelivered": delivered, "terminalEvent": terminal},
        )

    def _provider_events(self, data: Mapping[str, Any]) -> list[ModelStreamEvent]:
        """The event re-emitted verbatim when ``emit_provider_events`` is on (not ``done``)."""
        if not self._options.emit_provider_events or data.get("type") == "done":
            return []
        return [ProviderEvent(provider=self._options.provider_id, event=json_value(data))]

    def _streamed_response(
        self,
        output: list[CanonicalItem],
        *,
        response_id: str,
        finish: FinishReason | None,
        usage: Usage | Unset,
    ) -> ModelResponse:
        """The response assembled from deltas; without a finish reason, from the tool calls."""
        structured = attach_structured_output(self._request, output)
        has_calls = any(isinstance(item, ToolCallItem) for item in output)
        return ModelResponse(
            id=response_id,
            model=self._model,
            output=output,
            finish_reason=finish or ("tool_calls" if has_calls else "stop"),
            usage=usage,
            structured_output=structured,
        )
