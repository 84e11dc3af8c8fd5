"""A small cancellation token with a reason (spec 02 §6.4), the analogue of ``AbortSignal``.

It complements asyncio task cancellation: a signal carries *why* (a reason object, usually an
exception) across layers that cannot see each other's tasks, and can be combined with
:meth:`AbortSignal.any`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

__all__ = ["AbortController", "AbortError", "AbortSignal"]

Listener = Callable[[object], None]


class AbortError(Exception):
    """Raised by :meth:`AbortSignal.throw_if_aborted` when the reason is not an exception."""

    def __init__(self, message: str = "The operation was aborted.", reason: object = None):
        super().__init__(message)
        self.reason = reason


class AbortSignal:
    """Read side of an :class:`AbortController`: ``aborted``, ``reason``, listeners."""

    __slots__ = ("_aborted", "_listeners", "_next_token", "_reason")

    def __init__(self) -> None:
        self._aborted = False
        self._reason: object = None
        self._listeners: dict[int, Listener] = {}  # insertion order; O(1) removal
        self._next_token = 0

    @property
    def aborted(self) -> bool:
        """True once aborted; never goes back."""
        return self._aborted

    @property
    def reason(self) -> object:
        """Why it was aborted (None until then)."""
        return self._reason

    @property
    def listener_count(self) -> int:
        """How many listeners are waiting (0 once aborted): lets a host check for leaks."""
        return len(self._listeners)

    def add_listener(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(reason)`` once when aborted (at once if already). Returns a remover."""
        if self._aborted:
            listener(self._reason)
            return lambda: None
        token = self._next_token
        self._next_token = token + 1
        self._listeners[token] = listener
        return _Removal(self, token)

    def throw_if_aborted(self) -> None:
        """Raise the reason (when it is an exception) or :class:`AbortError`."""
        if not self._aborted:
            return
        if isinstance(self._reason, BaseException):
            raise self._reason
        raise AbortError(reason=self._reason)

    def _abort(self, reason: object) -> None:
        if self._aborted:
            return
        self._aborted = True
        self._reason = reason if reason is not None else AbortError()
        listeners, self._listeners = self._listeners, {}
        for listener in listeners.values():
            listener(self._reason)

    @staticmethod
    def any(signals: Iterable[AbortSignal]) -> AbortSignal:
        """A signal that aborts with the first reason of any of ``signals``."""
        controller = AbortController()
        for signal in signals:
            if signal.aborted:
                controller.abort(signal.reason)
                break
            signal.add_listener(controller.abort)
        return controller.signal

    @staticmethod
    def aborted_with(reason: object) -> AbortSignal:
        """An already-aborted signal."""
        controller = AbortController()
        controller.abort(reason)
        return controller.signal


class AbortController:
    """Owns an :class:`AbortSignal` and aborts it.

    Example:
        >>> controller = AbortController()
        >>> controller.abort("user pressed stop")
        >>> controller.signal.reason
        'user pressed stop'
    """

    __slots__ = ("signal",)

    def __init__(self) -> None:
        self.signal = AbortSignal()

    def abort(self, reason: object = None) -> None:
        """Abort with ``reason`` (an :class:`AbortError` when None); later calls do nothing."""
        self.signal._abort(reason)  # pyright: ignore[reportPrivateUsage]


class _Removal:
    """What :meth:`AbortSignal.add_listener` returns: removes that one listener when called.

    One small object instead of a closure (a function, its cell tuple and two cells): a run
    tree with many waiting children holds one per child, and fewer live objects mean fewer
    cyclic-GC collections.
    """

    __slots__ = ("_signal", "_token")

    def __init__(self, signal: AbortSignal, token: int) -> None:
        self._signal = signal
        self._token = token

    def __call__(self) -> None:
        # After an abort: the signal's fresh, empty dict (nothing left to remove).
        self._signal._listeners.pop(self._token, None)  # pyright: ignore[reportPrivateUsage]
