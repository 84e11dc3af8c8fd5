"""The one redaction engine (decision D6, spec 03 §5.5, §6.2, §8.4 S11).

Key-based redaction is always on: a mapping entry whose key is sensitive has its whole value
replaced. Keys are compared case-insensitively after normalising ``camelCase``, ``kebab-case`` and
spaces to ``snake_case``, and the patterns must match the *whole* key (``re.fullmatch``). Text
scanning (bearer tokens, ``sk-…``/``ghp_…``-style tokens, cloud keys, credentials in URLs,
``password=…`` assignments) is opt-in: key-based redaction is not content detection.

Tool-call argument *text* (streamed ``argumentsDelta`` pieces, raw ``arguments`` /
``partial_json`` strings) is JSON a key matcher cannot see into: it is parsed and redacted when
whole, withheld when a fragment (fail-closed; :mod:`actoviq.events.arguments`), unless the policy
opts into raw argument deltas.

The walk is iterative with a depth bound, never mutates its input and returns a strict JSON clone:
mappings, sequences, sets, attrs classes, dataclasses, pydantic models, enums, dates and
exceptions (``{name, message}``, never a traceback) are converted; anything else becomes a
``"[object <Type>]"`` marker. What strict JSON (D2) refuses is made deliverable the way
JavaScript would: non-finite floats become ``null``, text with lone UTF-16 surrogates is repaired
(:func:`~actoviq.core.well_formed_text`, U+FFFD), integers beyond ±(2^53 - 1) become decimal
strings (``"[integer of N bits]"`` past Python's 4,300-digit conversion limit). If the walk
cannot complete it raises :class:`RedactionError`, so the caller delivers
nothing (fail-closed).

Example:
    >>> Redactor().redact({"headers": {"Authorization": "Bearer abc"}, "apiKey": "k", "ok": 1})
    {'headers': {'Authorization': '[REDACTED]'}, 'apiKey': '[REDACTED]', 'ok': 1}
    >>> Redactor(RedactionPolicy(scan_text=True)).redact("see https://u:p4ss@host/x")
    'see https://[REDACTED]@host/x'
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
from collections.abc import Mapping, Sequence, Set
from datetime import date, datetime, time
from typing import Any, Final, cast

import attrs

from actoviq.core import (
    MAX_SAFE_INTEGER,
    UNSET,
    ActoviqError,
    JsonValue,
    converter,
    well_formed_text,
)
from actoviq.events.arguments import (
    ARGUMENT_TEXT_KEYS,
    ArgumentStreams,
    is_argument_delta_event,
    parse_argument_text,
)
from actoviq.events.envelope import RunEvent
from actoviq.events.errors import EventValidationError, RedactionError
from actoviq.events.redaction_keys import (
    DEFAULT_SENSITIVE_KEY_PATTERNS,
    SensitiveKeyMatcher,
    normalize_key,
)
from actoviq.events.redaction_policy import DEFAULT_REPLACEMENT, RedactionPolicy
from actoviq.events.redaction_text import may_hold_secret, stack_rules, text_probe, text_rules

__all__ = [
    "DEFAULT_KEY_CACHE_LIMIT",
    "DEFAULT_REPLACEMENT",
    "DEFAULT_SENSITIVE_KEY_PATTERNS",
    "REDACTION_PROCESSOR_ID",
    "RedactionPolicy",
    "RedactionProcessor",
    "Redactor",
    "SensitiveKeyMatcher",
    "may_hold_secret",
    "normalize_key",
    "redact_text",
    "redact_value",
]

REDACTION_PROCESSOR_ID: Final = "sensitive-data-redaction"
"""The id of the redaction processor every dispatcher installs by default."""


_CIRCULAR: Final = "[Circular]"
_LOW: Final = -MAX_SAFE_INTEGER
_HIGH: Final = MAX_SAFE_INTEGER
_OPENERS: Final = frozenset({"{", "["})  # a string starting so may embed a JSON document
_EXIT: Final = object()


DEFAULT_KEY_CACHE_LIMIT: Final = 4096
"""How many distinct key decisions a :class:`Redactor` remembers by default."""


class Redactor:
    """The redaction engine; thread-safe and reusable. See the module docstring.

    Key decisions are cached per exact key string (event payload keys repeat constantly). The
    cache is bounded: when it holds ``key_cache_limit`` keys it is emptied and refilled, so a
    stream of ever-new keys costs memory proportional to the limit, never to the stream. A cached
    decision is always the one :class:`SensitiveKeyMatcher` gives for the same key and policy.

    Args:
        policy: what to redact (default :class:`RedactionPolicy`).
        key_cache_limit: the most key decisions kept (``0`` disables the cache).

    Raises:
        EventValidationError: ``policy`` is not a :class:`RedactionPolicy`, or
            ``key_cache_limit`` is negative or not an int.

    Example:
        >>> Redactor(RedactionPolicy(additional_keys=("ssn",))).redact({"SSN": "123"})
        {'SSN': '[REDACTED]'}
    """

    __slots__ = ("_cache_limit", "_key_cache", "_matcher", "_policy", "_rules", "_text_probe")

    def __init__(
        self,
        policy: RedactionPolicy | None = None,
        *,
        key_cache_limit: int = DEFAULT_KEY_CACHE_LIMIT,
    ) -> None:
        if type(key_cache_limit) is not int or key_cache_limit < 0:
            raise EventValidationError(
                f"Redactor key_cache_limit must be a non-negative int, got {key_cache_limit!r}."
            )
        if policy is not None and not isinstance(policy, RedactionPolicy):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise EventValidationError(
                f"Redactor takes a RedactionPolicy, got {type(policy).__name__}."
            )
        self._policy = policy if policy is not None else RedactionPolicy()
        self._matcher = SensitiveKeyMatcher(self._policy)
        rules = text_rules(self._policy.replacement)
        if self._policy.strip_stack_traces:
            rules = stack_rules() + rules  # frames first: their paths never reach other rules
        self._rules = rules
        self._text_probe = text_probe(self._rules)
        # key → 0 (plain), 1 (sensitive: the value is replaced) or 2 (argument JSON text)
        self._key_cache: dict[str, int] = {}
        self._cache_limit = key_cache_limit

    @property
    def policy(self) -> RedactionPolicy:
        """The policy this redactor applies."""
        return self._policy

    @property
    def key_cache_size(self) -> int:
        """How many key decisions are cached right now (never more than the limit)."""
        return len(self._key_cache)

    def is_sensitive_key(self, key: str) -> bool:
        """True when a value stored under ``key`` must be replaced."""
        return self._key_kind(key) == 1

    def _key_kind(self, key: str) -> int:
        cached = self._key_cache.get(key)
        if cached is not None:
            return cached
        if self._matcher.matches(key):
            result = 1
        else:
            result = 2 if normalize_key(key) in ARGUMENT_TEXT_KEYS else 0
        if self._cache_limit and key.isascii():  # the fast path trusts cached keys as ASCII
            cache = self._key_cache
            if len(cache) >= self._cache_limit:
                cache.clear()
            cache[key] = result
        return result

    def argument_text(self, text: str) -> str:
        """Redact tool-argument JSON text (see :mod:`actoviq.events.arguments`).

        Whole JSON is parsed and redacted by key; a fragment is withheld (the replacement),
        unless the policy passes raw argument deltas.
        """
        policy = self._policy
        if not policy.raw_argument_deltas and text.strip():
            whole = parse_argument_text(text)  # arguments are an object: anything else is a piece
            if whole.__class__ is not dict and whole.__class__ is not list:
                return policy.replacement
        return self._string(text)

    def _string(self, text: str) -> str:
        """A string value: JSON embedded in it is redacted by key, then text scanning (opt-in)."""
        if text[:1] in _OPENERS:
            value = parse_argument_text(text)
            if value.__class__ is dict or value.__class__ is list:
                try:
                    redacted = self._walk(value)
                except RedactionError:
                    return self._policy.replacement  # too deep to redact: never delivered
                if redacted != value:
                    return json.dumps(redacted, ensure_ascii=False, separators=(",", ":"))
        return self.redact_text(text) if self._policy.scan_text else text

    def redact_text(self, text: str) -> str:
        """Replace secret shapes inside free text (always, regardless of ``scan_text``)."""
        if not may_hold_secret(text) or self._text_probe(text) is None:
            return text  # no rule matches anywhere, so every substitution would be a no-op
        for pattern, substitute in self._rules:
            text = pattern.sub(substitute, text)
        return text

    def redact(self, value: object) -> JsonValue:
        """Return a redacted, strict-JSON clone of ``value`` (the input is never mutated).

        Raises:
            RedactionError: the value nests deeper than ``max_depth`` or cannot be read; nothing
                derived from it may be delivered.
        """
        try:
            if value.__class__ is dict:
                flat = self._flat(value, 2)  # type: ignore[arg-type]
                if flat is not None:
                    return flat
            return self._walk(value)
        except RedactionError:
            raise
        except Exception as error:  # any failure while reading the value: fail closed
            raise RedactionError(
                f"Redaction failed ({type(error).__name__}); the value was not delivered."
            ) from None

    def _walk(self, value: object) -> JsonValue:
        policy = self._policy
        scan = policy.scan_text
        replacement = policy.replacement
        max_depth = policy.max_depth
        key_kind = self._key_kind
        root: list[Any] = [None]
        # id → object, held: a converted container (a tuple's list) freed mid-walk would let a
        # later object take its address and pass for an ancestor ("[Circular]").
        ancestors: dict[int, Any] = {}
        # (source, target container, slot, depth); target _EXIT pops an ancestor.
        stack: list[tuple[Any, Any, Any, int]] = [(value, root, 0, 0)]
        while stack:
            entry = stack.pop()
            source: Any = entry[0]
            target: Any = entry[1]
            slot: Any = entry[2]
            depth = entry[3]
            if target is _EXIT:
                del ancestors[source]
                continue
            kind: Any = source.__class__
            if kind is str:
                if not source.isascii():
                    source = well_formed_text(source)
                target[slot] = self._string(source) if scan or source[:1] in _OPENERS else source
                continue
            if kind is int:
                target[slot] = source if _LOW <= source <= _HIGH else _int_text(source)
                continue
            if source is None or kind is bool:
                target[slot] = source
                continue
            if kind is float:
                target[slot] = source if math.isfinite(source) else None
                continue
            if kind is not dict and kind is not list:
                ident = id(source)
                if ident in ancestors:
                    target[slot] = _CIRCULAR
                    continue
                converted, is_container = self._convert(source)
                if not is_container:
                    target[slot] = converted
                    continue
                if type(converted) is not dict and type(converted) is not list:
                    stack.append((converted, target, slot, depth))  # e.g. an enum's value
                    continue
                # Track the original object too, so a self-containing custom mapping ends.
                ancestors[ident] = source
                stack.append((ident, _EXIT, None, 0))
                source = cast(Any, converted)
            ident = id(source)
            if ident in ancestors:
                target[slot] = _CIRCULAR
                continue
            if depth >= max_depth:
                raise RedactionError(
                    f"Redaction refused a value nested deeper than {max_depth} levels."
                )
            ancestors[ident] = source
            stack.append((ident, _EXIT, None, 0))
            child_depth = depth + 1
            if type(source) is dict:
                mapping: dict[str, Any] = {}
                target[slot] = mapping
                pairs: list[tuple[Any, Any]] = list(cast(dict[Any, Any], source).items())
                for raw_key, child in pairs:
                    if child is UNSET:
                        continue
                    key = raw_key if type(raw_key) is str else str(raw_key)
                    if not key.isascii():
                        key = well_formed_text(key)
                    special = key_kind(key)
                    child_kind: Any = child.__class__
                    if special:
                        if special == 1:
                            mapping[key] = replacement
                            continue
                        if child_kind is str:
                            text = child if child.isascii() else well_formed_text(child)
                            mapping[key] = self.argument_text(text)
                            continue
                    if child_kind is str and child.isascii():
                        mapping[key] = (
                            self._string(child) if scan or child[:1] in _OPENERS else child
                        )
                    elif (
                        child is None
                        or child_kind is bool
                        or (child_kind is int and _LOW <= child <= _HIGH)
                    ):
                        mapping[key] = child
                    else:
                        mapping[key] = None
                        stack.append((child, mapping, key, child_depth))
                continue
            children: list[Any] = list(cast(list[Any], source))
            array: list[Any] = [None] * len(children)
            target[slot] = array
            for index, child in enumerate(children):
                child_kind: Any = child.__class__
                if child_kind is str and child.isascii():
                    array[index] = self._string(child) if scan or child[:1] in _OPENERS else child
                elif (
                    child is None
                    or child_kind is bool
                    or (child_kind is int and _LOW <= child <= _HIGH)
                ):
                    array[index] = child
                else:
                    stack.append((child, array, index, child_depth))
        return root[0]

    def _flat(self, source: dict[Any, Any], levels: int) -> dict[str, JsonValue] | None:
        """The common case without the general walk: a dict of str keys and plain scalars.

        With ``levels`` 2, values may also be such dicts (one level down). Returns ``None`` as
        soon as anything else shows up (non-str key, list, custom object, ``UNSET``, a float that
        is not finite, deeper nesting); the caller then runs :meth:`_walk` from scratch, which
        gives exactly the same result for the inputs this accepts.
        """
        policy = self._policy
        if policy.max_depth < levels:
            return None
        scan = policy.scan_text
        replacement = policy.replacement
        cache = self._key_cache
        out: dict[str, JsonValue] = {}
        for key, child in source.items():
            if key.__class__ is not str:
                return None
            special = cache.get(key)  # only ASCII keys are cached
            if special is None:
                if not key.isascii():
                    return None  # maybe a lone surrogate: the walk repairs it
                special = self._key_kind(key)
            kind = child.__class__
            if special:
                if child is UNSET:
                    return None
                if special == 1:
                    out[key] = replacement
                    continue
                if kind is str:
                    if not child.isascii():
                        return None
                    out[key] = self.argument_text(child)
                    continue
            if kind is str and child.isascii():
                out[key] = self._string(child) if scan or child[:1] in _OPENERS else child
            elif (
                kind is bool
                or child is None
                or (kind is int and _LOW <= child <= _HIGH)
                or (kind is float and math.isfinite(child))
            ):
                out[key] = child
            elif kind is dict and levels > 1:
                nested = self._flat(child, 1)
                if nested is None:
                    return None
                out[key] = nested
            else:
                return None
        return out

    def _convert(self, source: object) -> tuple[Any, bool]:
        """Map a non-JSON object to a JSON scalar (``False``) or a walkable container (``True``)."""
        if source is UNSET:
            return None, False
        if isinstance(source, enum.Enum):
            return source.value, True
        if isinstance(source, str):
            return str(source), True
        if isinstance(source, bool):
            return bool(source), False
        if isinstance(source, int):
            return int(source), True  # walked again: the safe-integer rule applies
        if isinstance(source, float):
            return float(source), True
        if isinstance(source, datetime | date | time):
            return source.isoformat(), False
        if isinstance(source, bytes | bytearray | memoryview):
            return f"[{len(cast(bytes, source))} bytes]", False
        if isinstance(source, BaseException):
            error: dict[str, Any] = {
                "name": type(source).__name__,
                "message": self.redact_text(str(source)),
            }
            if isinstance(source, ActoviqError):
                error["code"] = source.code
            return error, True
        if isinstance(source, Mapping):
            return dict(source.items()), True  # type: ignore[union-attr]
        if isinstance(source, Sequence | Set):
            return list(source), True  # type: ignore[arg-type]
        if attrs.has(type(source)):
            return converter.unstructure(source), True
        if dataclasses.is_dataclass(source) and not isinstance(source, type):
            return {
                field.name: getattr(source, field.name) for field in dataclasses.fields(source)
            }, True
        dump = getattr(source, "model_dump", None)
        if callable(dump):
            return dump(mode="json"), True
        return f"[object {type(source).__name__}]", False


def _int_text(value: int) -> str:
    """An unsafe integer as its decimal string; past the interpreter's digit limit, a marker."""
    try:
        return str(value)
    except ValueError:  # more than sys.get_int_max_str_digits() digits (4,300 by default)
        return f"[integer of {value.bit_length()} bits]"


