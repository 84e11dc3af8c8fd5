"""Compat usage diagnostics: which 0.x-style symbols a host still uses (spec 04 §5.1, §5.2 item 7).

Process-local: nothing is sent or persisted. Every public name of :mod:`actoviq.compat` records
its use here (spec 04 §8.4 item 28, where the reference counted only ``createAgentSdk``):

* functions and classes are wrapped by :func:`compat_symbol`: each call or instantiation records;
* names that only exist for type annotations (``TypedDict`` shapes, protocols) record when they
  are read from the package (``from actoviq.compat import MessageParam``).

The first use of each symbol emits a :class:`CompatDeprecationWarning` (a ``DeprecationWarning``,
so Python shows it to developers and test runs, not to end users) naming the replacement. A host
that forwards counts to its own metrics passes ``on_diagnostic``; hosts that upload them must get
consent, redact and set a retention period themselves.

Example:
    >>> reset_compat_diagnostics()
    >>> configure_compat_diagnostics(warn_once=False)
    >>> record_compat_usage("createAgentSdk")
    >>> [(d.symbol, d.count) for d in get_compat_diagnostics()]
    [('createAgentSdk', 1)]
"""

from __future__ import annotations

import functools
import inspect
import logging
import threading
import warnings
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar, cast

import attrs

from actoviq.compat._frozen import FrozenList
from actoviq.core import JsonObject, iso_now

__all__ = [
    "COMPAT_WARNING_CODE",
    "CompatDeprecationWarning",
    "CompatDiagnostic",
    "CompatDiagnosticsSettings",
    "compat_symbol",
    "configure_compat_diagnostics",
    "get_compat_diagnostics",
    "record_compat_usage",
    "reset_compat_diagnostics",
]

COMPAT_WARNING_CODE: Final = "ACTOVIQ_COMPAT_API"
"""The code at the start of every compat deprecation warning (the reference's
``HADAMARD_COMPAT_API``)."""

_log = logging.getLogger("actoviq.compat")
T = TypeVar("T")


class CompatDeprecationWarning(DeprecationWarning):
    """Emitted once per compat symbol; filter it with ``warnings.filterwarnings``."""


@attrs.frozen(kw_only=True, slots=True)
class CompatDiagnostic:
    """How often one compat symbol was used in this process.

    Attributes:
        symbol: the recorded name (``createAgentSdk``, ``AgentClient``, ...).
        count: uses so far.
        first_used_at: ISO-8601 UTC time of the first use.
        last_used_at: ISO-8601 UTC time of the latest use.
    """

    symbol: str
    count: int
    first_used_at: str
    last_used_at: str

    def to_json(self) -> JsonObject:
        """``{symbol, count, firstUsedAt, lastUsedAt}`` (the reference's wire names)."""
        return {
            "symbol": self.symbol,
            "count": self.count,
            "firstUsedAt": self.first_used_at,
            "lastUsedAt": self.last_used_at,
        }

    def keys(self) -> tuple[str, ...]:
        """The reference's field names, so ``dict(diagnostic)`` gives :meth:`to_json`."""
        return _DIAGNOSTIC_KEYS

    def __getitem__(self, key: str) -> str | int:
        """Read a field by its reference name (``diagnostic["count"]``) or attribute name.

        Raises:
            KeyError: no such field.
        """
        attribute = _DIAGNOSTIC_FIELDS.get(key)
        if attribute is None:
            raise KeyError(key)
        return cast(str | int, getattr(self, attribute))


_DIAGNOSTIC_KEYS: Final = ("symbol", "count", "firstUsedAt", "lastUsedAt")
_DIAGNOSTIC_FIELDS: Final = {
    "symbol": "symbol",
    "count": "count",
    "firstUsedAt": "first_used_at",
    "lastUsedAt": "last_used_at",
    "first_used_at": "first_used_at",
    "last_used_at": "last_used_at",
}


@attrs.frozen(kw_only=True, slots=True)
class CompatDiagnosticsSettings:
    """The current diagnostics settings (see :func:`configure_compat_diagnostics`)."""

    enabled: bool = True
    warn_once: bool = True
    on_diagnostic: Callable[[CompatDiagnostic], object] | None = None


_UNSET: Final[Any] = object()
_lock = threading.Lock()
_settings = CompatDiagnosticsSettings()
_usage: dict[str, CompatDiagnostic] = {}
_warned: set[str] = set()
_replacements: dict[str, str] = {}
_python_names: dict[str, str] = {}


def configure_compat_diagnostics(
    options: Mapping[str, Any] | None = None,
    /,
    *,
    enabled: bool = _UNSET,
    warn_once: bool = _UNSET,
    on_diagnostic: Callable[[CompatDiagnostic], object] | None = _UNSET,
) -> CompatDiagnosticsSettings:
    """Merge the given settings into the current ones and return the result.

    Args:
        options: the same settings as one mapping, the 0.x way
            (``{"enabled": False}``, ``{"warnOnce": True, "onDiagnostic": callback}``; snake_case
            keys work too). Keyword arguments win over it.
        enabled: record at all (default True). Disabled, recording returns at once.
        warn_once: emit a :class:`CompatDeprecationWarning` the first time each symbol is used
            (default True; the reference defaulted to False, but Python hides
            ``DeprecationWarning`` outside ``__main__`` and test runs anyway).
        on_diagnostic: called with the updated :class:`CompatDiagnostic` on **every** use. An
            exception it raises is logged on the ``actoviq.compat`` logger, never propagated into
            the host's call.

    Example:
        >>> configure_compat_diagnostics(enabled=True).enabled
        True
    """
    global _settings
    given: dict[str, Any] = _settings_mapping(options)
    for name, value in (
        ("enabled", enabled),
        ("warn_once", warn_once),
        ("on_diagnostic", on_diagnostic),
    ):
        if value is not _UNSET:
            given[name] = value
    changes: dict[str, Any] = {}
    for name, value in given.items():
        if name != "on_diagnostic" and type(value) is not bool:
            raise TypeError(f"configure_compat_diagnostics: {name} must be a bool.")
        if name == "on_diagnostic" and value is not None and not callable(value):
            raise TypeError("configure_compat_diagnostics: on_diagnostic must be callable or None.")
        changes[name] = value
    with _lock:
        _settings = attrs.evolve(_settings, **changes)
        return _settings


