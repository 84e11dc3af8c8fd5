"""How node outputs are persisted: strict JSON, with tags for orchestration's own values.

Plain JSON outputs are stored as they are. A :class:`~actoviq.orchestration.graph_loops.
LoopResult` and a collected :class:`~actoviq.orchestration.graph.WorkflowNodeFailure` are stored
tagged (``{"$actoviq": "<kind>", "value": ...}``)
and come back as the same types; a user object that happens to use the tag key is escaped. Any
other value is refused with :class:`WorkflowNodeOutputError` (agent nodes in durable runs use
``agent_workflow_node(output="value")``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, cast

from actoviq.core import JsonValue, JsonValueError, Unset, assert_json_value
from actoviq.orchestration.graph import WorkflowNodeFailure
from actoviq.orchestration.graph_loops import LoopResult
from actoviq.orchestration.graph_runs.errors import WorkflowNodeOutputError
from actoviq.orchestration.outcomes import ChildError

__all__ = ["TAG", "decode_output", "encode_output"]

TAG: Final = "$actoviq"


def encode_output(value: Any, *, run_id: str, node_key: str) -> JsonValue:
    """The stored form of a node's output.

    Raises:
        WorkflowNodeOutputError: the value is not strict JSON and has no codec.
    """
    if isinstance(value, WorkflowNodeFailure):
        return {TAG: "nodeFailure", "value": value.to_json()}
    if isinstance(value, LoopResult):
        inner = encode_output(value.to_json(), run_id=run_id, node_key=node_key)
        return {TAG: "loopResult", "value": inner}
    if isinstance(value, Mapping) and TAG in value:
        escaped = _checked(dict(cast(Mapping[str, Any], value)), run_id, node_key)
        return {TAG: "json", "value": escaped}
    return _checked(value, run_id, node_key)


def _checked(value: Any, run_id: str, node_key: str) -> JsonValue:
    try:
        return assert_json_value(value, "output")
    except JsonValueError as error:
        raise WorkflowNodeOutputError(
            f'Workflow node "{node_key}" output cannot be stored: {error} (return strict JSON; '
            'agent nodes in durable runs use output="value").',
            run_id=run_id,
            details={"nodeKey": node_key},
        ) from error


def decode_output(stored: JsonValue | Unset) -> Any:
    """The output a stored form stands for."""
    if isinstance(stored, Unset):
        return None
    if isinstance(stored, dict) and TAG in stored:
        kind = stored.get(TAG)
        value = stored.get("value")
        if kind == "loopResult" and isinstance(value, dict):
            return LoopResult.from_json(cast(Mapping[str, Any], value))
        if kind == "nodeFailure" and isinstance(value, dict):
            failure = cast(Mapping[str, Any], value)
            error = cast(Mapping[str, Any], failure["error"])
            return WorkflowNodeFailure(
                node_id=str(failure["nodeId"]),
                error=ChildError(
                    name=str(error["name"]), message=str(error["message"]), code=error.get("code")
                ),
            )
        if kind == "json":
            return value
    return stored
