"""Lifecycle helpers shared by streams, providers and the registry (no provider logic here).

:class:`Outcome` is a value or an error settled once, awaited by any number of readers;
:class:`AsyncCloseable` gives a class with ``aclose()`` its ``async with``.
"""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Generic, Self, TypeVar

__all__ = ["AsyncCloseable", "Outcome"]

_T = TypeVar("_T")


class Outcome(Generic[_T]):
    """A result settled once: the first :meth:`resolve` or :meth:`fail` wins."""

    __slots__ = ("_error", "_settled", "_value")

    def __init__(self) -> None:
        self._value: _T | None = None
        self._error: BaseException | None = None
        self._settled = asyncio.Event()

    @property
    def settled(self) -> bool:
        """Whether a value or an error is set."""
        return self._settled.is_set()

    @property
    def value(self) -> _T | None:
        """The value when resolved, else None."""
        return self._value

    def resolve(self, value: _T) -> None:
        """Settle with ``value`` (ignored once settled)."""
        if not self._settled.is_set():
            self._value = value
            self._settled.set()

    def fail(self, error: BaseException) -> None:
        """Settle with ``error`` (ignored once settled)."""
        if not self._settled.is_set():
            self._error = error
            self._settled.set()

    async def wait(self) -> _T:
        """The value once settled; raises the error when it failed."""
        await self._settled.wait()
        if self._error is not None:
            raise self._error
        assert self._value is not None
        return self._value


class AsyncCloseable:
    """``async with`` for a class with ``aclose()``: the block's end closes it."""

    async def aclose(self) -> None:
        """Release resources (nothing by default)."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
