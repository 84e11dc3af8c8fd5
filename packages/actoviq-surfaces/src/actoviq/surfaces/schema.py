"""JSON Schema (draft 2020-12) of ``SurfaceSemanticEvent`` (decision D2).

``make docs`` publishes it as ``docs/schemas/surface-semantic-event.schema.json``.
"""

from __future__ import annotations

from typing import Any, cast

from actoviq.core import JsonObject
from actoviq.surfaces.types import SEMANTIC_VERSION, SurfaceSemanticCategory, SurfaceSemanticType

__all__ = ["surface_semantic_event_json_schema"]


def surface_semantic_event_json_schema() -> JsonObject:
    """The wire schema of one semantic event (``data`` is an open object)."""
    text: dict[str, Any] = {"type": "string", "minLength": 1}
    schema: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:actoviq:schema:surface-semantic-event",
        "title": "Actoviq SurfaceSemanticEvent",
        "type": "object",
        "properties": {
            "semanticVersion": {"const": SEMANTIC_VERSION},
            "semanticId": {"type": "string", "pattern": "^.+:(0|[1-9][0-9]*)$"},
            "sourceEventId": text,
            "sourceType": text,
            "projectionIndex": {"type": "integer", "minimum": 0},
            "sequence": {"type": "integer", "minimum": 1},
            "runId": text,
            "parentRunId": text,
            "traceId": text,
            "spanId": text,
            "parentSpanId": text,
            "timestamp": {"type": "string", "format": "date-time"},
            "type": {"enum": [member.value for member in SurfaceSemanticType]},
            "category": {"enum": [member.value for member in SurfaceSemanticCategory]},
            "phase": text,
            "data": {"type": "object"},
        },
        "required": [
            "semanticVersion",
            "semanticId",
            "sourceEventId",
            "sourceType",
            "projectionIndex",
            "sequence",
            "runId",
            "traceId",
            "spanId",
            "timestamp",
            "type",
            "category",
            "phase",
            "data",
        ],
        "additionalProperties": False,
    }
    return cast(JsonObject, schema)
