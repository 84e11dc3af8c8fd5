"""Release-gate plugin for actoviq-compat.

* persistence: every canonical item survives the JSON v1 session files as the runtime's session
  store (written through the runtime adapter, read back by a fresh store from the files);
* redaction: the legacy ``AgentEvent`` stream of a façade run whose tool receives and returns the
  item never carries the secret (tool input, tool output, the ``response.message`` and
  ``response.completed`` payloads).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness import register_persistence, register_redaction

from actoviq.compat import (
    LegacyJsonV1SessionStore,
    ModelProviderLegacyAdapter,
    configure_compat_diagnostics,
    create_agent_sdk,
)
from actoviq.core import CanonicalItem, ToolCallItem, item_to_json
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn
from actoviq.runtime import StoreRuntimeSessionAdapter, tool

# The gate measures behaviour, not migration progress: no deprecation warnings here.
configure_compat_diagnostics(warn_once=False)


async def _json_v1_roundtrip(items: Sequence[CanonicalItem]) -> Sequence[CanonicalItem]:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        writer = StoreRuntimeSessionAdapter(LegacyJsonV1SessionStore(root).sessions)
        await writer.append(tenant_id="gate", session_id="s", items=items, expected_revision="0")
        # A fresh store: the round trip goes through the file, not a cache.
        reader = StoreRuntimeSessionAdapter(LegacyJsonV1SessionStore(root).sessions)
        return (await reader.load(tenant_id="gate", session_id="s")).items


@tool(effect="read")
def echo(item: dict[str, Any]) -> dict[str, Any]:
    """Return the item it was given.

    Args:
        item: a canonical item as JSON.
    """
    return item


async def _legacy_stream(item: CanonicalItem, secret: str) -> Any:
    del secret  # the gate asserts its absence in what we return
    item_json = item_to_json(item)
    provider = ScriptedProvider(
        [
            ScriptedTurn(
                tool_calls=[ToolCallItem(id="c1", name="echo", input={"item": item_json})]
            ),
            ScriptedTurn(text="done"),
        ]
    )
    async with await create_agent_sdk(
        modelApi=ModelProviderLegacyAdapter(provider), tools=[echo], model="gate"
    ) as sdk:
        stream = sdk.stream("go")
        events = [event async for event in stream]
        await stream.result
    return json.loads(json.dumps(events))


register_persistence("json-v1-sessions", _json_v1_roundtrip)
register_redaction("compat-legacy-events", _legacy_stream)
