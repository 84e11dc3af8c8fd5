"""The budget ledger of a run tree: child runs, depth, tokens and cost (spec 04 §1.3, §8.2-13).

One ledger is shared by reference by every scope derived from a root. It is a small protocol,
:class:`BudgetLedger`, so a durable row-based ledger (one row updated atomically,
``used = used + :n``, shared across processes) can replace the in-memory
:class:`InMemoryBudgetLedger` without changing the callers.

Two fixes over the reference: usage is **always recorded first** and only then checked, so a
:class:`~actoviq.orchestration.errors.BudgetExceededError` never loses what was spent (and is not
retryable); and a child may **reserve** tokens/cost before it runs, so concurrent children cannot
collectively overshoot (a reservation fails fast when ``used + reserved + n > limit``).

Example:
    >>> import asyncio
    >>> from actoviq.core import Usage
    >>> ledger = InMemoryBudgetLedger(BudgetLimits(max_child_runs=2, max_total_tokens=10))
    >>> async def spend() -> int:
    ...     await ledger.claim_child(1)
    ...     await ledger.record_usage(Usage(total_tokens=4))
    ...     return (await ledger.snapshot()).total_tokens_used
    >>> asyncio.run(spend())
    4
"""

from __future__ import annotations

import itertools
import math
import sys
import threading
from typing import Any, Final, Protocol, Self, cast, runtime_checkable

import attrs

from actoviq.core import JsonObject, Usage
from actoviq.orchestration.errors import BudgetExceededError, OrchestrationConfigError

__all__ = [
    "UNBOUNDED_COST_USD",
    "UNBOUNDED_INT",
    "BudgetLedger",
    "BudgetLimits",
    "BudgetReservation",
    "BudgetSnapshot",
    "InMemoryBudgetLedger",
    "SubBudgetLedger",
]

UNBOUNDED_INT: Final = 2**53 - 1
"""How an unbounded integer limit is written in persisted JSON (``Number.MAX_SAFE_INTEGER``)."""
UNBOUNDED_COST_USD: Final = sys.float_info.max
"""How an unbounded cost limit is written in persisted JSON (``Number.MAX_VALUE``)."""

_LIMIT_NAMES: Final = {
    "max_child_runs": "maxChildRuns",
    "max_depth": "maxDepth",
    "max_total_tokens": "maxTotalTokens",
    "max_cost_usd": "maxCostUsd",
}


def _safe_int(value: object) -> bool:
    return type(value) is int and 0 <= value <= UNBOUNDED_INT


def _finite(value: object) -> bool:
    return type(value) in (int, float) and math.isfinite(value) and value >= 0  # type: ignore[arg-type]


