"""Source event type → semantic events (the table of spec 03 §6.3, step 5).

Pure functions over one run's :class:`~actoviq.surfaces._state.RunState`: each returns the
``(type, category, phase, data)`` tuples for one source event, whose ``data`` has already been
through surface redaction. The projector validates, stamps and numbers them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any, Final, cast

import attrs

from actoviq.core import JsonObject, JsonValue
from actoviq.events import Redactor, held_tail_start
from actoviq.surfaces._state import ArgumentBuffer, RunState, Snapshot
from actoviq.surfaces.types import SurfaceSemanticCategory as C
from actoviq.surfaces.types import SurfaceSemanticType as T

__all__ = [
    "MappingOptions",
    "Semantic",
    "flush_held",
    "map_source_event",
    "provider_event_view",
    "redact_piece",
    "release_text",
]

_OPENERS: Final = ("{", "[")

Semantic = tuple[T, C, str, JsonObject]
"""One semantic event before stamping: type, category, phase, data."""


@attrs.frozen(kw_only=True, slots=True)
class MappingOptions:
    """The projector options the mapping needs."""

    redactor: Redactor
    include_extensions: bool = True
    max_snapshot_chars: int = 16_384
    raw_tool_input_deltas: bool = False


def _count(value: object) -> int | None:
    """A non-negative int (bools and floats are not counts)."""
    return value if type(value) is int and value >= 0 else None


def _text(value: object) -> str | None:
    return value if type(value) is str else None


def _iteration(data: JsonObject, run: RunState) -> int:
    found = _count(data.get("iteration"))
    if found is None:
        found = _count(data.get("turn"))
    return run.iteration if found is None else found


def _block_index(data: JsonObject) -> int:
    found = _count(data.get("outputIndex"))
    if found is None:
        found = _count(data.get("index"))
    return 0 if found is None else found


def _snapshot(
    store: dict[tuple[int, object], Snapshot], key: tuple[int, object], limit: int
) -> Snapshot:
    found = store.get(key)
    if found is None:
        found = store[key] = Snapshot(limit)
    return found


def release_text(block: Snapshot, piece: str, redactor: Redactor) -> str:
    """Add a raw streamed ``piece`` to ``block``; return the redacted text that may show now.

    The tail that could still be the start of a secret stays in ``block.held`` until the next
    piece or the block's end shows what it is (:func:`actoviq.events.held_tail_start`), so a
    secret split across two deltas is never shown in part.
    """
    text = block.held + piece if block.held else piece
    cut = held_tail_start(text, stack_frames=True)
    if cut == len(text):
        block.held = ""
        return redact_piece(text, redactor)
    block.held = text[cut:]
    return redact_piece(text[:cut], redactor) if cut else ""


def redact_piece(text: str, redactor: Redactor) -> str:
    """Streamed text in surface mode (JSON held whole in it is also redacted by key)."""
    if text[:1] in _OPENERS:
        return cast(str, redactor.redact(text))
    return redactor.redact_text(text)


def _stream_delta(
    kind: T,
    category: C,
    store: dict[tuple[int, object], Snapshot],
    data: JsonObject,
    raw: JsonObject,
    run: RunState,
    options: MappingOptions,
) -> list[Semantic]:
    """``text.delta`` / ``reasoning.delta``: the delta and the block's snapshot so far."""
    piece = _text(raw.get("delta"))
    given = _text(data.get("snapshot"))
    if piece is None and given is None:
        return []  # e.g. an opaque-only reasoning delta: nothing a surface may show
    iteration = _iteration(data, run)
    index = _block_index(data)
    block = _snapshot(store, (iteration, index), options.max_snapshot_chars)
    delta = release_text(block, piece, options.redactor) if piece is not None else ""
    if given is not None:
        block.given = True
        snapshot = block.replace(given)
    else:
        snapshot = block.add(delta)
    out: JsonObject = {
        "delta": delta,
        "snapshot": snapshot,
        "outputIndex": index,
        "iteration": iteration,
    }
    if block.offset:
        out["snapshotOffset"] = block.offset
    return [(kind, category, "delta", out)]


