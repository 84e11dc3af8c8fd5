"""JSON Schema (draft 2020-12) of the ``RunEvent`` envelope (decision D2).

``make docs`` publishes it as ``docs/schemas/run-event.schema.json``. ``type`` is an open string
(the known types are listed in ``EVENT_TYPES``); ``data`` is any JSON value.
"""

from __future__ import annotations

from typing import Any, cast

from actoviq.core import JsonObject
from actoviq.events.envelope import SCHEMA_VERSION

__all__ = ["run_event_json_schema"]


def run_event_json_schema() -> JsonObject:
    """The envelope schema, with ``schemaVersion`` fixed to the version this package writes."""
    text: dict[str, Any] = {"type": "string", "minLength": 1}
    schema: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:actoviq:schema:run-event",
        "title": "Actoviq RunEvent envelope",
        "type": "object",
        "properties": {
            "schemaVersion": {"const": SCHEMA_VERSION},
            "eventId": text,
            "sequence": {"type": "integer", "minimum": 1},
            "runId": text,
            "parentRunId": text,
            "traceId": text,
            "spanId": text,
            "parentSpanId": text,
            "type": {"type": "string", "pattern": "^[a-z][a-z0-9_]*(\\.[a-z][a-z0-9_]*)*$"},
            "timestamp": {"type": "string", "format": "date-time"},
            "data": {},
        },
        "required": [
            "schemaVersion",
            "eventId",
            "sequence",
            "runId",
            "traceId",
            "spanId",
            "type",
            "timestamp",
            "data",
        ],
        "additionalProperties": False,
    }
    return cast(JsonObject, schema)
