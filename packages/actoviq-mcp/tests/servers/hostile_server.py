"""A hostile MCP server for the attack tests: hand-written JSON-RPC on stdio, no SDK.

It answers the handshake and ``tools/list`` correctly, then misbehaves per tool: a line that is
not JSON, an answer nested too deep to parse, an answer to another request id, a ``NaN`` in
``structuredContent``, a result of the wrong shape. Every ``tools/call`` first appends the tool
name to the file named by ``ACTOVIQ_MCP_LEDGER`` (the side effect a client cannot see).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

NAMES = ("garbage", "too_deep", "wrong_id", "nan", "bad_shape")


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def raw(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def answer(name: str, request_id: Any) -> None:
    rid = json.dumps(request_id)
    if name == "garbage":
        raw("this is not JSON-RPC")
    elif name == "too_deep":
        nested = "[" * 100_000 + "]" * 100_000
        raw(f'{{"jsonrpc":"2.0","id":{rid},"result":{{"content":[],"x":{nested}}}}}')
    elif name == "wrong_id":
        send({"jsonrpc": "2.0", "id": "someone-else", "result": {"content": []}})
    elif name == "nan":
        raw(
            f'{{"jsonrpc":"2.0","id":{rid},"result":{{"content":[],"structuredContent":{{"a":NaN}}}}}}'
        )
    else:
        send({"jsonrpc": "2.0", "id": request_id, "result": {"content": "not a list"}})


def main() -> None:
    tools = [
        {"name": name, "inputSchema": {"type": "object"}, "annotations": {"destructiveHint": True}}
        for name in NAMES
    ]
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "1"},
            }
            send({"jsonrpc": "2.0", "id": request_id, "result": result})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": tools}})
        elif method == "tools/call":
            name = message["params"]["name"]
            with open(os.environ["ACTOVIQ_MCP_LEDGER"], "a", encoding="utf-8") as ledger:
                ledger.write(name + "\n")
            answer(name, request_id)
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": request_id, "result": {}})


if __name__ == "__main__":
    main()