_SETTING_NAMES: Final = {
    "enabled": "enabled",
    "warnOnce": "warn_once",
    "warn_once": "warn_once",
    "onDiagnostic": "on_diagnostic",
    "on_diagnostic": "on_diagnostic",
}


def _settings_mapping(options: Mapping[str, Any] | None) -> dict[str, Any]:
    if options is None:
        return {}
    if not isinstance(options, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise TypeError("configure_compat_diagnostics: options must be a mapping.")
    settings: dict[str, Any] = {}
    for key, value in options.items():
        name = _SETTING_NAMES.get(key)
        if name is None:
            raise TypeError(
                f"configure_compat_diagnostics: unknown setting {key!r} (expected enabled, "
                "warnOnce or onDiagnostic)."
            )
        settings[name] = value
    return settings


def get_compat_diagnostics() -> tuple[CompatDiagnostic, ...]:
    """Every symbol used so far, sorted by symbol (immutable records).

    The tuple also equals the list of the same records (``get_compat_diagnostics() == []``
    before any use), as the reference's frozen array did.
    """
    with _lock:
        return FrozenList(_usage[symbol] for symbol in sorted(_usage))


def reset_compat_diagnostics() -> None:
    """Forget all counts and warned symbols and restore the default settings (for tests)."""
    global _settings
    with _lock:
        _usage.clear()
        _warned.clear()
        _settings = CompatDiagnosticsSettings()


def record_compat_usage(symbol: str, *, stacklevel: int = 2) -> None:
    """Count one use of ``symbol`` (trimmed), call ``on_diagnostic``, warn on the first use.

    Args:
        symbol: the public name used.
        stacklevel: passed to :func:`warnings.warn` (2: the code that called this function).

    Raises:
        TypeError: ``symbol`` is not a string or is blank after trimming.
    """
    if not isinstance(symbol, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise TypeError("record_compat_usage: symbol must be a string.")
    name = symbol.strip()
    if not name:
        raise TypeError("record_compat_usage: symbol must not be empty.")
    with _lock:
        settings = _settings
        if not settings.enabled:
            return
        now = iso_now()
        previous = _usage.get(name)
        diagnostic = CompatDiagnostic(
            symbol=name,
            count=1 if previous is None else previous.count + 1,
            first_used_at=now if previous is None else previous.first_used_at,
            last_used_at=now,
        )
        _usage[name] = diagnostic
        warn = settings.warn_once and name not in _warned
        if warn:
            _warned.add(name)
    if warn:
        replacement = _replacements.get(name)
        hint = f" Use {replacement} instead." if replacement else ""
        warnings.warn(
            f"[{COMPAT_WARNING_CODE}] actoviq.compat.{_python_names.get(name, name)} is a 0.x "
            "compatibility API "
            f"(deprecated, supported through 1.x).{hint}",
            CompatDeprecationWarning,
            stacklevel=stacklevel,
        )
    callback = settings.on_diagnostic
    if callback is not None:
        try:
            callback(diagnostic)
        except Exception:
            _log.exception("compat diagnostics callback failed for %s", name)


def register_replacement(symbol: str, replacement: str) -> None:
    """Remember the replacement named in ``symbol``'s deprecation warning (internal)."""
    _replacements[symbol] = replacement


def compat_symbol(
    symbol: str, replacement: str, *, python_name: str | None = None
) -> Callable[[T], T]:
    """Decorate a public compat function or class so every call or instantiation records.

    Coroutine functions stay coroutine functions; a class records in ``__init__`` (so
    subclasses record the decorated name too).

    Args:
        symbol: the name recorded: the reference's name of the symbol, so metrics keep their
            keys across the port (``createAgentSdk``; classes have the same name in both).
        replacement: what to use instead, named in the deprecation warning.
        python_name: the Python name, when it differs from ``symbol`` (shown in the warning).
    """
    register_replacement(symbol, replacement)
    if python_name is not None:
        _python_names[symbol] = python_name

    def decorate(target: T) -> T:
        if isinstance(target, type):
            cls = cast(type[Any], target)
            original_init = cast(Callable[..., None], cls.__init__)

            @functools.wraps(original_init)
            def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
                record_compat_usage(symbol, stacklevel=3)
                original_init(self, *args, **kwargs)

            cls.__init__ = __init__
            return target
        function = cast(Callable[..., Any], target)
        if inspect.iscoroutinefunction(function):

            @functools.wraps(function)
            async def call_async(*args: Any, **kwargs: Any) -> Any:
                record_compat_usage(symbol, stacklevel=3)
                return await function(*args, **kwargs)

            return cast(T, call_async)

        @functools.wraps(function)
        def call(*args: Any, **kwargs: Any) -> Any:
            record_compat_usage(symbol, stacklevel=3)
            return function(*args, **kwargs)

        return cast(T, call)

    return decorate