def flush_held(run: RunState, options: MappingOptions) -> list[Semantic]:
    """A block ended (the model call, the run…): release every block's held text, redacted."""
    found: list[Semantic] = []
    for store, kind, category in (
        (run.reasoning, T.REASONING_DELTA, C.REASONING),
        (run.text, T.TEXT_DELTA, C.TEXT),
    ):
        for (iteration, index), block in store.items():
            if not block.held:
                continue
            delta = redact_piece(block.held, options.redactor)
            block.held = ""
            snapshot = block.text if block.given else block.add(delta)
            out: JsonObject = {
                "delta": delta,
                "snapshot": snapshot,
                "outputIndex": cast(int, index),
                "iteration": iteration,
            }
            if block.offset:
                out["snapshotOffset"] = block.offset
            if block.refusal:
                found.append((T.MODEL_CONTENT, C.MODEL, "refusal", {"kind": "refusal", **out}))
            else:
                found.append((kind, category, "delta", out))
    return found


def _call_key(data: JsonObject, iteration: int) -> str:
    call_id = _text(data.get("callId")) or _text(data.get("toolUseId"))
    return f"call:{call_id}" if call_id else f"block:{iteration}:{_block_index(data)}"


def _as_input(value: object, redactor: Redactor) -> JsonObject | None:
    """Arguments given whole (an object, or JSON text of one), redacted in surface mode."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if not isinstance(value, dict):
        return None
    return cast(JsonObject, redactor.redact(cast(JsonObject, value)))


def _tool_input_delta(
    data: JsonObject, raw: JsonObject, run: RunState, options: MappingOptions
) -> list[Semantic]:
    iteration = _iteration(data, run)
    key = _call_key(data, iteration)
    buffer = run.arguments.get(key)
    if buffer is None:
        buffer = run.arguments[key] = ArgumentBuffer()
    name = _text(data.get("name")) or _text(data.get("toolName"))
    if name:
        buffer.name = name
    fragment = _text(raw.get("argumentsDelta"))
    if fragment is None:
        fragment = _text(raw.get("delta"))
    given = _text(raw.get("snapshot"))
    if given is not None:
        buffer.reset_to(given)
    elif fragment is not None:
        buffer.add(fragment)
    length = _count(raw.get("argumentsLength"))
    if length is not None and fragment is None and given is None:
        buffer.length = length
    whole = raw.get("arguments")
    if whole is not None:
        buffer.complete = _as_input(whole, options.redactor)
    parsed = buffer.parse()
    complete: JsonObject | None = None
    if parsed is not None:
        complete = (
            parsed
            if parsed is buffer.complete
            else cast(JsonObject, options.redactor.redact(parsed))
        )
        buffer.complete = complete
    out: JsonObject = {
        "callId": _text(data.get("callId")) or _text(data.get("toolUseId")) or "",
        "name": buffer.name or "",
    }
    redact_text = options.redactor.redact_text
    if options.raw_tool_input_deltas:
        # Opt-in: argument text as it streams, text-scanned (a secret split across fragments
        # may still show in part; the default never shows unparsed argument text).
        out["delta"] = redact_text(fragment) if fragment is not None else ""
        joined = buffer.text()
        out["snapshot"] = redact_text(joined) if joined is not None else ""
    else:
        out["delta"] = ""
        out["snapshot"] = (
            json.dumps(complete, ensure_ascii=False, separators=(",", ":"))
            if complete is not None
            else ""
        )
    if complete is not None:
        out["input"] = complete
    out["argumentsLength"] = buffer.length
    out["outputIndex"] = _block_index(data)
    out["iteration"] = iteration
    return [(T.TOOL_INPUT_DELTA, C.TOOL, "input", out)]


def _tool_started(
    data: JsonObject, raw: JsonObject, run: RunState, timestamp: str, options: MappingOptions
) -> list[Semantic]:
    call = data.get("call")
    call_map = cast(JsonObject, call) if type(call) is dict else {}
    call_id = (
        _text(data.get("callId")) or _text(call_map.get("id")) or _text(data.get("toolUseId"))
    ) or ""
    name = _text(data.get("name")) or _text(call_map.get("name")) or ""
    out: JsonObject = dict(data)
    out["callId"] = call_id
    out["name"] = name
    out["publicName"] = _text(data.get("publicName")) or _text(call_map.get("publicName")) or name
    provider = data.get("provider", call_map.get("provider"))
    if provider is not None:
        out["provider"] = provider
    tool_input: JsonValue | None = data.get("input")
    if tool_input is None:
        tool_input = call_map.get("input")
    if tool_input is None and "arguments" in raw:
        tool_input = _as_input(raw["arguments"], options.redactor)
    if tool_input is None:
        buffer = run.arguments.get(f"call:{call_id}") if call_id else None
        if buffer is not None:
            parsed = buffer.parse()
            if parsed is not None:
                tool_input = (
                    parsed
                    if parsed is buffer.complete
                    else cast(JsonObject, options.redactor.redact(parsed))
                )
    if tool_input is not None:
        out["input"] = tool_input
    out["startedAt"] = _text(data.get("startedAt")) or _text(call_map.get("startedAt")) or timestamp
    out["iteration"] = _iteration(data, run)
    if call_id:
        run.remember_tool(call_id, out)
    return [(T.TOOL_STARTED, C.TOOL, "started", out)]


def _millis(timestamp: object) -> float | None:
    if not isinstance(timestamp, str):
        return None
    try:
        return datetime.fromisoformat(timestamp).timestamp() * 1000.0
    except ValueError:
        return None


def _tool_finished(
    source_type: str, data: JsonObject, run: RunState, timestamp: str
) -> list[Semantic]:
    result = data.get("result")
    result_map = cast(JsonObject, result) if type(result) is dict else {}
    call_id = (
        _text(data.get("callId")) or _text(result_map.get("id")) or _text(data.get("toolUseId"))
    ) or ""
    started = run.started_tools.pop(call_id, None) if call_id else None
    is_error = data.get("isError") is True or result_map.get("isError") is True
    if source_type == "tool.rejected":
        kind, phase = T.TOOL_REJECTED, "rejected"
    elif source_type != "tool.completed" or is_error:
        kind, phase = T.TOOL_FAILED, "failed"
    else:
        kind, phase = T.TOOL_COMPLETED, "completed"
    out: JsonObject = {**(started or {}), **data}
    out["callId"] = call_id
    out["name"] = (
        _text(data.get("name")) or _text(result_map.get("name")) or _text(out.get("name")) or ""
    )
    output = data.get("output", result_map.get("output"))
    if output is not None:
        out["output"] = output
    output_text = _text(data.get("outputText")) or _text(result_map.get("outputText"))
    if output_text is None:
        failure = data.get("failure")
        if type(failure) is dict:
            output_text = _text(cast(JsonObject, failure).get("message"))
    if output_text is not None:
        out["outputText"] = output_text
    out["isError"] = kind is not T.TOOL_COMPLETED
    completed_at = (
        _text(data.get("completedAt")) or _text(result_map.get("completedAt")) or timestamp
    )
    out["completedAt"] = completed_at
    duration = data.get("durationMs", result_map.get("durationMs"))
    if type(duration) not in (int, float):
        begin, end = _millis(out.get("startedAt")), _millis(completed_at)
        duration = round(end - begin, 3) if begin is not None and end is not None else None
    if duration is not None:
        out["durationMs"] = duration
    out["iteration"] = _iteration(data, run)
    return [(kind, C.TOOL, phase, out)]


def _error(data: JsonObject) -> JsonObject:
    source: JsonValue = data.get("error", data)
    if type(source) is str:
        return {"message": source}
    if type(source) is not dict:
        return {"message": "Unknown error"}
    mapping = cast(JsonObject, source)
    err: JsonObject = {"message": _text(mapping.get("message")) or "Unknown error"}
    for key in ("code", "name", "phase"):
        value = _text(mapping.get(key))
        if value is not None:
            err[key] = value
    if type(mapping.get("retryable")) is bool:
        err["retryable"] = mapping["retryable"]
    return err


def _usage(data: JsonObject, scope: str) -> list[Semantic]:
    usage = data.get("usage")
    if type(usage) is not dict:
        return []
    return [(T.USAGE, C.USAGE, "reported", {"scope": scope, "usage": usage})]


def _model_requested(data: JsonObject, run: RunState) -> list[Semantic]:
    found = _count(data.get("iteration"))
    if found is None:
        found = _count(data.get("turn"))
    iteration = run.iteration + 1 if found is None else found
    run.new_iteration(iteration)
    return [(T.REQUEST_STARTED, C.REQUEST, "started", {**data, "iteration": iteration})]


def _refusal(
    data: JsonObject, raw: JsonObject, run: RunState, options: MappingOptions
) -> list[Semantic]:
    found = _stream_delta(T.MODEL_CONTENT, C.MODEL, run.text, data, raw, run, options)
    block = run.text.get((_iteration(data, run), _block_index(data)))
    if block is not None:
        block.refusal = True
    return [(kind, cat, "refusal", {"kind": "refusal", **out}) for kind, cat, _, out in found]


def _simple(kind: T, category: C, phase: str) -> Callable[[JsonObject, RunState], list[Semantic]]:
    def build(data: JsonObject, run: RunState) -> list[Semantic]:
        return [(kind, category, phase, data)]

    return build


_SIMPLE: Final[dict[str, Callable[[JsonObject, RunState], list[Semantic]]]] = {
    "run.started": _simple(T.RUN_STARTED, C.RUN, "started"),
    "run.resumed": _simple(T.RUN_RESUMED, C.RUN, "resumed"),
    "model.response.completed": _simple(T.REQUEST_COMPLETED, C.REQUEST, "completed"),
    "model.fallback": _simple(T.MODEL_FALLBACK, C.MODEL, "fallback"),
    "tool.permission": _simple(T.TOOL_PERMISSION, C.TOOL, "permission"),
    "model.requested": _model_requested,
    "request.started": _model_requested,
}


def map_source_event(
    source_type: str,
    timestamp: str,
    data: JsonObject,
    raw: JsonObject,
    run: RunState,
    options: MappingOptions,
) -> list[Semantic]:
    """The semantics of one validated source event (``data`` redacted, ``raw`` as received)."""
    simple = _SIMPLE.get(source_type)
    if simple is not None:
        return simple(data, run)
    if source_type in ("model.text.delta", "response.text.delta"):
        return _stream_delta(T.TEXT_DELTA, C.TEXT, run.text, data, raw, run, options)
    if source_type in ("model.reasoning.delta", "response.thinking.delta"):
        clean = {k: v for k, v in data.items() if k not in ("opaque", "signature")}
        return _stream_delta(
            T.REASONING_DELTA, C.REASONING, run.reasoning, clean, raw, run, options
        )
    if source_type in ("model.tool_call.delta", "response.tool_input.delta"):
        return _tool_input_delta(data, raw, run, options)
    if source_type == "model.refusal.delta":
        return _refusal(data, raw, run, options)
    if source_type in ("model.content", "model.response", "response.content", "response.message"):
        phase = _text(data.get("kind")) or "content"
        return [(T.MODEL_CONTENT, C.MODEL, phase, data)]
    if source_type == "model.completed":
        out: JsonObject = {**data, "iteration": _iteration(data, run)}
        return [(T.MODEL_COMPLETED, C.MODEL, "completed", out), *_usage(data, "request")]
    if source_type == "model.usage":
        usage = data.get("usage", data)
        return [(T.USAGE, C.USAGE, "reported", {"scope": "request", "usage": usage})]
    if source_type in ("tool.started", "tool.call"):
        return _tool_started(data, raw, run, timestamp, options)
    if source_type == "tool.progress":
        progress = data.get("progress", data.get("data", data))
        message = (
            _text(cast(JsonObject, progress).get("message")) if type(progress) is dict else None
        )
        call_id = _text(data.get("callId")) or _text(data.get("toolUseId")) or ""
        out = {**data, "callId": call_id, "progress": progress, "iteration": _iteration(data, run)}
        if message is not None:
            out["message"] = message
        return [(T.TOOL_PROGRESS, C.TOOL, "progress", out)]
    if source_type in ("tool.completed", "tool.failed", "tool.rejected"):
        return _tool_finished(source_type, data, run, timestamp)
    if source_type in ("session.compacted", "conversation.compacted"):
        scope = _text(data.get("scope")) or source_type.split(".", 1)[0]
        return [(T.COMPACTION_COMPLETED, C.COMPACTION, "completed", {**data, "scope": scope})]
    if source_type in ("model.interrupted", "request.interrupted"):
        out = {**data, "scope": "request", "iteration": _iteration(data, run)}
        return [(T.INTERRUPTION_REQUESTED, C.INTERRUPTION, "request", out)]
    return _terminal_or_extension(source_type, data, run, options)


# Raw provider stream events (``model.provider.event``, an opt-in of the runtime) carry the
# model's output in pieces under provider-specific keys (``delta``, ``text``, ``content``,
# ``partial_json``…). A secret split across two of them is whole in neither, so no per-event scan
# can find it, and unlike the normalised text deltas they are not cut at secret-safe points.
# Their surface view keeps the structure (numbers, booleans, and the strings under the
# structural keys below) and withholds every other string: the replacement text stands in.
_STRUCTURAL_KEYS: Final = frozenset(
    {
        "callid",
        "contentindex",
        "event",
        "finishreason",
        "id",
        "index",
        "itemid",
        "messageid",
        "model",
        "name",
        "object",
        "outputindex",
        "provider",
        "responseid",
        "role",
        "sequencenumber",
        "status",
        "stopreason",
        "summaryindex",
        "tooluseid",
        "type",
    }
)


def _structural(key: str) -> bool:
    return key.lower().replace("_", "").replace("-", "") in _STRUCTURAL_KEYS


def provider_event_view(value: JsonValue, replacement: str, keep: bool = True) -> JsonValue:
    """The surface view of a (redacted) raw provider event: content strings withheld."""
    if type(value) is str:
        return value if keep or not value else replacement
    if type(value) is dict:
        return {
            key: provider_event_view(child, replacement, _structural(key))
            for key, child in cast(JsonObject, value).items()
        }
    if type(value) is list:
        return [provider_event_view(child, replacement, keep) for child in value]
    return value


def _terminal_or_extension(
    source_type: str, data: JsonObject, run: RunState, options: MappingOptions
) -> list[Semantic]:
    if source_type == "run.interrupted":
        run.release(interrupted=True)
        return [
            (T.INTERRUPTION_REQUESTED, C.INTERRUPTION, "run", {**data, "scope": "run"}),
            (T.TERMINAL, C.TERMINAL, "interrupted", {**data, "status": "interrupted"}),
        ]
    if source_type == "run.cancelled":
        run.release()
        return [
            (T.INTERRUPTION_CANCELLED, C.INTERRUPTION, "run", {**data, "scope": "run"}),
            (T.TERMINAL, C.TERMINAL, "cancelled", {**data, "status": "cancelled"}),
        ]
    if source_type in ("run.failed", "run.error", "error"):
        run.release()
        err = _error(data)
        return [
            (T.ERROR, C.ERROR, "failed", err),
            (T.TERMINAL, C.TERMINAL, "failed", {"status": "failed", "error": err}),
        ]
    if source_type in ("run.completed", "response.completed"):
        run.release()
        status = _text(data.get("status")) or "completed"
        return [(T.TERMINAL, C.TERMINAL, status, {**data, "status": status}), *_usage(data, "run")]
    if not options.include_extensions:
        return []
    if source_type == "model.provider.event":
        replacement = options.redactor.policy.replacement
        data = cast(JsonObject, provider_event_view(data, replacement))
    out: dict[str, Any] = {"producerType": source_type, **data}
    return [(T.EXTENSION, C.EXTENSION, "event", out)]
