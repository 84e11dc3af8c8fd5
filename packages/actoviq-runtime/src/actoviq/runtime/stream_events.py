"""Mapping provider stream events to run event types and payloads (spec 03 §5.2, §5.4)."""

from __future__ import annotations

from typing import cast

from actoviq.core import UNSET, JsonObject, JsonValue, ModelRefParts
from actoviq.providers import (
    ModelStreamEvent,
    ProviderEvent,
    ReasoningDelta,
    RefusalDelta,
    ResolvedModel,
    ResponseCompleted,
    TextDelta,
    ToolCallDelta,
    UsageReport,
)

__all__ = ["model_ref_json", "stream_event_payload"]


def model_ref_json(model: str | ModelRefParts | ResolvedModel) -> JsonValue:
    """The model reference as it appears in ``model.requested`` (unresolved)."""
    if isinstance(model, str):
        return model
    if isinstance(model, ResolvedModel):
        return f"{model.provider_id}:{model.model_id}"
    return cast(JsonValue, model.to_json())


def stream_event_payload(event: ModelStreamEvent) -> tuple[str, JsonObject]:
    """``(run event type, data)`` for one provider stream event."""
    if isinstance(event, TextDelta):
        data: JsonObject = {"delta": event.delta}
        if event.output_index is not None:
            data["outputIndex"] = event.output_index
        return "model.text.delta", data
    if isinstance(event, ToolCallDelta):
        data = {"callId": event.call_id}
        if event.name is not None:
            data["name"] = event.name
        data["argumentsDelta"] = event.arguments_delta
        if event.output_index is not None:
            data["outputIndex"] = event.output_index
        return "model.tool_call.delta", data
    if isinstance(event, ReasoningDelta):
        data = {}
        if event.delta is not None:
            data["delta"] = event.delta
        if event.opaque is not UNSET:
            data["opaque"] = event.opaque
        if event.output_index is not None:
            data["outputIndex"] = event.output_index
        return "model.reasoning.delta", data
    if isinstance(event, RefusalDelta):
        data = {"delta": event.delta}
        if event.output_index is not None:
            data["outputIndex"] = event.output_index
        return "model.refusal.delta", data
    if isinstance(event, UsageReport):
        return "model.usage", {"usage": cast(JsonObject, event.usage.to_json())}
    if isinstance(event, ProviderEvent):
        return "model.provider.event", {"provider": event.provider, "event": event.event}
    if isinstance(event, ResponseCompleted):  # pyright: ignore[reportUnnecessaryIsInstance]
        return "model.response.completed", {
            "responseId": event.response.id,
            "finishReason": event.response.finish_reason,
        }
    raise TypeError(f"Unknown model stream event {type(event).__name__}.")  # pragma: no cover