class RedactionProcessor:
    """The event processor around a :class:`Redactor` (id ``sensitive-data-redaction``).

    Only ``event.data`` is processed; envelope fields are untouched. ``fail_closed`` tells the
    dispatcher that a failure must drop the event, never deliver it unredacted; ``clones_data``
    tells it that the new ``data`` is a fresh structure sharing nothing mutable with the input
    (a subclass overriding :meth:`process` must keep that true or set ``clones_data = False``).
    """

    fail_closed: Final = True
    clones_data: bool = True

    def __init__(
        self,
        redactor: Redactor | None = None,
        *,
        id: str = REDACTION_PROCESSOR_ID,
    ) -> None:
        self.id = id
        self.redactor = redactor if redactor is not None else Redactor()
        self._streams = ArgumentStreams()

    def process(self, event: RunEvent) -> RunEvent:
        """Return a copy of ``event`` with redacted data.

        A ``model.tool_call.delta`` loses its ``argumentsDelta`` (unless the policy passes raw
        argument deltas): it carries ``argumentsLength`` instead, and the delta that completes
        the call's arguments also carries them parsed and redacted as ``arguments``.

        Raises:
            RedactionError: redaction failed (the event must not be delivered).
        """
        data: object = event.data
        kind = event.type
        if kind.startswith("model.") and data.__class__ is dict:
            if kind == "model.tool_call.delta":
                data = self._tool_call_delta(event.run_id, cast(dict[str, Any], data))
            elif kind == "model.provider.event":
                data = self._provider_event(cast(dict[str, Any], data))
            elif kind in ("model.completed", "model.response.completed"):
                self._streams.forget_run(event.run_id)
        elif kind in _RUN_ENDS:
            self._streams.forget_run(event.run_id)
        return event.with_data(self.redactor.redact(data))

    def _tool_call_delta(self, run_id: str, data: dict[str, Any]) -> dict[str, Any]:
        piece = data.get("argumentsDelta")
        if type(piece) is not str or self.redactor.policy.raw_argument_deltas:
            return data
        shown = {key: value for key, value in data.items() if key != "argumentsDelta"}
        shown["argumentsLength"] = len(piece)
        call_id = data.get("callId")
        if isinstance(call_id, str):
            whole = self._streams.add(run_id, call_id, piece)
            if whole is not None:
                shown["arguments"] = whole  # redacted by key with the rest of the data
        return shown

    def _provider_event(self, data: dict[str, Any]) -> dict[str, Any]:
        raw = data.get("event")
        if (
            not is_argument_delta_event(raw)
            or self.redactor.policy.raw_argument_deltas
            or "delta" not in cast(dict[str, Any], raw)
        ):
            return data
        inner = dict(cast(dict[str, Any], raw))
        inner["delta"] = self.redactor.argument_text(str(inner["delta"]))
        return {**data, "event": inner}


_RUN_ENDS: Final = frozenset({"run.completed", "run.failed", "run.cancelled", "run.interrupted"})


_DEFAULT = Redactor()


def redact_value(value: object, policy: RedactionPolicy | None = None) -> JsonValue:
    """Shortcut for ``Redactor(policy).redact(value)`` (the default policy is shared)."""
    return (_DEFAULT if policy is None else Redactor(policy)).redact(value)


def redact_text(text: str, policy: RedactionPolicy | None = None) -> str:
    """Shortcut for ``Redactor(policy).redact_text(text)``."""
    return (_DEFAULT if policy is None else Redactor(policy)).redact_text(text)
