"""Research: ``research.search``/``fetch``/``crawl``, ``artifacts.write``, ``research.citations``.

``research.search`` ranks the registered documents by how many query terms they contain and
returns each hit with a ``citations`` entry (``{id, title, url}``). The ``research.citations``
middleware (``afterRun``) collects the citations of every tool result of the run, deduplicated in
first-seen order, into ``result.metadata[citationsMetadataKey]``; artifact references that tools
returned go to ``result.metadata["artifacts"]``. When the profile requires citations and the run
cited nothing, the metadata carries ``citationsMissing: true`` (or, with ``enforce_citations``,
the run fails with :class:`CitationsRequiredError`).

``artifacts.write`` stores text as an artifact (the ``artifacts`` service, an
:class:`~actoviq.runtime.stores.ArtifactStore`: content-addressed bytes, integrity-checked) and
returns an ``artifact_ref`` instead of the content.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Final, cast

import attrs

from actoviq.core import JsonObject, JsonValue, RunResult, ToolResultItem
from actoviq.profiles.errors import ProfileError
from actoviq.runtime import (
    ArtifactStore,
    MiddlewareDefinition,
    RuntimeMiddlewareContext,
    RuntimeTool,
    ToolArtifact,
    ToolExecutionContext,
    ToolOutput,
    define_middleware,
    tool,
)

__all__ = [
    "ARTIFACT_TENANT",
    "CitationsRequiredError",
    "ResearchDocument",
    "SourceIndex",
    "artifact_tools",
    "citations_middleware",
    "collect_citations",
    "research_tools",
]

ARTIFACT_TENANT: Final = "default"
"""The tenant ``artifacts.write`` stores under when the run's metadata names none."""
_WORD: Final = re.compile(r"\w+", re.UNICODE)
_URL: Final = re.compile(r"https?://[^\s<>()\[\]\"']+")


class CitationsRequiredError(ProfileError):
    """The profile requires citations and the run cited no source."""

    default_code: ClassVar[str] = "PROFILE_CITATIONS_REQUIRED"


@attrs.frozen(kw_only=True, slots=True)
class ResearchDocument:
    """A registered source: an id, a title, a URL and its text."""

    id: str
    title: str
    url: str
    text: str

    def citation(self) -> JsonObject:
        """``{id, title, url}``."""
        return {"id": self.id, "title": self.title, "url": self.url}


def _terms(text: str) -> set[str]:
    return {word.lower() for word in _WORD.findall(text)}


class SourceIndex:
    """The registered research sources (searched by ``research.search``).

    Args:
        documents: the documents to index.
    """

    def __init__(self, documents: Iterable[ResearchDocument] = ()) -> None:
        self._documents: dict[str, ResearchDocument] = {}
        self._terms: dict[str, set[str]] = {}
        for document in documents:
            self.add(document)

    def add(self, document: ResearchDocument) -> None:
        """Index (or replace) ``document``."""
        self._documents[document.id] = document
        self._terms[document.id] = _terms(f"{document.title} {document.text}")

    def get(self, document_id: str) -> ResearchDocument | None:
        """The document with that id (or URL), or None."""
        found = self._documents.get(document_id)
        if found is None:
            found = next((d for d in self._documents.values() if d.url == document_id), None)
        return found

    def crawl(self, start: str, *, max_pages: int = 5) -> list[ResearchDocument]:
        """``start`` and the registered sources reachable through the URLs in their texts.

        Breadth first, each source once, at most ``max_pages``; URLs of unregistered sources
        are not followed (nothing is fetched from the network).

        Raises:
            LookupError: ``start`` is not a registered source.
        """
        first = self.get(start)
        if first is None:
            raise LookupError(f'No registered source "{start}".')
        pages, seen, queue = [first], {first.id}, [first]
        while queue and len(pages) < max_pages:
            for url in _URL.findall(queue.pop(0).text):
                linked = self.get(url.rstrip(".,;:!?"))
                if linked is not None and linked.id not in seen and len(pages) < max_pages:
                    seen.add(linked.id)
                    pages.append(linked)
                    queue.append(linked)
        return pages

    def search(self, query: str, *, limit: int = 5) -> list[ResearchDocument]:
        """The best ``limit`` documents for ``query`` (most matching terms first, then id)."""
        wanted = _terms(query)
        scored = [
            (len(wanted & terms), document_id)
            for document_id, terms in self._terms.items()
            if wanted & terms
        ]
        scored.sort(key=lambda pair: (-pair[0], pair[1]))
        return [self._documents[document_id] for _, document_id in scored[:limit]]


