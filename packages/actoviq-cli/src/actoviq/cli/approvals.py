"""Decisions for a paused run: asked ``[y/N/always]``, given by flags, or left for later.

``actoviq run`` asks on a terminal; ``--approve`` / ``--reject`` decide every approval without
asking; ``--interrupt`` (and any non-interactive use without a flag) leaves the run paused, so the
command prints its id and exits 3. ``actoviq resume RUN_ID --approve CALL`` names the calls: a
call id, an interruption id, a tool name, or ``all``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Final, Literal

from actoviq.cli.errors import CliUsageError
from actoviq.core import UNSET, Interruption
from actoviq.runtime import InterruptionDecision

__all__ = [
    "ApprovalMode",
    "Approver",
    "describe_interruption",
    "select_decisions",
]

ApprovalMode = Literal["ask", "approve", "reject", "interrupt"]
Ask = Callable[[str], Awaitable[str]]

_YES: Final = frozenset({"y", "yes"})
_ALWAYS: Final = frozenset({"a", "always"})
_MAX_INPUT: Final = 160


def describe_interruption(interruption: Interruption) -> str:
    """``send_payment (call_pay) {"invoice": "INV-42"}``: tool, call and redacted input."""
    from actoviq.surfaces import escape_terminal_controls, redact_surface_value

    label = interruption.tool_name or interruption.kind
    if interruption.call_id:
        label += f" ({interruption.call_id})"
    if interruption.input is not UNSET:
        shown = json.dumps(redact_surface_value(interruption.input), ensure_ascii=False)
        label += " " + (shown if len(shown) <= _MAX_INPUT else shown[: _MAX_INPUT - 1] + "…")
    # The call id and the input come from the model: a carriage return or an escape sequence
    # there could redraw the question as something else.
    return escape_terminal_controls(label, single_line=True)


class Approver:
    """Decides the approvals of a paused run (see the module docstring).

    Args:
        mode: ``ask``, ``approve``, ``reject`` or ``interrupt``.
        ask: reads one answer for a prompt (required for ``ask``).
    """

    def __init__(self, mode: ApprovalMode, *, ask: Ask | None = None) -> None:
        if mode == "ask" and ask is None:
            raise ValueError("ask mode needs an ask function")
        self.mode: ApprovalMode = mode
        self._ask = ask
        self.always: set[str] = set()

    async def _question(self, interruption: Interruption) -> InterruptionDecision | None:
        assert self._ask is not None
        if interruption.kind != "approval":
            answer = (
                (
                    await self._ask(
                        f"{describe_interruption(interruption)} may have run before a crash: "
                        "[r]etry / [f]ailed / [L]eave paused? "
                    )
                )
                .strip()
                .lower()
            )
            if answer in ("r", "retry"):
                return InterruptionDecision.retry(interruption.id)
            if answer in ("f", "failed"):
                return InterruptionDecision.failed(interruption.id, "Marked failed by the user.")
            return None
        answer = (
            (await self._ask(f"Approve {describe_interruption(interruption)}? [y/N/always] "))
            .strip()
            .lower()
        )
        if answer in _ALWAYS and interruption.tool_name:
            self.always.add(interruption.tool_name)
        if answer in _YES or answer in _ALWAYS:
            return InterruptionDecision.approve(interruption.id)
        return InterruptionDecision.reject(interruption.id, "Rejected by the user.")

    async def decide(
        self, interruptions: Sequence[Interruption]
    ) -> list[InterruptionDecision] | None:
        """One decision per interruption, or None to leave the run paused."""
        decisions: list[InterruptionDecision] = []
        for interruption in interruptions:
            approval = interruption.kind == "approval"
            if approval and interruption.tool_name in self.always:
                decision: InterruptionDecision | None = InterruptionDecision.approve(
                    interruption.id
                )
            elif self.mode == "ask":
                decision = await self._question(interruption)
            elif self.mode == "approve" and approval:
                decision = InterruptionDecision.approve(interruption.id)
            elif self.mode == "reject" and approval:
                decision = InterruptionDecision.reject(interruption.id, "Rejected with --reject.")
            else:
                decision = None
            if decision is None:
                return None
            decisions.append(decision)
        return decisions


def _matches(selector: str, interruption: Interruption) -> bool:
    return selector in ("all", interruption.id, interruption.call_id, interruption.tool_name)


def select_decisions(
    interruptions: Sequence[Interruption],
    *,
    approve: Sequence[str] = (),
    reject: Sequence[str] = (),
    retry: Sequence[str] = (),
    failed: Sequence[str] = (),
    reason: str | None = None,
) -> list[InterruptionDecision]:
    """Decisions from ``actoviq resume`` flags.

    Each selector is a call id, an interruption id, a tool name or ``all``.

    Raises:
        CliUsageError: a selector matching no open interruption, two outcomes for one
            interruption, or an approval outcome for a reconciliation (and back).
    """
    open_list = (
        ", ".join(f"{i.call_id or i.id} ({i.tool_name or i.kind}, {i.kind})" for i in interruptions)
        or "none"
    )
    chosen: dict[str, InterruptionDecision] = {}
    plans: list[tuple[str, Sequence[str], bool]] = [
        ("approve", approve, True),
        ("reject", reject, True),
        ("retry", retry, False),
        ("failed", failed, False),
    ]
    for outcome, selectors, for_approval in plans:
        for selector in selectors:
            hits = [i for i in interruptions if _matches(selector, i)]
            if not hits:
                raise CliUsageError(
                    f"--{outcome} {selector!r} matches no open interruption (open: {open_list}).",
                    details={"selector": selector},
                )
            for hit in hits:
                if (hit.kind == "approval") != for_approval:
                    if selector == "all":
                        continue
                    other = "--approve/--reject" if hit.kind == "approval" else "--retry/--failed"
                    raise CliUsageError(
                        f"{hit.call_id or hit.id} is a {hit.kind}: decide it with {other}.",
                        details={"selector": selector},
                    )
                if outcome == "approve":
                    decision = InterruptionDecision.approve(hit.id)
                elif outcome == "reject":
                    decision = InterruptionDecision.reject(hit.id, reason or "Rejected.")
                elif outcome == "retry":
                    decision = InterruptionDecision.retry(hit.id)
                else:
                    decision = InterruptionDecision.failed(hit.id, reason or "Marked failed.")
                previous = chosen.get(hit.id)
                if previous is not None and previous.outcome != decision.outcome:
                    raise CliUsageError(
                        f"{hit.call_id or hit.id} has two decisions.",
                        details={"selector": selector},
                    )
                chosen[hit.id] = decision
    return list(chosen.values())
