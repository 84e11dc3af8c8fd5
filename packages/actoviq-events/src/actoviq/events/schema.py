"""JSON Schema (draft 2020-12) of the ``RunEvent`` envelope (decision D2).

``make docs`` publishes it as ``docs/schemas/run-event.schema.json``. ``type`` is an open string
(the known types are listed in ``EVENT_TYPES``). ``data`` is any JSON value for a type the catalogue
does not know; for every catalogued type (:mod:`actoviq.events.catalogue`) an ``if``/``then``
clause gives ``data`` the schema of its payload (objects that allow additive fields).
"""

from __future__ import annotations

from typing import Any, cast

from actoviq.core import JsonObject
from actoviq.events.envelope import SCHEMA_VERSION
from actoviq.events.payload_schema import event_payload_schemas

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
    payloads, defs = event_payload_schemas()
    schema["allOf"] = [
        {
            "if": {"properties": {"type": {"const": name}}, "required": ["type"]},
            "then": {"properties": {"data": payload}},
        }
        for name, payload in payloads.items()
    ]
    schema["$defs"] = defs
    return cast(JsonObject, schema)
