"""Contract tests: limits, capability names, router, request parsing, protocol framing, trusted."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from actoviq.core import AbortController, AbortSignal, JsonValue, to_json
from actoviq.workflow import (
    HARD_MAX_MESSAGE_BYTES,
    CapabilityCallContext,
    LocalIsolatedProcessWorkflowExecutor,
    SandboxCapabilities,
    TrustedInProcessWorkflowExecutor,
    TrustedWorkflowRequest,
    UntrustedWorkflowRejectedError,
    UntrustedWorkflowRequest,
    WorkflowAbortedError,
    WorkflowCapabilityNotAllowedError,
    WorkflowConfigurationError,
    WorkflowExecutionError,
    WorkflowExecutionRequest,
    WorkflowExecutionResult,
    WorkflowExecutorLimits,
    WorkflowExecutorRouter,
    WorkflowMessageLimitError,
    WorkflowOutputLimitError,
    WorkflowProtocolError,
    WorkflowTimeoutError,
    WorkflowTrustTierError,
    execute_workflow,
    resolve_workflow_executor_limits,
    validate_capability_name,
    workflow_request_from_json,
)
from actoviq.workflow.protocol import LineSplitter, StderrCollector, decode_message

ECHO = "def main(context):\n    return {'echoed': context['input']}\n"


# --- limits ---------------------------------------------------------------------------------
def test_limit_defaults() -> None:
    limits = resolve_workflow_executor_limits()
    assert (limits.timeout_ms, limits.max_output_bytes) == (60_000, 262_144)
    assert (limits.max_message_bytes, limits.max_protocol_messages) == (1_048_576, 1_024)


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("timeout_ms", 0, "timeoutMs must be a positive safe integer."),
        ("max_output_bytes", -1, "maxOutputBytes must be a positive safe integer."),
        ("max_message_bytes", 1.5, "maxMessageBytes must be a positive safe integer."),
        ("max_protocol_messages", 2**53, "maxProtocolMessages must be a positive safe integer."),
        ("max_message_bytes", HARD_MAX_MESSAGE_BYTES + 1, "cannot exceed 16777216."),
    ],
)
def test_invalid_limits_raise_configuration_error(field: str, value: object, fragment: str) -> None:
    with pytest.raises(WorkflowConfigurationError, match=fragment) as caught:
        resolve_workflow_executor_limits(**{field: value})  # type: ignore[arg-type]
    assert caught.value.code == "WORKFLOW_CONFIGURATION_ERROR"


# --- capability names -----------------------------------------------------------------------
@pytest.mark.parametrize("name", ["", "1abc", "constructor", "__proto__", "a b", "x" * 129, 7])
def test_invalid_capability_names(name: object) -> None:
    with pytest.raises(WorkflowConfigurationError, match="Invalid workflow capability name"):
        validate_capability_name(name)


@pytest.mark.parametrize("name", ["echo", "fs.read", "a:b-c_d", "x" * 128])
def test_valid_capability_names(name: str) -> None:
    assert validate_capability_name(name) == name


def test_handlers_must_be_callable() -> None:
    with pytest.raises(WorkflowConfigurationError, match="must be callable"):
        TrustedInProcessWorkflowExecutor(capabilities={"echo": "nope"})  # type: ignore[dict-item]


# --- router ---------------------------------------------------------------------------------
async def test_default_router_rejects_untrusted(tmp_path: Path) -> None:
    router = WorkflowExecutorRouter()
    with pytest.raises(UntrustedWorkflowRejectedError) as caught:
        await router.execute(UntrustedWorkflowRequest(source=ECHO, workspace_dir=str(tmp_path)))
    assert caught.value.code == "UNTRUSTED_WORKFLOW_REJECTED"


async def test_untrusted_never_falls_back_to_trusted(tmp_path: Path) -> None:
    async with WorkflowExecutorRouter(trusted_executor=TrustedInProcessWorkflowExecutor()) as r:
        with pytest.raises(UntrustedWorkflowRejectedError):
            await r.execute(UntrustedWorkflowRequest(source=ECHO, workspace_dir=str(tmp_path)))


async def test_default_router_has_no_trusted_executor() -> None:
    with pytest.raises(WorkflowConfigurationError, match="explicitly configured"):
        await WorkflowExecutorRouter().execute(TrustedWorkflowRequest(source=ECHO))


async def test_unknown_trust_tier_raises() -> None:
    router = WorkflowExecutorRouter(trusted_executor=TrustedInProcessWorkflowExecutor())
    with pytest.raises(WorkflowConfigurationError, match=r"Unknown workflow trust tier: root\."):
        await router.execute(TrustedWorkflowRequest(source=ECHO, trust="root"))


class RemoteSandbox:
    """A sandbox executor test double that records the request object it receives."""

    kind = "test-remote"
    isolation = "remote"

    def __init__(self) -> None:
        self.seen: list[WorkflowExecutionRequest] = []

    def capabilities(self) -> SandboxCapabilities:
        return SandboxCapabilities(kind=self.kind, isolation=self.isolation, available=True)

    async def execute(self, request: WorkflowExecutionRequest) -> WorkflowExecutionResult:
        self.seen.append(request)
        return WorkflowExecutionResult(
            value="remote", trust="untrusted", executor=self.kind, duration_ms=0, capability_calls=0
        )

    async def aclose(self) -> None:
        return None


async def test_router_forwards_the_same_request_object(tmp_path: Path) -> None:
    sandbox = RemoteSandbox()
    request = UntrustedWorkflowRequest(source=ECHO, workspace_dir=str(tmp_path))
    result = await execute_workflow(request, sandbox_executor=sandbox)
    assert len(sandbox.seen) == 1
    assert sandbox.seen[0] is request
    assert (result.executor, result.trust) == ("test-remote", "untrusted")
    assert to_json(result) == {
        "value": "remote",
        "trust": "untrusted",
        "executor": "test-remote",
        "durationMs": 0,
        "capabilityCalls": 0,
    }


def test_request_from_json() -> None:
    request = workflow_request_from_json(
        {"trust": "untrusted", "source": ECHO, "workspaceDir": "/w", "timeoutMs": 5, "input": [1]}
    )
    assert isinstance(request, UntrustedWorkflowRequest)
    assert (request.workspace_dir, request.timeout_ms, request.input) == ("/w", 5, [1])
    with pytest.raises(WorkflowConfigurationError, match="Unknown workflow trust tier"):
        workflow_request_from_json({"trust": "maybe", "source": ECHO})
    with pytest.raises(WorkflowConfigurationError, match="workspaceDir"):
        workflow_request_from_json({"trust": "untrusted", "source": ECHO})


# --- protocol framing -----------------------------------------------------------------------
def test_line_splitter_enforces_limit_before_newline() -> None:
    splitter = LineSplitter(max_message_bytes=10)
    assert splitter.feed(b'{"a":1}\r\n{"b"') == [b'{"a":1}']
    assert splitter.feed(b":2}\n") == [b'{"b":2}']
    with pytest.raises(WorkflowMessageLimitError, match="10-byte limit"):
        splitter.feed(b"x" * 12)


def test_stderr_collector_caps_diagnostics() -> None:
    collector = StderrCollector(max_bytes=5)
    collector.feed(b"abc")
    with pytest.raises(WorkflowMessageLimitError, match="diagnostics exceeded the 5-byte limit"):
        collector.feed(b"def")
    assert collector.text == "abcdef"


@pytest.mark.parametrize(
    ("line", "fragment"),
    [(b"", "empty"), (b"{nope", "invalid JSON"), (b"[1]", "non-object"), (b'{"a":1}', "2.0")],
)
def test_decode_message_rejects_bad_lines(line: bytes, fragment: str) -> None:
    with pytest.raises(WorkflowProtocolError, match=fragment):
        decode_message(line)


# --- local executor: validation before any spawn --------------------------------------------
@pytest.fixture
def no_spawn() -> LocalIsolatedProcessWorkflowExecutor:
    # A missing interpreter: had any of these tests reached the spawn, they would see a
    # WorkflowProtocolError instead of the error they assert.
    return LocalIsolatedProcessWorkflowExecutor(
        python_executable="/nonexistent/python",
        limits=WorkflowExecutorLimits(max_message_bytes=1024),
        capabilities={"echo": lambda value, context: value},
    )


async def test_validation_happens_before_spawn(
    no_spawn: LocalIsolatedProcessWorkflowExecutor, tmp_path: Path
) -> None:
    ws = str(tmp_path)
    cases: list[tuple[WorkflowExecutionRequest, type[Exception]]] = [
        (TrustedWorkflowRequest(source=ECHO), WorkflowTrustTierError),
        (UntrustedWorkflowRequest(source="  ", workspace_dir=ws), WorkflowExecutionError),
        (UntrustedWorkflowRequest(source=ECHO, workspace_dir="rel"), WorkflowConfigurationError),
        (
            UntrustedWorkflowRequest(source=ECHO, workspace_dir=str(tmp_path / "missing")),
            WorkflowConfigurationError,
        ),
        (
            UntrustedWorkflowRequest(source=ECHO, workspace_dir=ws, capabilities=["hidden"]),
            WorkflowCapabilityNotAllowedError,
        ),
        (
            UntrustedWorkflowRequest(source="#" * 2000 + ECHO, workspace_dir=ws),
            WorkflowMessageLimitError,
        ),
        (
            UntrustedWorkflowRequest(source=ECHO, workspace_dir=ws, signal=_aborted()),
            WorkflowAbortedError,
        ),
        (
            UntrustedWorkflowRequest(source=ECHO, workspace_dir=ws, timeout_ms=0),
            WorkflowConfigurationError,
        ),
    ]
    for request, error in cases:
        with pytest.raises(error):
            await no_spawn.execute(request)
        assert no_spawn.active_process_count == 0
    with pytest.raises(WorkflowProtocolError, match="could not be started"):
        await no_spawn.execute(UntrustedWorkflowRequest(source=ECHO, workspace_dir=ws))


async def test_workspace_must_be_a_directory(
    no_spawn: LocalIsolatedProcessWorkflowExecutor, tmp_path: Path
) -> None:
    file = tmp_path / "file"
    file.write_text("x")
    with pytest.raises(WorkflowConfigurationError, match="must be a directory"):
        await no_spawn.execute(UntrustedWorkflowRequest(source=ECHO, workspace_dir=str(file)))


def _aborted() -> AbortSignal:
    controller = AbortController()
    controller.abort("stop")
    return controller.signal


# --- capabilities in the isolated executor --------------------------------------------------
async def test_only_declared_capabilities_exist(tmp_path: Path) -> None:
    seen: list[tuple[str, JsonValue, CapabilityCallContext]] = []

    def echo(value: JsonValue, context: CapabilityCallContext) -> JsonValue:
        seen.append(("echo", value, context))
        return {"echo": value}

    def hidden(value: JsonValue, context: CapabilityCallContext) -> JsonValue:
        seen.append(("hidden", value, context))
        return None

    source = """
