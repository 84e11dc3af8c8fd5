"""Actoviq orchestration: multi-agent work on the one runtime.

Every primitive (agent-as-tool, handoff, background children, workflow graphs, presets) runs its
agents through one ``ChildRunner`` over the shared ``AgentRuntime``, inside an
``OrchestrationScope`` derived from a root scope (spec ``04-orchestration-storage.md`` §1, D8).
"""

from __future__ import annotations

__all__: list[str] = []