def _check_int_limit(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and not _safe_int(value):
        raise OrchestrationConfigError(
            f"{_LIMIT_NAMES[attribute.name]} must be a non-negative safe integer.",
            details={"field": _LIMIT_NAMES[attribute.name]},
        )


def _check_cost_limit(_: object, __: object, value: object) -> None:
    if value is not None and not _finite(value):
        raise OrchestrationConfigError(
            "maxCostUsd must be a finite, non-negative number.", details={"field": "maxCostUsd"}
        )


def _number(value: float) -> str:
    """A limit as the reference prints it (``1`` not ``1.0``)."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


@attrs.frozen(kw_only=True, slots=True)
class BudgetLimits:
    """The limits of one ledger; ``None`` is unbounded.

    Raises:
        OrchestrationConfigError: a limit is negative, fractional (integers), NaN or infinite.
    """

    max_child_runs: int | None = attrs.field(default=None, validator=_check_int_limit)
    max_depth: int | None = attrs.field(default=None, validator=_check_int_limit)
    max_total_tokens: int | None = attrs.field(default=None, validator=_check_int_limit)
    max_cost_usd: float | None = attrs.field(default=None, validator=_check_cost_limit)

    def to_json(self) -> JsonObject:
        """The resolved limits with the reference sentinels for unbounded ones."""
        return {
            "maxChildRuns": _resolve(self.max_child_runs),
            "maxDepth": _resolve(self.max_depth),
            "maxTotalTokens": _resolve(self.max_total_tokens),
            "maxCostUsd": UNBOUNDED_COST_USD if self.max_cost_usd is None else self.max_cost_usd,
        }

    @classmethod
    def from_json(cls, data: object) -> Self:
        """Read resolved limits (sentinels become ``None``).

        Raises:
            OrchestrationConfigError: not an object, or an invalid limit.
        """
        if not isinstance(data, dict):
            raise OrchestrationConfigError("Budget limits must be a JSON object.")
        mapping = cast(dict[str, object], data)
        values: dict[str, Any] = {}
        for attr, wire in _LIMIT_NAMES.items():
            raw = mapping.get(wire)
            if raw is None or raw in (UNBOUNDED_INT, UNBOUNDED_COST_USD):
                values[attr] = None
            else:
                values[attr] = raw
        return cls(**values)


def _resolve(value: int | None) -> int:
    return UNBOUNDED_INT if value is None else value


@attrs.frozen(kw_only=True, slots=True)
class BudgetSnapshot:
    """The ledger's limits and counters at one moment (what persisted scopes carry)."""

    limits: BudgetLimits
    child_runs_started: int = 0
    total_tokens_used: int = 0
    cost_usd_used: float = 0.0
    reserved_tokens: int = 0
    reserved_cost_usd: float = 0.0

    def remaining(self) -> BudgetLimits:
        """What is left of each bounded limit (reservations count as spent)."""
        limits = self.limits
        return BudgetLimits(
            max_child_runs=None
            if limits.max_child_runs is None
            else max(0, limits.max_child_runs - self.child_runs_started),
            max_depth=limits.max_depth,
            max_total_tokens=None
            if limits.max_total_tokens is None
            else max(0, limits.max_total_tokens - self.total_tokens_used - self.reserved_tokens),
            max_cost_usd=None
            if limits.max_cost_usd is None
            else max(0.0, limits.max_cost_usd - self.cost_usd_used - self.reserved_cost_usd),
        )

    def to_json(self) -> JsonObject:
        """The reference ``BudgetSnapshot`` JSON (reservations only when held)."""
        data: JsonObject = {
            "limits": self.limits.to_json(),
            "childRunsStarted": self.child_runs_started,
            "totalTokensUsed": self.total_tokens_used,
            "costUsdUsed": self.cost_usd_used,
        }
        if self.reserved_tokens:
            data["reservedTokens"] = self.reserved_tokens
        if self.reserved_cost_usd:
            data["reservedCostUsd"] = self.reserved_cost_usd
        return data

    @classmethod
    def from_json(cls, data: object) -> Self:
        """Read a snapshot written by :meth:`to_json` (or by the reference).

        Raises:
            OrchestrationConfigError: the limits or the counters are invalid.
        """
        if not isinstance(data, dict):
            raise OrchestrationConfigError("Budget snapshot must be a JSON object.")
        mapping: dict[str, Any] = data  # pyright: ignore[reportUnknownVariableType]
        snapshot = cls(
            limits=BudgetLimits.from_json(mapping.get("limits")),
            child_runs_started=mapping.get("childRunsStarted", 0),
            total_tokens_used=mapping.get("totalTokensUsed", 0),
            cost_usd_used=mapping.get("costUsdUsed", 0.0),
            reserved_tokens=mapping.get("reservedTokens", 0),
            reserved_cost_usd=mapping.get("reservedCostUsd", 0.0),
        )
        _check_counters(
            snapshot.child_runs_started, snapshot.total_tokens_used, snapshot.cost_usd_used
        )
        return snapshot


@attrs.frozen(kw_only=True, slots=True)
class BudgetReservation:
    """Tokens and cost held for one child until its usage is recorded (or it is released)."""

    id: str
    tokens: int = 0
    cost_usd: float = 0.0


@runtime_checkable
class BudgetLedger(Protocol):
    """One run tree's budget (shared by reference by every derived scope).

    Every method is a coroutine so a durable implementation (a row updated atomically in a
    database, shared across processes) fits behind it. Implementations must record usage before
    they raise, and raise :class:`~actoviq.orchestration.errors.BudgetExceededError` (never
    retryable) for limits.
    """

    @property
    def limits(self) -> BudgetLimits:
        """The ledger's limits."""
        ...

    async def claim_child(self, depth: int) -> None:
        """Count one logical child at ``depth`` (>= 1); checks ``maxDepth`` then ``maxChildRuns``.

        Raises:
            OrchestrationConfigError: ``depth`` is not a positive safe integer.
            BudgetExceededError: the depth or the child-run limit would be exceeded (nothing
                counted).
        """
        ...

    async def reserve(self, *, tokens: int = 0, cost_usd: float = 0.0) -> BudgetReservation:
        """Hold ``tokens``/``cost_usd`` for a child that is about to run.

        Raises:
            BudgetExceededError: ``used + reserved + requested`` would pass a limit (nothing held).
        """
        ...

    async def release(self, reservation: BudgetReservation) -> None:
        """Give a reservation back unused (idempotent)."""
        ...

    async def record_usage(
        self, usage: Usage, *, reservation: BudgetReservation | None = None
    ) -> None:
        """Add ``usage`` (releasing ``reservation``), then check the token and cost limits.

        Raises:
            BudgetExceededError: the totals now exceed a limit (the usage *is* recorded).
        """
        ...

    async def snapshot(self) -> BudgetSnapshot:
        """The current limits and counters."""
        ...


def _check_counters(runs: object, tokens: object, cost: object) -> None:
    if not (_safe_int(runs) and _safe_int(tokens) and _finite(cost)):
        raise OrchestrationConfigError("Persisted budget counters are invalid.")


def _check_depth(depth: object) -> int:
    if not _safe_int(depth) or depth == 0:
        raise OrchestrationConfigError(
            "Child depth must be a positive safe integer.", details={"field": "depth"}
        )
    return depth  # type: ignore[return-value]


def _depth_error(depth: int, limit: int) -> BudgetExceededError:
    return BudgetExceededError(
        f"Child depth {depth} exceeds budget maxDepth {limit}.",
        details={"kind": "depth", "limit": limit, "used": depth},
    )


def _runs_error(limit: int) -> BudgetExceededError:
    return BudgetExceededError(
        f"Child run budget {limit} is exhausted.",
        details={"kind": "childRuns", "limit": limit, "used": limit},
    )


def _tokens_error(limit: int, used: int, *, reserving: bool = False) -> BudgetExceededError:
    text = "cannot cover the reservation" if reserving else "is exceeded"
    return BudgetExceededError(
        f"Child token budget {limit} {text}.",
        details={"kind": "tokens", "limit": limit, "used": used},
    )


def _cost_error(limit: float, used: float, *, reserving: bool = False) -> BudgetExceededError:
    text = "cannot cover the reservation" if reserving else "is exceeded"
    return BudgetExceededError(
        f"Child cost budget {_number(limit)} {text}.",
        details={"kind": "costUsd", "limit": limit, "used": used},
    )


def _check_reservation(tokens: object, cost: object) -> None:
    if not _safe_int(tokens) or not _finite(cost):
        raise OrchestrationConfigError(
            "A reservation needs a non-negative safe integer of tokens and a finite cost."
        )


_reservation_ids = itertools.count(1)


class InMemoryBudgetLedger:
    """The process-local :class:`BudgetLedger` (the reference ``SharedBudgetController``).

    Mutations are synchronous under a lock, so the ledger is also safe when scopes are shared
    across threads.

    Args:
        limits: the limits (default: everything unbounded).
        child_runs_started: initial counter of started child runs (a restored tree).
        total_tokens_used: initial counter of tokens used (a restored tree).
        cost_usd_used: initial counter of cost in USD (a restored tree).

    Raises:
        OrchestrationConfigError: invalid limits or counters ("counters").
    """

    def __init__(
        self,
        limits: BudgetLimits | None = None,
        *,
        child_runs_started: int = 0,
        total_tokens_used: int = 0,
        cost_usd_used: float = 0.0,
    ) -> None:
        _check_counters(child_runs_started, total_tokens_used, cost_usd_used)
        if limits is not None and not isinstance(limits, BudgetLimits):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise OrchestrationConfigError(
                "A budget ledger's limits must be BudgetLimits.", details={"field": "limits"}
            )
        self._limits = limits if limits is not None else BudgetLimits()
        self._runs = child_runs_started
        self._tokens = total_tokens_used
        self._cost = float(cost_usd_used)
        self._reserved: dict[str, BudgetReservation] = {}
        self._reserved_tokens = 0
        self._reserved_cost = 0.0
        self._lock = threading.Lock()

    @classmethod
    def from_snapshot(cls, snapshot: BudgetSnapshot) -> InMemoryBudgetLedger:
        """A detached ledger that starts from ``snapshot``'s limits and counters."""
        return cls(
            snapshot.limits,
            child_runs_started=snapshot.child_runs_started,
            total_tokens_used=snapshot.total_tokens_used,
            cost_usd_used=snapshot.cost_usd_used,
        )

    @property
    def limits(self) -> BudgetLimits:
        """See :class:`BudgetLedger`."""
        return self._limits

    def snapshot_now(self) -> BudgetSnapshot:
        """The snapshot, synchronously (the in-memory ledger never waits)."""
        with self._lock:
            return BudgetSnapshot(
                limits=self._limits,
                child_runs_started=self._runs,
                total_tokens_used=self._tokens,
                cost_usd_used=self._cost,
                reserved_tokens=self._reserved_tokens,
                reserved_cost_usd=self._reserved_cost,
            )

    async def snapshot(self) -> BudgetSnapshot:
        """See :class:`BudgetLedger`."""
        return self.snapshot_now()

    def counters_now(self) -> tuple[int, int, float]:
        """Child runs started, tokens used and cost used, read together (no snapshot object)."""
        with self._lock:
            return self._runs, self._tokens, self._cost

    def check_child(self, depth: int) -> None:
        """Raise what :meth:`claim_child` would raise, without counting anything."""
        depth = _check_depth(depth)
        limits = self._limits
        if limits.max_depth is not None and depth > limits.max_depth:
            raise _depth_error(depth, limits.max_depth)
        if limits.max_child_runs is not None and self._runs >= limits.max_child_runs:
            raise _runs_error(limits.max_child_runs)

    def claim_child_now(self, depth: int) -> None:
        """:meth:`claim_child`, synchronously (the in-memory ledger never waits)."""
        with self._lock:
            self.check_child(depth)
            self._runs += 1

    async def claim_child(self, depth: int) -> None:
        """See :class:`BudgetLedger`."""
        self.claim_child_now(depth)

    def _unclaim(self) -> None:
        """Give back one claim whose other ledger refused it (a :class:`SubBudgetLedger`)."""
        with self._lock:
            self._runs = max(0, self._runs - 1)

    def check_reserve(self, tokens: int, cost_usd: float) -> None:
        """Raise what :meth:`reserve` would raise, without holding anything."""
        _check_reservation(tokens, cost_usd)
        limits = self._limits
        if (
            limits.max_total_tokens is not None
            and tokens
            and (self._tokens + self._reserved_tokens + tokens > limits.max_total_tokens)
        ):
            raise _tokens_error(limits.max_total_tokens, self._tokens, reserving=True)
        if (
            limits.max_cost_usd is not None
            and cost_usd
            and (self._cost + self._reserved_cost + cost_usd > limits.max_cost_usd)
        ):
            raise _cost_error(limits.max_cost_usd, self._cost, reserving=True)

    async def reserve(self, *, tokens: int = 0, cost_usd: float = 0.0) -> BudgetReservation:
        """See :class:`BudgetLedger`."""
        with self._lock:
            self.check_reserve(tokens, cost_usd)
            reservation = BudgetReservation(
                id=f"reservation-{next(_reservation_ids)}", tokens=tokens, cost_usd=float(cost_usd)
            )
            self._hold(reservation)
            return reservation

    def _rekey(self, reservation: BudgetReservation, new_id: str) -> None:
        """Hold ``reservation`` under ``new_id`` (a :class:`SubBudgetLedger` uses its parent's)."""
        with self._lock:
            held = self._reserved.pop(reservation.id, None)
            if held is not None:
                self._reserved[new_id] = attrs.evolve(held, id=new_id)

    def _hold(self, reservation: BudgetReservation) -> None:
        self._reserved[reservation.id] = reservation
        self._reserved_tokens += reservation.tokens
        self._reserved_cost += reservation.cost_usd

    def _drop(self, reservation: BudgetReservation | None) -> None:
        if reservation is None:
            return
        held = self._reserved.pop(reservation.id, None)
        if held is not None:
            self._reserved_tokens -= held.tokens
            self._reserved_cost = max(0.0, self._reserved_cost - held.cost_usd)

    async def release(self, reservation: BudgetReservation) -> None:
        """See :class:`BudgetLedger`."""
        with self._lock:
            self._drop(reservation)

    async def record_usage(
        self, usage: Usage, *, reservation: BudgetReservation | None = None
    ) -> None:
        """See :class:`BudgetLedger`."""
        self.record_usage_now(usage, reservation=reservation)

    def record_usage_now(
        self, usage: Usage, *, reservation: BudgetReservation | None = None
    ) -> None:
        """:meth:`record_usage`, synchronously (recorded before any limit error)."""
        with self._lock:
            self._drop(reservation)
            self._tokens += usage.total_tokens
            self._cost += float(usage.cost_usd)
            tokens, cost = self._tokens, self._cost
        limits = self._limits
        if limits.max_total_tokens is not None and tokens > limits.max_total_tokens:
            raise _tokens_error(limits.max_total_tokens, tokens)
        if limits.max_cost_usd is not None and cost > limits.max_cost_usd:
            raise _cost_error(limits.max_cost_usd, cost)


class SubBudgetLedger:
    """A narrowed child budget: its own (smaller) limits, every charge also made on the parent.

    Built by ``derive_child(narrow=ScopeNarrowing(budget=...))``, which checks that each limit
    is within what the parent has left. Usage is recorded on both ledgers before any limit error.
    """

    def __init__(self, parent: BudgetLedger, limits: BudgetLimits) -> None:
        self.parent = parent
        self._own = InMemoryBudgetLedger(limits)

    @property
    def limits(self) -> BudgetLimits:
        """See :class:`BudgetLedger`."""
        return self._own.limits

    def snapshot_now(self) -> BudgetSnapshot:
        """This sub-budget's own counters, synchronously."""
        return self._own.snapshot_now()

    async def snapshot(self) -> BudgetSnapshot:
        """This sub-budget's own counters (the parent keeps the tree's totals)."""
        return self.snapshot_now()

    async def claim_child(self, depth: int) -> None:
        """See :class:`BudgetLedger` (own limits first, then the parent's).

        The own claim is taken (checked and counted at once) before the parent is asked, and
        given back when the parent refuses: concurrent claims through a parent that awaits (a
        durable ledger) can neither pass the own limit together nor leave the parent counting
        children that never ran.
        """
        own = self._own
        own.claim_child_now(depth)
        try:
            await self.parent.claim_child(depth)
        except BaseException:
            own._unclaim()  # pyright: ignore[reportPrivateUsage]
            raise

    async def reserve(self, *, tokens: int = 0, cost_usd: float = 0.0) -> BudgetReservation:
        """See :class:`BudgetLedger` (held here first, then on the parent; undone if refused)."""
        own = self._own
        inner = await own.reserve(tokens=tokens, cost_usd=cost_usd)
        try:
            outer = await self.parent.reserve(tokens=tokens, cost_usd=cost_usd)
        except BaseException:
            await own.release(inner)
            raise
        own._rekey(inner, outer.id)  # pyright: ignore[reportPrivateUsage]
        return outer

    async def release(self, reservation: BudgetReservation) -> None:
        """See :class:`BudgetLedger`."""
        await self._own.release(reservation)
        await self.parent.release(reservation)

    async def record_usage(
        self, usage: Usage, *, reservation: BudgetReservation | None = None
    ) -> None:
        """See :class:`BudgetLedger`: both ledgers record before either raises."""
        own_error: BudgetExceededError | None = None
        try:
            await self._own.record_usage(usage, reservation=reservation)
        except BudgetExceededError as error:
            own_error = error
        await self.parent.record_usage(usage, reservation=reservation)
        if own_error is not None:
            raise own_error
