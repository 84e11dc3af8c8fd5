"""Opt-in abilities: ``profile.memory`` (the memory store) and ``profile.compaction``.

Memory: at ``prepareInput`` the entries of the agent's namespace that share words with the new
input are recalled into a system note before it; at ``afterRun`` the exchange (input and output
text) is stored as a new entry (``memory_id`` = the run id and a digest of the exchange, so a
reused run id adds its new exchange and a repeated one is stored once). The ``memory`` service
is any :class:`~actoviq.runtime.stores.MemoryStore` (in-memory, SQLite, PostgreSQL).

Compaction: when :func:`~actoviq.profiles.run_profile` runs a compaction profile in a session,
the conversation the model sees is built here (``prepareInput``): the stored history plus the
new input; when its estimated size exceeds the budget (``max_context_tokens``, else the run's
``maxInputTokens``), the older part is summarised **through the model** (a run of a summariser
agent on the same runtime) and replaced by one summary note, keeping the last ``keep_recent``
items verbatim. The session itself is never rewritten: the new input is appended to it (CAS)
before the run, the generated items after, so the stored journal stays complete.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

import attrs

from actoviq.core import (
    AgentSpec,
    CanonicalItem,
    JsonObject,
    RunResult,
    TextItem,
    ToolResultItem,
    item_to_json,
)
from actoviq.profiles.errors import ProfileError
from actoviq.runtime import (
    MemoryStore,
    MiddlewareDefinition,
    RuntimeMiddlewareContext,
    RuntimeSessionStore,
    StorageConflictError,
    define_middleware,
)

__all__ = [
    "COMPACTION_METADATA_KEY",
    "CompactionError",
    "CompactionSettings",
    "compaction_middleware",
    "estimate_tokens",
    "memory_middleware",
]

COMPACTION_METADATA_KEY: Final = "profileCompaction"
"""Run metadata key :func:`run_profile` sets when the conversation is built by compaction."""
_WORD: Final = re.compile(r"\w+", re.UNICODE)
_SUMMARY_INSTRUCTIONS: Final = (
    "Summarise the conversation below for the assistant who continues it. Keep every fact, "
    "decision, name, number and open question; drop greetings and repetition. Answer with the "
    "summary only."
)


def _text_of(items: Sequence[CanonicalItem]) -> str:
    return "\n".join(item.text for item in items if isinstance(item, TextItem))


def _words(text: str) -> set[str]:
    return {word.lower() for word in _WORD.findall(text) if len(word) > 2}


def _field(value: object, key: str) -> object:
    """``value[key]`` of a (frozen) JSON object, else None."""
    if isinstance(value, Mapping):
        return cast(Mapping[str, object], value).get(key)
    return None


def _tenant(ctx: RuntimeMiddlewareContext) -> str:
    tenant = _field(ctx.state, "tenantId")
    return tenant if isinstance(tenant, str) and tenant else "default"


def _user_text(raw_input: object) -> str:
    if not isinstance(raw_input, tuple | list):
        return ""
    parts: list[str] = []
    for item in cast(Sequence[object], raw_input):
        if _field(item, "type") == "text" and _field(item, "role") == "user":
            parts.append(str(_field(item, "text")))
    return " ".join(parts)


def memory_middleware(
    *, recall_limit: int = 3, priority: int = 50
) -> tuple[MiddlewareDefinition, ...]:
    """``prepareInput`` (recall) and ``afterRun`` (remember) over the ``memory`` service."""

    async def recall(ctx: RuntimeMiddlewareContext, next: Any) -> Any:
        items: Sequence[CanonicalItem] = await next()
        if ctx.agent is None or ctx.services is None:
            return items
        store: MemoryStore = await ctx.services.resolve("memory")
        wanted = _words(_text_of(items))
        records = await store.list_memories(
            tenant_id=_tenant(ctx), namespace=f"profile:{ctx.agent.id}", limit=200
        )
        scored: list[tuple[int, str]] = []
        for record in records:
            value = record.value
            text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value
            overlap = len(wanted & _words(text))
            if overlap:
                scored.append((overlap, text))
        scored.sort(key=lambda pair: -pair[0])
        if not scored:
            return items
        note = "Relevant memory:\n" + "\n".join(f"- {text}" for _, text in scored[:recall_limit])
        return [TextItem(role="system", text=note, metadata={"profileMemory": True}), *items]

    async def remember(ctx: RuntimeMiddlewareContext, next: Any) -> Any:
        result: Any = await next()
        if not isinstance(result, RunResult):
            return result
        run = cast(RunResult[Any], result)
        if run.status != "completed" or ctx.agent is None or ctx.services is None:
            return run
        said = _user_text(_field(ctx.state, "input"))
        output = run.output if isinstance(run.output, str) else json.dumps(run.output, default=str)
        store: MemoryStore = await ctx.services.resolve("memory")
        value = f"User: {said} | Assistant: {output}"
        # Completed run ids may be reused: the exchange's digest keeps a new exchange apart,
        # and the same exchange stored again (a repeated afterRun) finds itself and stops.
        digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        with contextlib.suppress(StorageConflictError):  # this exchange is already remembered
            await store.put(
                tenant_id=_tenant(ctx),
                memory_id=f"{run.run_id}:{digest}",
                namespace=f"profile:{ctx.agent.id}",
                expected_revision=None,
                value=value,
            )
        return run

    return (
        define_middleware("profile.memory", "prepareInput", recall, priority=priority),
        define_middleware("profile.memory.remember", "afterRun", remember, priority=priority),
    )


def estimate_tokens(items: Sequence[CanonicalItem]) -> int:
    """A size estimate: four characters of text (or JSON) per token."""
    chars = 0
    for item in items:
        if isinstance(item, TextItem):
            chars += len(item.text)
        else:
            chars += len(json.dumps(item_to_json(item), ensure_ascii=False))
    return math.ceil(chars / 4)


@attrs.frozen(kw_only=True, slots=True)
class CompactionSettings:
    """The ``compaction`` service: when and how to compact.

    Attributes:
        max_context_tokens: the estimated size above which the history is compacted (None:
            the run's ``maxInputTokens``).
        keep_recent: how many of the newest items are kept verbatim.
        model: the summariser's model (None: the agent's model).
    """

    max_context_tokens: int | None = None
    keep_recent: int = 6
    model: str | None = None


class CompactionError(ProfileError):
    """The summariser run did not complete."""


def _cut(items: Sequence[CanonicalItem], keep: int) -> int:
    cut = max(0, len(items) - keep)
    while 0 < cut < len(items) and isinstance(items[cut], ToolResultItem):
        cut -= 1  # never separate a tool result from its call
    return cut


def compaction_middleware(
    settings: CompactionSettings, *, priority: int = 60
) -> MiddlewareDefinition:
    """``prepareInput``: build (and compact when over budget) the conversation of the run."""

    async def compact(ctx: RuntimeMiddlewareContext, next: Any) -> Any:
        items: list[CanonicalItem] = list(await next())
        run, agent = ctx.run, ctx.agent
        if run is None or agent is None or run.session_id is None or ctx.runtime is None:
            return items
        if _field(run.metadata, COMPACTION_METADATA_KEY) is None:
            return items  # a plain session run: the runtime prepends the history itself
        store: RuntimeSessionStore = await ctx.services.resolve("sessions")
        tenant = _tenant(ctx)
        loaded = await store.load(tenant_id=tenant, session_id=run.session_id)
        await store.append(
            tenant_id=tenant,
            session_id=run.session_id,
            items=items,
            expected_revision=loaded.revision,
        )
        history = [*loaded.items, *items]
        budget = settings.max_context_tokens
        if budget is None:
            limits = agent.limits
            budget = limits.max_input_tokens if limits and limits.max_input_tokens else 128_000
        if estimate_tokens(history) <= budget:
            return history
        cut = _cut(history, settings.keep_recent)
        if cut == 0:
            return history
        older, recent = history[:cut], history[cut:]
        transcript = "\n".join(
            f"{item.role}: {item.text}"
            if isinstance(item, TextItem)
            else json.dumps(item_to_json(item))
            for item in older
        )
        summariser: AgentSpec[Any, str] = AgentSpec(
            id=f"{agent.id}.compaction",
            name="Conversation summariser",
            instructions=_SUMMARY_INSTRUCTIONS,
            model=settings.model if settings.model is not None else agent.model,
        )
        summary = await ctx.runtime.run(summariser, transcript, parent_run_id=run.run_id)
        if summary.status != "completed" or not isinstance(summary.output, str):
            raise CompactionError("The compaction summary run did not complete.")
        note: JsonObject = {"profileCompaction": {"summarizedItems": len(older)}}
        return [
            TextItem(
                role="system",
                text=f"Summary of the earlier conversation:\n{summary.output}",
                metadata=note,
            ),
            *recent,
        ]

    return define_middleware("profile.compaction", "prepareInput", compact, priority=priority)
