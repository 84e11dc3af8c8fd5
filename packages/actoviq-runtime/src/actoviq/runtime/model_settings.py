"""Model settings → provider request fields (issue 14 §1).

The agent's :class:`~actoviq.core.ModelSettings` merged with the run's become the fields of every
:class:`~actoviq.providers.ModelRequest` of the run. The provider's capability preflight then
refuses what the model cannot take (stop sequences, reasoning, prompt caching, parallel tool
calls, a seed ...) with a :class:`~actoviq.core.CapabilityError` before any network call.

``tool_choice`` and ``parallel_tool_calls`` apply only when the agent offers tools. A forcing
``tool_choice`` (``"required"`` or a tool name) applies until the model has called a tool in the
run, then reverts to ``"auto"``: forcing it on every turn would make the model call tools forever.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from actoviq.core import ModelSettings, RunError, ToolCallItem
from actoviq.providers import ModelReasoningRequest, ModelRequest, ToolChoice

if TYPE_CHECKING:
    from actoviq.runtime.execution import RunExecution

__all__ = ["request_settings"]

_POLICIES = frozenset({"auto", "required", "none"})
_REQUEST_FIELDS = frozenset(field.name for field in attrs.fields(ModelRequest))


def request_settings(run: RunExecution, settings: ModelSettings, has_tools: bool) -> dict[str, Any]:
    """The :class:`ModelRequest` keyword arguments ``settings`` give for the run's next call.

    Raises:
        RunError: ``MODEL_SETTINGS_INVALID``: ``tool_choice`` names a tool the agent lacks.
    """
    fields: dict[str, Any] = {}
    for name, value in (
        ("temperature", settings.temperature),
        ("top_p", settings.top_p),
        ("max_output_tokens", settings.max_output_tokens),
        ("stop_sequences", settings.stop_sequences),
        ("seed", settings.seed),
        ("prompt_cache_key", settings.prompt_cache_key),
        ("metadata", settings.metadata),
        ("provider_options", settings.provider_options),
    ):
        if value is not None:
            if name not in _REQUEST_FIELDS:
                raise RunError(
                    f"modelSettings.{name} is not supported by this version of actoviq-providers.",
                    code="MODEL_SETTINGS_INVALID",
                    run_id=run.run_id,
                    phase="model_call",
                    details={"setting": name},
                )
            fields[name] = value
    reasoning = settings.reasoning
    if reasoning is not None:
        fields["reasoning"] = ModelReasoningRequest(
            effort=reasoning.effort,
            summary=reasoning.summary,
            budget_tokens=reasoning.budget_tokens,
        )
    if not has_tools:
        fields["tool_policy"] = "none"
        return fields
    if settings.parallel_tool_calls is not None:
        fields["parallel_tool_calls"] = settings.parallel_tool_calls
    fields["tool_policy"] = _tool_policy(run, settings.tool_choice)
    return fields


def _tool_policy(run: RunExecution, choice: str | None) -> Any:
    if choice is None or choice == "auto":
        return "auto"
    if choice == "none":
        return "none"
    if any(isinstance(item, ToolCallItem) for item in run.generated):
        return "auto"  # the model called a tool already: stop forcing (see the module doc)
    if choice == "required":
        return "required"
    names = set(run.entry.tool_order) | set(run.entry.handoffs)
    if choice not in names or choice in _POLICIES:
        raise RunError(
            f'modelSettings.toolChoice "{choice}" names no tool of agent "{run.agent.id}" '
            f"(its tools: {', '.join(sorted(names)) or 'none'}).",
            code="MODEL_SETTINGS_INVALID",
            run_id=run.run_id,
            phase="model_call",
            details={"setting": "toolChoice", "toolChoice": choice},
        )
    return ToolChoice(name=choice)
