"""Release gate: every canonical item survives a durable DBOS run's recorded result.

A durable run's workflow output is its ``RunResult`` as wire JSON, which DBOS stores with its
portable JSON serializer (the workflow is declared ``serialization_type=PORTABLE``); a reader in
another process gets it back through the same serializer and ``from_json``. The check writes a
result carrying the transcript through DBOS's own serializer (text in between, as stored) and
reads the items back.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from dbos import DBOSPortableJSONSerializer
from harness import register_persistence

from actoviq.core import CanonicalItem, RunResult, Usage, from_json
from actoviq.dbos import run_result_json

T = "2026-01-01T00:00:00.000Z"


async def _dbos_run_result(items: Sequence[CanonicalItem]) -> Sequence[CanonicalItem]:
    result: RunResult[Any] = RunResult(
        run_id="gate-run",
        agent_id="gate-agent",
        status="completed",
        output="done",
        items=tuple(items),
        usage=Usage(total_tokens=3),
        started_at=T,
        completed_at=T,
    )
    serializer = DBOSPortableJSONSerializer()
    written = run_result_json(result)  # what the workflow returns
    text = serializer.serialize(written)
    json.loads(text)  # strict JSON text, as stored
    reread = serializer.deserialize(text)
    if reread != written:
        raise AssertionError("the recorded run result did not round-trip exactly")
    return from_json(RunResult[Any], reread).items


register_persistence("dbos-run-result", _dbos_run_result)