async def main(context):
    caps = context["capabilities"]
    return {"names": sorted(caps), "echo": await caps["echo"]({"n": 1})}
"""
    async with LocalIsolatedProcessWorkflowExecutor(
        capabilities={"echo": echo, "hidden": hidden}
    ) as executor:
        result = await executor.execute(
            UntrustedWorkflowRequest(
                source=source, workspace_dir=str(tmp_path), capabilities=["echo", "echo"]
            )
        )
    assert result.value == {"names": ["echo"], "echo": {"echo": {"n": 1}}}
    assert result.capability_calls == 1
    assert [name for name, _, _ in seen] == ["echo"]
    context = seen[0][2]
    assert context.trust == "untrusted"
    assert context.workspace_dir == str(tmp_path.resolve())  # noqa: ASYNC240


async def test_handler_failure_is_a_rejection_inside_the_script(tmp_path: Path) -> None:
    def broken(value: JsonValue, context: CapabilityCallContext) -> JsonValue:
        raise RuntimeError("handler exploded")

    source = """
async def main(context):
    try:
        await context["capabilities"]["broken"](1)
    except Exception as error:
        return [type(error).__name__, error.code, str(error)]
"""
    async with LocalIsolatedProcessWorkflowExecutor(capabilities={"broken": broken}) as executor:
        result = await executor.execute(
            UntrustedWorkflowRequest(
                source=source, workspace_dir=str(tmp_path), capabilities=["broken"]
            )
        )
    assert result.value == [
        "CapabilityCallError",
        "WORKFLOW_CAPABILITY_FAILED",
        "RuntimeError: handler exploded",
    ]
    assert result.capability_calls == 1


async def test_script_error_is_execution_error(tmp_path: Path) -> None:
    async with LocalIsolatedProcessWorkflowExecutor() as executor:
        with pytest.raises(WorkflowExecutionError, match="ValueError: boom") as caught:
            await executor.execute(
                UntrustedWorkflowRequest(
                    source="def main(c):\n    raise ValueError('boom')\n",
                    workspace_dir=str(tmp_path),
                )
            )
    assert caught.value.remote_code == "WORKFLOW_EXECUTION_FAILED"


async def test_closed_executor_refuses(tmp_path: Path) -> None:
    executor = LocalIsolatedProcessWorkflowExecutor()
    await executor.aclose()
    with pytest.raises(WorkflowConfigurationError, match="closed"):
        await executor.execute(UntrustedWorkflowRequest(source=ECHO, workspace_dir=str(tmp_path)))


# --- trusted in-process ---------------------------------------------------------------------
async def test_trusted_echoes_input() -> None:
    async with TrustedInProcessWorkflowExecutor() as executor:
        result = await executor.execute(TrustedWorkflowRequest(source=ECHO, input="ok"))
    assert result.value == {"echoed": "ok"}
    assert (result.executor, result.trust) == ("trusted-in-process", "trusted")


async def test_trusted_rejects_untrusted_request(tmp_path: Path) -> None:
    with pytest.raises(WorkflowTrustTierError, match="requires trust=trusted; received untrusted"):
        await TrustedInProcessWorkflowExecutor().execute(
            UntrustedWorkflowRequest(source=ECHO, workspace_dir=str(tmp_path))
        )


NEVER = "import asyncio\nasync def main(context):\n    await asyncio.Event().wait()\n"


async def test_trusted_timeout() -> None:
    with pytest.raises(WorkflowTimeoutError, match="deadline of 30ms"):
        await TrustedInProcessWorkflowExecutor().execute(
            TrustedWorkflowRequest(source=NEVER, timeout_ms=30)
        )


async def test_trusted_abort() -> None:
    controller = AbortController()
    task = asyncio.create_task(
        TrustedInProcessWorkflowExecutor().execute(
            TrustedWorkflowRequest(source=NEVER, signal=controller.signal)
        )
    )
    await asyncio.sleep(0)
    controller.abort(RuntimeError("stop now"))
    with pytest.raises(WorkflowAbortedError, match="stop now") as caught:
        await task
    assert isinstance(caught.value.__cause__, RuntimeError)


async def test_trusted_capabilities_and_signal() -> None:
    seen: list[CapabilityCallContext] = []

    async def lookup(value: JsonValue, context: CapabilityCallContext) -> JsonValue:
        seen.append(context)
        return [value, value]

    source = """
