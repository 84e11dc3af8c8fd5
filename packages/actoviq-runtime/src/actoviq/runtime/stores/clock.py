"""``StoreClock``: a store that can tell the time leases are compared against.

Leases (durable children, workflow runs) compare an expiry with "now". Several workers on several
machines must agree on "now", so a store that can read its database's clock (PostgreSQL's
``clock_timestamp()``) says so by implementing :class:`StoreClock`; callers use it instead of their
own wall clock. Stores on one machine (in memory, SQLite) return the local wall clock.
"""

from __future__ import annotations

import time
from typing import Protocol, runtime_checkable

__all__ = ["StoreClock", "wall_clock_ms"]


@runtime_checkable
class StoreClock(Protocol):
    """A store whose clock is the reference for the leases it holds."""

    async def clock_ms(self) -> int:
        """The store's current time in epoch milliseconds."""
        ...


def wall_clock_ms() -> int:
    """This process's wall clock in epoch milliseconds."""
    return int(time.time() * 1000)
