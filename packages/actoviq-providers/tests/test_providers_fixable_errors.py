"""Issue 13 defect 6: errors that say how to fix them, and never carry a secret.

A missing extra names the ``pip install`` line; a missing API key fails at construction naming
the variable to set (a keyless server only when ``base_url`` is given and the key is explicitly
optional, and then no Authorization header at all); a connection failure names the URL and the
reason; a 404 carries the server's message.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from typing import Any

import httpx2
import pytest
from loopback import LoopbackServer, Received, Reply
from providers_support import ADAPTERS, SECRET

from actoviq.core import ProviderTransportError, TextItem
from actoviq.providers import (
    MissingAPIKeyError,
    MissingExtraError,
    ModelRequest,
    ProviderConfigurationError,
)
from actoviq.providers._sdk_adapter import SDKModelProvider
from actoviq.providers.anthropic import AnthropicProvider
from actoviq.providers.openai import OpenAIChatProvider, OpenAIResponsesProvider

KEY_ENV = {
    "openai-responses": ("OPENAI_API_KEY",),
    "openai-chat": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"),
}
CLASSES: dict[str, Any] = {
    "openai-responses": OpenAIResponsesProvider,
    "openai-chat": OpenAIChatProvider,
    "anthropic": AnthropicProvider,
}
OK: dict[str, Any] = {
    "openai-responses": {"id": "r", "object": "response", "status": "completed", "output": []},
    "openai-chat": {
        "id": "c",
        "object": "chat.completion",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"content": "ok"}}],
    },
    "anthropic": {"id": "m", "type": "message", "content": [], "stop_reason": "end_turn"},
}


def base(name: str, url: str) -> str:
    return url if name == "anthropic" else f"{url}/v1"


def request(name: str) -> ModelRequest:
    return ModelRequest(model=f"{name}:m", input=[TextItem(role="user", text="hi")])


def free_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(("module", "extra"), [("openai", "openai"), ("anthropic", "anthropic")])
@pytest.mark.parametrize("missing", ["httpx2", "sdk"])
def test_missing_extra_names_the_pip_install_line(module: str, extra: str, missing: str) -> None:
    blocked = module if missing == "sdk" else "httpx2"
    code = (
        "import sys\n"
        f"sys.modules[{blocked!r}] = None\n"
        "try:\n"
        f"    import actoviq.providers.{module}\n"
        "except ImportError as error:\n"
        "    print(type(error).__name__, error.code, error.missing)\n"
        "    print(error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    first, message = done.stdout.splitlines()[:2]
    assert first == f"MissingExtraError PROVIDER_EXTRA_MISSING {blocked}"
    assert f'pip install "actoviq-providers[{extra}]"' in message


def test_missing_extra_error_is_an_import_error() -> None:
    error = MissingExtraError(extra="openai", missing="openai")
    assert isinstance(error, ImportError) and error.to_json()["details"]["extra"] == "openai"


@pytest.mark.parametrize("name", ADAPTERS)
def test_no_api_key_fails_at_construction_naming_the_variable(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in KEY_ENV[name]:
        monkeypatch.delenv(variable, raising=False)
    with pytest.raises(MissingAPIKeyError) as info:
        CLASSES[name]()
    assert info.value.env_var == KEY_ENV[name][0] and KEY_ENV[name][0] in str(info.value)
    assert info.value.code == "PROVIDER_API_KEY_MISSING" and "require_api_key=False" in str(
        info.value
    )
    with pytest.raises(MissingAPIKeyError):  # a base_url alone does not make the key optional
        CLASSES[name](base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ProviderConfigurationError, match="needs base_url"):
        CLASSES[name](require_api_key=False)  # the official API always needs a key


@pytest.mark.parametrize("name", ADAPTERS)
async def test_keyless_server_gets_no_credential_at_all(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in KEY_ENV[name]:  # a key in the environment must not reach this server
        monkeypatch.setenv(variable, SECRET)

    async def script(received: Received, reply: Reply) -> None:
        await reply.json(OK[name])

    async with LoopbackServer(script) as server:
        url = base(name, server.url)
        async with CLASSES[name](base_url=url, require_api_key=False) as provider:
            await provider.generate(request(name))
        async with CLASSES[name](base_url=url) as provider:  # required: the env key is sent
            await provider.generate(request(name))
    keyless, keyed = server.requests
    assert "authorization" not in keyless.headers and "x-api-key" not in keyless.headers
    assert SECRET not in json.dumps(keyless.headers)
    assert (
        keyed.headers.get("authorization") == f"Bearer {SECRET}"
        or keyed.headers.get("x-api-key") == SECRET
    )


@pytest.mark.parametrize("name", ADAPTERS)
async def test_connection_refused_names_the_url_and_reason(name: str) -> None:
    url = base(name, f"http://127.0.0.1:{free_port()}")
    provider: SDKModelProvider = CLASSES[name](api_key=SECRET, base_url=url, max_retries=0)
    async with provider:
        with pytest.raises(ProviderTransportError) as info:
            await provider.generate(request(name))
    message = str(info.value)
    assert url in message and "ConnectError" in message and info.value.retryable
    assert SECRET not in message and SECRET not in json.dumps(info.value.to_json())


@pytest.mark.parametrize("name", ADAPTERS)
async def test_404_carries_the_servers_message(name: str) -> None:
    async def script(received: Received, reply: Reply) -> None:
        await reply.json({"detail": "Not Found"}, status=404)  # FastAPI's (llama.cpp server)

    async with LoopbackServer(script) as server:
        url = base(name, server.url)
        async with CLASSES[name](api_key=SECRET, base_url=url, max_retries=3) as provider:
            with pytest.raises(ProviderTransportError) as info:
                await provider.generate(request(name))
    error = info.value
    assert (error.status, error.retryable) == (404, False) and len(server.requests) == 1
    assert "HTTP 404: Not Found" in str(error) and server.url in str(error)
    assert "base_url" in str(error)


@pytest.mark.parametrize("name", ADAPTERS)
async def test_secrets_never_reach_messages(name: str) -> None:
    # A server that echoes the credential back in its error message (some proxies do).
    def echo(request: httpx2.Request) -> httpx2.Response:
        header = request.headers.get("authorization") or request.headers.get("x-api-key", "")
        body = {"error": {"message": f"invalid credential {header}", "type": "auth"}}
        return httpx2.Response(401, json=body)

    client = httpx2.AsyncClient(transport=httpx2.MockTransport(echo))
    url = base(name, "https://gateway.example")
    provider = CLASSES[name](api_key=SECRET, base_url=url, http_client=client, max_retries=0)
    async with provider:
        with pytest.raises(ProviderTransportError) as info:
            await provider.generate(request(name))
    text = str(info.value) + json.dumps(info.value.to_json()) + repr(info.value)
    assert SECRET not in text
    assert "invalid credential Bearer ***" in text and "check the API key" in text


@pytest.mark.parametrize("name", ADAPTERS)
async def test_urls_in_messages_lose_user_info_and_query(name: str) -> None:
    port = free_port()
    url = base(name, f"http://user:hunter2@127.0.0.1:{port}")
    provider = CLASSES[name](api_key=SECRET, base_url=url, max_retries=0)
    async with provider:
        with pytest.raises(ProviderTransportError) as info:
            await provider.generate(request(name))
    text = str(info.value) + json.dumps(info.value.to_json())
    assert "hunter2" not in text and SECRET not in text
    assert f"http://127.0.0.1:{port}/" in text