async def main(context):
    assert not context["signal"].aborted
    return await context["capabilities"]["lookup"](context["input"])
"""
    executor = TrustedInProcessWorkflowExecutor(capabilities={"lookup": lookup})
    result = await executor.execute(
        TrustedWorkflowRequest(source=source, input=3, capabilities=["lookup"])
    )
    assert result.value == [3, 3]
    assert result.capability_calls == 1
    assert seen[0].trust == "trusted"
    assert seen[0].workspace_dir is None


@pytest.mark.parametrize(
    ("source", "error", "fragment"),
    [
        ("def main(c):\n    return {1}\n", WorkflowExecutionError, "not JSON serializable"),
        ("x = 1\n", WorkflowExecutionError, "must define main"),
        ("def main(c):\n    raise KeyError('k')\n", WorkflowExecutionError, "KeyError"),
        ("def main(c):\n    return 'x' * 50\n", WorkflowOutputLimitError, "output exceeded"),
        ("#" * 200 + "\n", WorkflowExecutionError, "source exceeded"),
        ("   ", WorkflowExecutionError, "non-empty string"),
    ],
)
async def test_trusted_failures(source: str, error: type[Exception], fragment: str) -> None:
    executor = TrustedInProcessWorkflowExecutor(
        limits=WorkflowExecutorLimits(max_output_bytes=20, max_message_bytes=100)
    )
    with pytest.raises(error, match=fragment):
        await executor.execute(TrustedWorkflowRequest(source=source))
