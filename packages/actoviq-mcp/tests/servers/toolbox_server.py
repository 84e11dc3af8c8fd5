"""A real MCP server for the actoviq.mcp tests, written with the SDK's ``MCPServer``.

Run as ``python toolbox_server.py stdio``, ``... http`` (streamable HTTP) or ``... sse`` (the
older HTTP+SSE transport); over HTTP it prints ``PORT <n>`` once it listens on 127.0.0.1.
Every call that has an effect appends one JSON line to the file named by ``ACTOVIQ_MCP_LEDGER``,
so tests count side effects on the server side, across processes and restarts.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ContentBlock, ImageContent, TextContent, ToolAnnotations
from pydantic import BaseModel

LEDGER = Path(os.environ["ACTOVIQ_MCP_LEDGER"])
# A 1x1 transparent PNG.
PIXEL = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)

app: MCPServer[Any] = MCPServer("toolbox", log_level="WARNING")
store: dict[str, str] = {}
naps: dict[str, anyio.Event] = {}


def record(event: str, **fields: object) -> None:
    with LEDGER.open("a", encoding="utf-8") as ledger:
        ledger.write(json.dumps({"event": event, "pid": os.getpid(), **fields}) + "\n")
        ledger.flush()
        os.fsync(ledger.fileno())


def meta_of(ctx: Context[Any]) -> dict[str, Any]:
    meta = ctx.request_context.meta
    return dict(meta) if meta else {}


@app.tool(annotations=ToolAnnotations(read_only_hint=True))
def lookup(key: str) -> str:
    """Read a value."""
    return store.get(key, "missing")


@app.tool(annotations=ToolAnnotations(idempotent_hint=True, destructive_hint=False))
def put(key: str, value: str, ctx: Context[Any]) -> str:
    """Store a value (idempotent)."""
    store[key] = value
    record(
        "put", key=key, value=value, idempotencyKey=meta_of(ctx).get("io.actoviq/idempotencyKey")
    )
    return f"stored {key}"


@app.tool(annotations=ToolAnnotations(destructive_hint=True))
def append_line(text: str, ctx: Context[Any]) -> str:
    """Append a line to the ledger (a side effect)."""
    record("append_line", text=text, runId=meta_of(ctx).get("io.actoviq/runId"))
    return f"appended {text}"


@app.tool()
def touch(name: str) -> str:
    """A tool without annotations."""
    record("touch", name=name)
    return f"touched {name}"


@app.tool(annotations=ToolAnnotations(read_only_hint=True))
async def count_to(n: int, ctx: Context[Any]) -> str:
    """Report progress n times."""
    for step in range(1, n + 1):
        await ctx.report_progress(step, n, f"step {step}")
    return f"counted to {n}"


@app.tool(annotations=ToolAnnotations(destructive_hint=True))
async def nap(seconds: float, label: str, ctx: Context[Any]) -> str:
    """Sleep; records whether the sleep was cancelled."""
    done = naps.setdefault(label, anyio.Event())
    record("nap-start", label=label)
    try:
        await ctx.report_progress(0, 1, "sleeping")
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        record("nap-cancelled", label=label)
        raise
    finally:
        done.set()
    record("nap-done", label=label)
    return "rested"


@app.tool(annotations=ToolAnnotations(read_only_hint=True))
async def nap_outcome(label: str) -> str:
    """Wait (bounded) until nap ``label`` ended, then say how it ended."""
    with anyio.fail_after(20):
        await naps.setdefault(label, anyio.Event()).wait()
    text = await anyio.Path(LEDGER).read_text("utf-8")
    for line in reversed(text.splitlines()):
        entry = json.loads(line)
        if entry.get("label") == label and entry["event"] in ("nap-cancelled", "nap-done"):
            return str(entry["event"])
    return "unknown"


class Chart(BaseModel):
    title: str
    points: list[int]


@app.tool(annotations=ToolAnnotations(read_only_hint=True))
def chart(title: str) -> Annotated[CallToolResult, Chart]:
    """An image plus structured content."""
    blocks: list[ContentBlock] = [
        TextContent(type="text", text=f"chart {title}"),
        ImageContent(type="image", data=PIXEL, mime_type="image/png"),
    ]
    return CallToolResult(
        content=blocks,
        structured_content={"title": title, "points": [1, 2, 3]},
    )


@app.tool(annotations=ToolAnnotations(read_only_hint=True))
def picture() -> Image:
    """Only an image."""
    return Image(data=base64.b64decode(PIXEL), format="png")


@app.tool(annotations=ToolAnnotations(read_only_hint=True))
def explode(message: str) -> str:
    """Always raises."""
    raise ToolError(f"exploded: {message}")


@app.tool(annotations=ToolAnnotations(destructive_hint=True))
def charge(amount: int) -> str:
    """Record a charge, then die before answering (the effect happened; the caller cannot know)."""
    record("charge", amount=amount)
    os.kill(os.getpid(), signal.SIGKILL)
    return "unreachable"


@app.tool(annotations=ToolAnnotations(read_only_hint=True))
async def grow(name: str, ctx: Context[Any]) -> str:
    """Add a read-only tool ``name`` and announce the change (both protocol eras)."""

    def added(text: str) -> str:
        return f"{name}: {text}"

    app.add_tool(
        added,
        name=name,
        description=f"Added at run time: {name}.",
        annotations=ToolAnnotations(read_only_hint=True),
    )
    await ctx.session.send_tool_list_changed()
    await ctx.notify_tools_changed()
    return f"grew {name}"


@app.tool(annotations=ToolAnnotations(read_only_hint=True))
def header(name: str, ctx: Context[Any]) -> str:
    """The value of a request header (HTTP only)."""
    headers = ctx.headers or {}
    return headers.get(name, "absent")


@app.tool(annotations=ToolAnnotations(read_only_hint=True))
async def shrink(name: str, ctx: Context[Any]) -> str:
    """Remove tool ``name`` and announce the change (both protocol eras)."""
    app.remove_tool(name)
    await ctx.session.send_tool_list_changed()
    await ctx.notify_tools_changed()
    return f"removed {name}"


@app.resource("notes://today", mime_type="text/markdown")
def today() -> str:
    """Today's notes."""
    return "# Today\nship the MCP package"


@app.prompt()
def summarise(topic: str) -> str:
    """Ask for a summary."""
    return f"Summarise {topic} in one line."


def main() -> None:
    record("start", transport=sys.argv[1])
    if sys.argv[1] == "stdio":
        app.run()
        record("stop", transport="stdio")  # stdin closed: the client disconnected
        return
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    web = app.sse_app() if sys.argv[1] == "sse" else app.streamable_http_app()
    config = uvicorn.Config(web, log_level="warning")
    anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    main()
