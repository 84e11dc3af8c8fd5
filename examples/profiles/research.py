"""The research profile: search registered sources, store a long report as an artifact, cite.

The citations of every source the run used land in ``result.metadata["citations"]``; the report
goes to the artifact store (content-addressed, verified on read) and the model only sees an
``artifact_ref``. Scripted because the profile's dotted tool names are not valid OpenAI
function names.
"""

from __future__ import annotations

import asyncio
from typing import Any

from actoviq.core import ToolCallItem
from actoviq.profiles import (
    ResearchDocument,
    build_profile,
    create_profile_runtime,
    default_profile_registry,
    run_profile,
)
from actoviq.providers import ModelRegistry
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn

SOURCES = [
    ResearchDocument(
        id="wal",
        title="Write-ahead logging",
        url="https://example.org/wal",
        text="SQLite WAL mode lets readers continue while one writer appends to the log.",
    ),
    ResearchDocument(
        id="mvcc",
        title="MVCC in PostgreSQL",
        url="https://example.org/mvcc",
        text="PostgreSQL keeps row versions so readers never block writers.",
    ),
]


def script() -> ScriptedProvider:
    """A model that searches, files a report and answers."""
    return ScriptedProvider(
        [
            ScriptedTurn(
                tool_calls=[
                    ToolCallItem(
                        id="s", name="research.search", input={"query": "readers writers"}
                    ),
                    ToolCallItem(
                        id="a",
                        name="artifacts.write",
                        input={"name": "report.md", "content": "# Readers and writers\n" * 400},
                    ),
                ]
            ),
            "Both databases let readers proceed during writes (see the report).",
        ]
    )


async def main() -> None:
    registry = default_profile_registry(sources=SOURCES, allow=["artifacts.write"])
    research = build_profile("research", model="scripted:demo")
    async with create_profile_runtime(registry, models=ModelRegistry([script()])) as runtime:
        result = await run_profile(runtime, research, "How do readers and writers coexist?")
    metadata: dict[str, Any] = dict(result.metadata or {})
    print(result.output)
    citations: list[dict[str, str]] = metadata.get("citations") or []
    refs: list[dict[str, Any]] = metadata.get("artifacts") or []
    for citation in citations:
        print(f"cited: {citation['title']} <{citation['url']}>")
    for ref in refs:
        print(f"artifact: {ref['name']} ({ref['size']} bytes, {ref['mediaType']})")
        content = await registry.artifacts.read(
            tenant_id="default", artifact_id=str(ref["artifactId"])
        )
        print(f"  {len(content.data)} bytes, sha256 verified")


if __name__ == "__main__":
    asyncio.run(main())
