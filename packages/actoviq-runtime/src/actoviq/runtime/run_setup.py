"""Starting a fresh run: the caller's options, input normalisation, trace and first state.

``AgentRuntime.run`` and ``AgentRuntime.stream`` take the same keyword options
(:class:`RunOptions`) and differ only in how they hand the run back.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal, TypedDict, cast

import attrs

from actoviq.core import (
    ITEM_TYPES,
    MAX_SAFE_INTEGER,
    AbortSignal,
    AgentSpec,
    CanonicalItem,
    CheckedJsonObject,
    ItemValidationError,
    JsonHandOff,
    JsonLike,
    JsonObject,
    JsonValueError,
    ModelSettings,
    PreservedItem,
    RunError,
    RunLimits,
    RunLimitsPatch,
    TextItem,
    empty_usage,
    iso_now,
    json_value_error,
)
from actoviq.events import (
    IdFactory,
    TraceContext,
    create_child_trace_context,
    create_root_trace_context,
    current_trace_context,
)
from actoviq.runtime.errors import RunCancelledError
from actoviq.runtime.execution import RunSeed
from actoviq.runtime.state import SerializedRunState

__all__ = [
    "RunOptions",
    "adopted_trace",
    "cancel_reason",
    "check_run_options",
    "consume_task",
    "fresh_seed",
    "fresh_state",
    "normalize_input",
    "run_metadata",
    "run_trace",
    "session_history_mode",
]


_KNOWN_ITEMS: Final = (*ITEM_TYPES.values(), PreservedItem)


class RunOptions(TypedDict, total=False):
    """The keyword options of ``AgentRuntime.run`` and ``AgentRuntime.stream`` (all default None).

    Attributes:
        context: the caller's context object, passed to tools and middleware.
        signal: an external abort signal (aborting it cancels the run).
        session_id: the session the run reads and appends to.
        tenant_id: the session's tenant (``"default"`` when omitted).
        expected_session_revision: CAS on the session revision at the start (Q16).
        workspace_id: the workspace the run belongs to.
        metadata: a JSON object carried on the state and the result (a
            :class:`~actoviq.core.CheckedJsonObject`, whole or as a value, is not checked again;
            a :class:`~actoviq.core.JsonHandOff`, whole or as a value, is taken as is, once: the
            orchestration layer's hand-off, accepted at run time and not part of this type, so
            code reading ``metadata`` from options keeps its plain-mapping type).
        run_id: the run id (a new UUID when omitted).
        parent_run_id: the parent run of a child run.
        parent_trace: the parent's trace context (else the current one, else a root trace).
        trace: the run's own trace context, adopted verbatim (no new span): an orchestration
            scope's trace. Its ``run_id`` is the run's id; ``parent_run_id``/``parent_trace``
            must then be omitted.
        limits: limits merged over the agent's and the runtime's.
        model_settings: settings merged over the agent's ``model_settings`` for this run (kept
            in the run state, so a resumed run continues with them).
        event_sequence_start: the run's first event gets the next sequence number: a retried
            attempt of a failed run (same ``run_id``) passes the failure's
            ``last_event_sequence`` so its events continue the run's sequence.
        session_history: ``"load"`` (default): the stored history is prepended to the input and
            the input plus the generated items are appended. ``"provided"``: the input *is* the
            history the model sees (e.g. a handoff's filtered conversation), so the stored
            history is not prepended and only the generated items are appended (the session
            revision is still checked).
    """

    context: Any
    signal: AbortSignal | None
    session_id: str | None
    tenant_id: str | None
    expected_session_revision: str | None
    workspace_id: str | None
    metadata: Mapping[str, JsonLike] | None
    run_id: str | None
    parent_run_id: str | None
    parent_trace: TraceContext | None
    trace: TraceContext | None
    limits: RunLimitsPatch | None
    model_settings: ModelSettings | None
    session_history: Literal["load", "provided"] | None
    event_sequence_start: int | None


_RUN_OPTIONS: Final = frozenset(RunOptions.__optional_keys__ | RunOptions.__required_keys__)


def normalize_input(value: object) -> list[CanonicalItem]:
    """The run input as canonical items (text becomes one user message).

    Raises:
        ItemValidationError: ``value`` is not text, a canonical item or a list of them.
    """
    if isinstance(value, str):
        return [TextItem(role="user", text=value)]
    known = _KNOWN_ITEMS
    if isinstance(value, known):
        return [cast(CanonicalItem, value)]
    if isinstance(value, list | tuple):
        items = list(cast(Sequence[object], value))
        for index, item in enumerate(items):
            if not isinstance(item, known):
                raise ItemValidationError(
                    f"Run input[{index}] must be a canonical item, got {type(item).__name__}."
                )
        return cast(list[CanonicalItem], items)
    raise ItemValidationError(
        f"Run input must be a string, a canonical item or a list of items, "
        f"got {type(value).__name__}."
    )


def run_trace(
    run_id: str,
    parent_run_id: str | None,
    parent_trace: TraceContext | None,
    *,
    ids: IdFactory,
) -> TraceContext:
    """The run's trace: a child of ``parent_trace`` (or of the current run), else a root."""
    parent = parent_trace
    if parent is None and parent_run_id is None:
        parent = current_trace_context()  # a run started inside another run: a child (S8)
    if parent is None:
        return create_root_trace_context(run_id, ids=ids)
    trace = create_child_trace_context(run_id, parent=parent, ids=ids)
    if parent_run_id is not None and parent_run_id != trace.parent_run_id:
        trace = attrs.evolve(trace, parent_run_id=parent_run_id)
    return trace


def adopted_trace(run_id: str | None, options: RunOptions) -> TraceContext | None:
    """The caller's own trace for the run (``trace`` option), checked against the other options.

    Raises:
        RunError: ``RUN_TRACE_INVALID``: not a :class:`TraceContext`, its run id is not the
            run's, or ``parent_run_id``/``parent_trace`` were given as well.
    """
    trace = options.get("trace")
    if trace is None:
        return None
    if not isinstance(trace, TraceContext):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise _trace_error(f"trace must be a TraceContext, got {type(trace).__name__}.")
    if run_id is not None and run_id != trace.run_id:
        raise _trace_error(f'trace.run_id "{trace.run_id}" is not the run id "{run_id}".')
    if options.get("parent_trace") is not None or (
        options.get("parent_run_id") is not None
        and options.get("parent_run_id") != trace.parent_run_id
    ):
        raise _trace_error(
            "trace is adopted verbatim: do not also pass parent_trace/parent_run_id."
        )
    return trace


def check_run_options(options: Mapping[str, object]) -> None:
    """Refuse an unknown option and a ``limits``/``signal`` of the wrong type, before the run.

    A typo such as ``sesion_id`` would otherwise be ignored and the run's session silently lost.

    Raises:
        RunError: ``RUN_OPTION_INVALID``.
    """
    if not options:
        return
    if not _RUN_OPTIONS.issuperset(options):
        unknown = sorted(set(options) - _RUN_OPTIONS)
        raise RunError(
            f"Unknown run option(s): {', '.join(unknown)}.",
            code="RUN_OPTION_INVALID",
            phase="runtime",
            details={"options": cast(Any, unknown)},
        )
    for name, kind in (("limits", RunLimitsPatch), ("signal", AbortSignal)):
        value = options.get(name)
        if value is not None and not isinstance(value, kind):
            raise RunError(
                f"{name} must be {kind.__name__}, got {type(value).__name__}.",
                code="RUN_OPTION_INVALID",
                phase="runtime",
                details={"option": name},
            )
    for name, wire in _ID_OPTIONS:
        value = options.get(name)
        if value is not None and not _good_id(value):
            # A bad id would start the run and fail later (a session load, a checkpoint write,
            # a JSON sink), or be stored where no other language can read it back.
            raise RunError(
                f"{name} must be a non-empty string without NUL characters, lone surrogates or "
                f"only whitespace, got {_shown(value)}.",
                code="RUN_OPTION_INVALID",
                phase="runtime",
                details={"option": wire},
            )


_ID_OPTIONS: Final = (
    ("run_id", "runId"),
    ("session_id", "sessionId"),
    ("tenant_id", "tenantId"),
    ("workspace_id", "workspaceId"),
    ("parent_run_id", "parentRunId"),
)
_BAD_ID_CHARACTER: Final = re.compile("[\x00\ud800-\udfff]")


def _good_id(value: object) -> bool:
    if type(value) is not str:
        return False
    if value.isascii():  # no surrogate possible: only NUL and blank are left to refuse
        return "\x00" not in value and value != "" and not value.isspace()
    return not value.isspace() and _BAD_ID_CHARACTER.search(value) is None


def _shown(value: object) -> str:
    """``value`` for an error message: its type, or a short ASCII-safe repr of a string."""
    if type(value) is not str:
        return type(value).__name__
    text = ascii(value[:40])
    return text if len(value) <= 40 else f"{text}..."


def session_history_mode(options: RunOptions) -> bool:
    """True when the caller provides the history (``session_history="provided"``).

    Raises:
        RunError: ``RUN_OPTION_INVALID`` for another value.
    """
    mode = options.get("session_history")
    if mode is None or mode == "load":
        return False
    if mode == "provided":
        return True
    raise RunError(
        f'session_history must be "load" or "provided", got {mode!r}.',
        code="RUN_OPTION_INVALID",
        phase="runtime",
        details={"option": "sessionHistory"},
    )


def _trace_error(message: str) -> RunError:
    return RunError(message, code="RUN_TRACE_INVALID", phase="runtime")


def run_metadata(given: object) -> dict[str, object] | None:
    """A run's metadata as the plain object its state keeps (strict JSON, checked).

    A :class:`~actoviq.core.CheckedJsonObject` (as the whole object or as a top-level value) was
    checked when it was made: it is copied, not walked again (its key still is). A
    :class:`~actoviq.core.JsonHandOff` was checked too and is fresh: it is taken as it is (no
    copy; a hand-off taken before is refused). Everything else is validated; ASCII keys holding
    ASCII text, a bool or None need no walk.

    Raises:
        ItemValidationError: not a JSON object, or a value that is not strict JSON.
    """
    if type(given) is JsonHandOff:
        return _taken(given)  # pyright: ignore[reportReturnType]
    if type(given) is CheckedJsonObject:
        return given.to_json()  # pyright: ignore[reportReturnType]
    if given is None:
        return None
    # Casts by name and only where needed: cast() is a call per use, and a subscripted type
    # (``dict[object, object]``) a new object each time it is evaluated.
    source: Mapping[object, object]
    if type(given) is dict:
        source = cast("dict[object, object]", given)
    elif isinstance(given, Mapping):
        source = dict(cast("Mapping[object, object]", given))
    else:
        raise ItemValidationError("Run metadata must be a JSON object.", field="metadata")
    metadata: dict[object, object] = {}
    walk: dict[object, object] | None = None  # what still needs the strict JSON walk
    for key, value in source.items():
        kind = type(value)
        if kind is JsonHandOff:
            metadata[key] = _taken(value)  # pyright: ignore[reportArgumentType]
            value = None  # checked when it was made: only its key is left to check
        elif kind is CheckedJsonObject:
            metadata[key] = value.to_json()  # pyright: ignore[reportUnknownMemberType, reportAttributeAccessIssue]
            value = None  # checked when it was made: only its key is left to check
        else:
            metadata[key] = value
        if (type(key) is str and key.isascii()) and (
            value is None or kind is bool or (kind is str and value.isascii())  # pyright: ignore[reportUnknownMemberType, reportAttributeAccessIssue]
        ):
            continue
        if walk is None:
            walk = {}
        walk[key] = value
    if walk is not None:
        error = json_value_error(walk, "Run metadata")
        if error is not None:
            raise ItemValidationError(
                error.message, field="metadata", path=error.path, reason=error.reason
            )
    return metadata  # pyright: ignore[reportReturnType]


def _taken(handed: JsonHandOff) -> JsonObject:
    try:
        return handed.take()
    except JsonValueError as error:
        raise ItemValidationError(
            "Run metadata must not reuse a JsonHandOff that was already taken.", field="metadata"
        ) from error


def fresh_state(
    agent: AgentSpec[Any, Any],
    digest: str,
    run_id: str,
    input: object,
    options: RunOptions,
    *,
    ids: IdFactory,
) -> SerializedRunState:
    """The first state of a fresh run (its input normalised, its trace created).

    Raises:
        ItemValidationError: ``metadata`` is not a JSON object, or the input is not canonical.
    """
    metadata = run_metadata(options.get("metadata"))
    items = normalize_input(input)
    settings = options.get("model_settings")
    if settings is not None and not isinstance(settings, ModelSettings):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise RunError(
            f"model_settings must be a ModelSettings, got {type(settings).__name__}.",
            code="RUN_OPTION_INVALID",
            phase="runtime",
            details={"option": "modelSettings"},
        )
    start = options.get("event_sequence_start") or 0
    if type(start) is not int or not 0 <= start <= MAX_SAFE_INTEGER:
        raise RunError(
            "event_sequence_start must be a non-negative safe integer.",
            code="RUN_OPTION_INVALID",
            phase="runtime",
            details={"option": "eventSequenceStart"},
        )
    return SerializedRunState(
        last_event_sequence=start,
        run_id=run_id,
        agent_id=agent.id,
        agent_config_digest=digest,
        status="running",
        trace=options.get("trace")
        or run_trace(run_id, options.get("parent_run_id"), options.get("parent_trace"), ids=ids),
        started_at=iso_now(),
        turn=0,
        input=tuple(items),
        transcript=(),
        generated_items=(),
        usage=empty_usage(),
        session_id=options.get("session_id"),
        tenant_id=options.get("tenant_id"),
        expected_session_revision=options.get("expected_session_revision"),
        workspace_id=options.get("workspace_id"),
        metadata=cast(JsonObject, metadata) if metadata is not None else {},
        model_settings=settings,
    )


def fresh_seed(
    agent: AgentSpec[Any, Any],
    digest: str,
    run_id: str,
    input: object,
    options: RunOptions,
    limits: RunLimits,
    streaming: bool,
    ids: IdFactory,
) -> RunSeed:
    """What a fresh run (``run``/``stream``) starts from: :func:`fresh_state` and its deadline.

    Raises:
        ItemValidationError / RunError: see :func:`fresh_state` and :func:`session_history_mode`.
    """
    provided_history = session_history_mode(options)
    state = fresh_state(agent, digest, run_id, input, options, ids=ids)
    return RunSeed(
        state=state,
        input=list(state.input),
        limits=limits,
        deadline_ms=time.time() * 1000 + limits.run_deadline_ms,
        context=options.get("context"),
        signal=options.get("signal"),
        streaming=streaming,
        decisions=None,
        provided_history=provided_history,
    )


def cancel_reason(reason: object) -> BaseException:
    """A handle's cancel reason as the exception the run is aborted with."""
    if isinstance(reason, BaseException):
        return reason
    return RunCancelledError("Run cancelled." if reason is None else str(reason))


def consume_task(task: asyncio.Task[Any]) -> None:
    """Done callback: mark the run task's exception retrieved (it surfaces via result()/run())."""
    if not task.cancelled():
        task.exception()