def research_tools(sources: SourceIndex, *, snippet_chars: int = 280) -> tuple[RuntimeTool, ...]:
    """``research.search``, ``fetch`` and ``crawl`` over ``sources`` (all read-only)."""

    @tool(name="research.search", effect="read")
    def search(query: str, limit: int = 5) -> dict[str, Any]:
        """Search the registered sources; every hit comes with its citation.

        Args:
            query: the words to look for.
            limit: the maximum number of hits (1-20).
        """
        hits = sources.search(query, limit=max(1, min(limit, 20)))
        results: list[JsonValue] = [
            {**hit.citation(), "snippet": hit.text[:snippet_chars]} for hit in hits
        ]
        return {"query": query, "results": results, "citations": [h.citation() for h in hits]}

    @tool(name="research.fetch", effect="read")
    def fetch(source: str) -> dict[str, Any]:
        """Read the full text of a registered source.

        Args:
            source: the source id or URL (from a search hit).
        """
        document = sources.get(source)
        if document is None:
            raise LookupError(f'No registered source "{source}".')
        return {**document.citation(), "text": document.text, "citations": [document.citation()]}

    @tool(name="research.crawl", effect="read")
    def crawl(source: str, max_pages: int = 5) -> dict[str, Any]:
        """Follow a registered source's links to the other registered sources it points to.

        Args:
            source: the source id or URL to start from.
            max_pages: the maximum number of sources to return (1-20), the start included.
        """
        pages = sources.crawl(source, max_pages=max(1, min(max_pages, 20)))
        results: list[JsonValue] = [
            {**page.citation(), "snippet": page.text[:snippet_chars]} for page in pages
        ]
        return {"source": source, "pages": results, "citations": [p.citation() for p in pages]}

    return (search, fetch, crawl)


def artifact_tools(artifacts: ArtifactStore) -> tuple[RuntimeTool, ...]:
    """``artifacts.write``: store text as an artifact and return its ``artifact_ref``."""

    @tool(name="artifacts.write", effect="idempotent-write")
    async def write(
        ctx: ToolExecutionContext, name: str, content: str, media_type: str = "text/plain"
    ) -> ToolOutput:
        """Store a (large) output as an artifact and get a reference to it.

        Args:
            ctx: the call's context (supplied by the runtime, not the model).
            name: a short name for the artifact.
            content: the text to store.
            media_type: the content's media type.
        """
        key = ctx.idempotency_key or f"{ctx.run_id}:{ctx.call_id}"
        artifact_id = f"artifact-{uuid.uuid5(uuid.NAMESPACE_URL, key)}"
        tenant = _tenant(ctx.metadata)
        existing = await artifacts.get(tenant_id=tenant, artifact_id=artifact_id)
        record = await artifacts.put(
            tenant_id=tenant,
            artifact_id=artifact_id,
            expected_revision=None if existing is None else existing.revision,
            media_type=media_type,
            data=content.encode("utf-8"),
            metadata={"name": name, "runId": ctx.run_id},
        )
        ref: JsonObject = {
            "type": "artifact_ref",
            "artifactId": record.artifact_id,
            "name": name,
            "mediaType": record.media_type,
            "size": record.size,
            "sha256": record.sha256,
        }
        return ToolOutput(
            value=ref,
            artifacts=(ToolArtifact(id=record.artifact_id, media_type=media_type, name=name),),
        )

    return (write,)


def _tenant(metadata: Mapping[str, Any] | None) -> str:
    tenant = metadata.get("tenantId") if metadata else None
    return tenant if isinstance(tenant, str) and tenant else ARTIFACT_TENANT


def collect_citations(items: Iterable[object]) -> tuple[list[JsonValue], list[JsonValue]]:
    """The citations and artifact refs of the tool results in ``items`` (deduplicated)."""
    citations: dict[str, JsonValue] = {}
    refs: dict[str, JsonValue] = {}
    for item in items:
        if not isinstance(item, ToolResultItem) or item.status != "success":
            continue
        output = item.output
        if not isinstance(output, dict):
            continue
        if output.get("type") == "artifact_ref" and isinstance(output.get("artifactId"), str):
            refs.setdefault(str(output["artifactId"]), output)
        listed = output.get("citations")
        if isinstance(listed, list):
            for citation in listed:
                if isinstance(citation, dict):
                    key = citation.get("url") or citation.get("id")
                    if isinstance(key, str):
                        citations.setdefault(key, citation)
    return list(citations.values()), list(refs.values())


def _result_policy(ctx: RuntimeMiddlewareContext) -> tuple[str, str]:
    metadata = ctx.agent.metadata if ctx.agent is not None else None
    profile = metadata.get("hadamardProfile") if metadata else None
    result = profile.get("result") if isinstance(profile, dict) else None
    if isinstance(result, dict):
        key = result.get("citationsMetadataKey")
        policy = result.get("citations")
        return (
            key if isinstance(key, str) and key else "citations",
            policy if isinstance(policy, str) else "optional",
        )
    return "citations", "optional"


def citations_middleware(*, enforce: bool = False, priority: int = 100) -> MiddlewareDefinition:
    """``afterRun`` middleware putting the run's citations into the result metadata.

    When the profile requires citations and the run cited nothing, the result metadata says so
    (``citationsMissing: true``); with ``enforce`` the run fails with
    :class:`CitationsRequiredError` instead.
    """

    async def collect(ctx: RuntimeMiddlewareContext, next: Any) -> Any:
        result: Any = await next()
        if not isinstance(result, RunResult):
            return result
        run = cast(RunResult[Any], result)
        if run.status != "completed":
            return run
        citations, refs = collect_citations(run.items)
        key, policy = _result_policy(ctx)
        missing = policy == "required" and not citations
        if missing and enforce:
            raise CitationsRequiredError(
                f'Agent "{run.agent_id}" must cite its sources; the run cited none.',
                details={"runId": run.run_id},
            )
        metadata: JsonObject = dict(run.metadata or {})
        metadata[key] = citations
        if missing:
            metadata["citationsMissing"] = True
        if refs:
            metadata["artifacts"] = refs
        return attrs.evolve(run, metadata=metadata)

    return define_middleware("research.citations", "afterRun", collect, priority=priority)
