"""Where a worker finds a child's parent scope and agent.

A child spawned in this process runs under its live parent scope (cancelling the parent cancels
it). A child taken over from another process runs under its parent's ``PersistedScope``
restored here, once per parent: the runtime's services, this worker's permits, and the tree's
durable budget ledger when the parent had one (a detached copy of the snapshot otherwise).
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from actoviq.core import AgentSpec
from actoviq.orchestration.background.engine import AgentResolver
from actoviq.orchestration.background.records import DurableChildRecord
from actoviq.orchestration.concurrency import ConcurrencyController
from actoviq.orchestration.durable_budget import DurableBudgetLedger
from actoviq.orchestration.errors import OrchestrationConfigError
from actoviq.orchestration.persisted import PersistedScope, restore_scope
from actoviq.orchestration.scope import OrchestrationScope
from actoviq.runtime.stores import BudgetLedgerStore

if TYPE_CHECKING:
    from actoviq.orchestration.child_runner import ChildRunner

__all__ = ["ChildContext"]


class ChildContext:
    """Parent scopes and agents of the children one worker runs.

    Args:
        runner: the worker's child runner.
        resolve_agent: the host's agent lookup (tried first).
        ledger_store: the budget ledger store of durable-ledger trees.
        capacity: permits shared by children of restored parents.
    """

    def __init__(
        self,
        runner: ChildRunner,
        *,
        resolve_agent: AgentResolver | None,
        ledger_store: BudgetLedgerStore | None,
        capacity: int,
    ) -> None:
        self._runner = runner
        self._resolver = resolve_agent
        self._ledger_store = ledger_store
        self._concurrency = ConcurrencyController(capacity)
        self._live: dict[str, OrchestrationScope] = {}
        self._restored: dict[str, OrchestrationScope] = {}
        self._agents: dict[str, AgentSpec[Any, Any]] = {}

    def remember(self, parent: OrchestrationScope, agent: AgentSpec[Any, Any]) -> None:
        """A child of ``parent`` running ``agent`` was spawned here."""
        self._live[parent.run_id] = parent
        self._agents[agent.id] = agent

    async def agent(self, agent_id: str) -> AgentSpec[Any, Any] | None:
        """The agent of ``agent_id``: the host's resolver, agents spawned here, the runtime's."""
        if self._resolver is not None:
            found = self._resolver(agent_id)
            if inspect.isawaitable(found):
                found = await found
            if found is not None:
                return found
        known = self._agents.get(agent_id)
        return known if known is not None else self._runner.runtime.get_agent(agent_id)

    def parent(self, record: DurableChildRecord) -> OrchestrationScope:
        """The scope ``record`` runs under (live, or restored once per parent).

        Raises:
            OrchestrationConfigError: the tree shares a durable ledger and no ledger store was
                given (a detached budget would not be the tree's budget).
        """
        run_id = record.parent_run_id or ""
        found = self._live.get(run_id) or self._restored.get(run_id)
        if found is not None:
            return found
        persisted = PersistedScope.from_json(record.parent)
        budget = None
        ref = record.budget_ledger
        if ref is not None:
            if self._ledger_store is None:
                raise OrchestrationConfigError(
                    f'Durable child "{record.child_id}" charges budget ledger "{ref.ledger_id}": '
                    "give the background manager its ledger_store.",
                    details={"field": "ledgerStore"},
                )
            budget = DurableBudgetLedger(
                self._ledger_store,
                tenant_id=ref.tenant_id,
                ledger_id=ref.ledger_id,
                limits=persisted.budget.limits,
            )
        scope = restore_scope(
            persisted, services=self._runner.services, concurrency=self._concurrency, budget=budget
        )
        self._restored[run_id] = scope
        return scope
