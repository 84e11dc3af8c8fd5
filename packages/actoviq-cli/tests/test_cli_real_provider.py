"""The real-provider path offline: the official ``openai`` SDK against a loopback server.

``--model local:m`` with ``[providers.local] kind = "openai-chat"`` and a ``base_url`` runs the
same command code as with a hosted provider: the key comes from the environment variable the
provider names, the SDK streams, and the key never reaches the output.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest
from cli_testkit import Project, last

KEY = "sk-proj-LOCALTESTKEY0123456789abcdef"


class _ChatCompletions(BaseHTTPRequestHandler):
    seen: ClassVar[list[dict[str, Any]]] = []

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append({"path": self.path, "auth": self.headers["Authorization"], "body": body})
        chunks: list[dict[str, Any]] = [
            {"delta": {"role": "assistant", "content": "Hello"}, "finish_reason": None},
            {"delta": {"content": " from the SDK"}, "finish_reason": None},
            {"delta": {}, "finish_reason": "stop"},
        ]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for chunk in chunks:
            data = {
                "id": "chatcmpl-1",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "local-model",
                "choices": [{"index": 0, **chunk}],
            }
            self.wfile.write(f"data: {json.dumps(data)}\n\n".encode())
        usage = {"prompt_tokens": 11, "completion_tokens": 4, "total_tokens": 15}
        final: dict[str, Any] = {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "local-model",
            "choices": [],
            "usage": usage,
        }
        self.wfile.write(f"data: {json.dumps(final)}\n\ndata: [DONE]\n\n".encode())


@pytest.fixture
def local_server() -> Iterator[str]:
    _ChatCompletions.seen.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ChatCompletions)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_a_real_sdk_provider_runs_through_the_same_command(
    project: Project, local_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.write_config(
        f'[providers.local]\nkind = "openai-chat"\nbase_url = "{local_server}"\n'
        'api_key_env = "LOCAL_LLM_KEY"\nmax_retries = 0\n'
    )
    missing = project.invoke("run", "assistant", "hi", "--model", "local:local-model")
    assert missing.exit_code == 0  # a base_url server may need no key

    monkeypatch.setenv("LOCAL_LLM_KEY", KEY)
    result, documents = project.json("run", "assistant", "hi there", "--model", "local:local-model")
    assert result.exit_code == 0, result.output
    final = last(documents, "result")
    assert final["output"] == "Hello from the SDK"
    assert final["usage"]["inputTokens"] == 11 and final["usage"]["outputTokens"] == 4
    deltas = [
        d["event"]["data"]["delta"]
        for d in documents
        if d["kind"] == "event" and d["event"]["type"] == "text.delta"
    ]
    assert "".join(deltas) == "Hello from the SDK"
    request = _ChatCompletions.seen[-1]
    assert request["path"] == "/v1/chat/completions" and request["auth"] == f"Bearer {KEY}"
    assert request["body"]["model"] == "local-model" and request["body"]["stream"] is True
    assert any(m.get("content") == "hi there" for m in request["body"]["messages"])
    assert KEY not in result.stdout and KEY not in result.stderr
    text = project.invoke("run", "assistant", "hi", "--model", "local:local-model")
    assert "Hello from the SDK" in text.stdout and "11 in / 4 out tokens" in text.stdout
