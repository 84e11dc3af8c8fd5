"""Host side of one child run: spawn, speak the protocol, enforce limits, kill and reap.

Shared by :class:`~actoviq.workflow.LocalIsolatedProcessWorkflowExecutor` and
:class:`~actoviq.workflow.BubblewrapWorkflowExecutor`; they differ only in the argv that starts the
child. The child always runs with an empty environment, in its own session and process group
(``start_new_session``), with pipes for stdio. On every settle the whole process group gets
SIGKILL, the pipes are closed and the exit is awaited (up to one second) before the outcome is
delivered.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import signal as signals
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, cast

import attrs

from actoviq.core import AbortController, AbortSignal, JsonValue, JsonValueError, dumps_compact
from actoviq.workflow._boundary import workflow_boundary
from actoviq.workflow._disk_quota import WorkspaceQuota, run_within_quota
from actoviq.workflow.capabilities import clone_json_within, invoke_capability
from actoviq.workflow.errors import (
    CAPABILITY_FAILED_CODE,
    MAX_REMOTE_MESSAGE_CHARS,
    WorkflowAbortedError,
    WorkflowConfigurationError,
    WorkflowExecutorError,
    WorkflowMessageLimitError,
    WorkflowOutputLimitError,
    WorkflowPermissionError,
    WorkflowProtocolError,
    WorkflowResourceLimitError,
    error_from_remote,
)
from actoviq.workflow.limits import ProcessResourceLimits, WorkflowExecutorLimits
from actoviq.workflow.protocol import (
    EXECUTE_ID,
    JSONRPC_VERSION,
    LineSplitter,
    StderrCollector,
    decode_message,
    encode_message,
)
from actoviq.workflow.types import CapabilityCallContext, CapabilityHandler

__all__ = [
    "BOOTSTRAP_SOURCE",
    "ChildRun",
    "ProcessRegistry",
    "bootstrap_argv",
    "execute_message",
    "execute_message_for",
    "resolve_workspace",
    "run_child",
    "settle_message",
]

BOOTSTRAP_SOURCE: Final = (
    Path(__file__).with_name("_child_kernel.py").read_text("utf-8")
    + "\n"
    + Path(__file__).with_name("_child_bootstrap.py").read_text("utf-8")
)
"""The child program (kernel layers, then the protocol), passed with ``-c`` so nothing outside the
standard library is imported."""

_EXIT_GRACE_SECONDS: Final = 1.0
_REPORTED_SIGNALS: Final = (signals.SIGXCPU, signals.SIGXFSZ, signals.SIGSYS)
_SETUP_FAILED_EXIT: Final = 4  # the bootstrap's exit when apply_kernel_layers fails
_SETUP_FAILED_PREFIX: Final = "workflow sandbox setup failed:"
_MAX_QUEUED_LINES: Final = 8


def resolve_workspace(workspace_dir: object) -> str:
    """Return the realpath of an absolute, existing directory.

    Raises:
        WorkflowConfigurationError: not a non-empty absolute path, missing, or not a directory.
    """
    if not isinstance(workspace_dir, str) or not workspace_dir or "\x00" in workspace_dir:
        raise WorkflowConfigurationError("workspaceDir must be an absolute path.")
    if not os.path.isabs(workspace_dir):
        raise WorkflowConfigurationError("workspaceDir must be an absolute path.")
    real = os.path.realpath(workspace_dir)
    if not os.path.exists(real):
        raise WorkflowConfigurationError("workspaceDir must exist.")
    if not os.path.isdir(real):
        raise WorkflowConfigurationError("workspaceDir must be a directory.")
    return real


def bootstrap_argv(
    python: str,
    *,
    workspace: str,
    resource_limits: ProcessResourceLimits,
    max_message_bytes: int,
    audit_hook: bool,
    sandbox: Mapping[str, Any] | None = None,
) -> list[str]:
    """The interpreter command line: isolated mode, no site, no bytecode, bootstrap via ``-c``.

    ``sandbox`` is the kernel-layer section the child applies before it reads the request
    (see :mod:`actoviq.workflow._child_kernel`).
    """
    config: dict[str, Any] = {
        "workspaceDir": workspace,
        "resourceLimits": dict(resource_limits.to_wire()),
        "maxMessageBytes": max_message_bytes,
        "auditHook": audit_hook,
    }
    if sandbox is not None:
        config["sandbox"] = dict(sandbox)
    return [python, "-I", "-S", "-B", "-c", BOOTSTRAP_SOURCE, dumps_compact(config)]


class ProcessRegistry:
    """The live children of one executor (``active_process_count``), killed by ``aclose``."""

    def __init__(self) -> None:
        self._live: dict[int, asyncio.SubprocessTransport] = {}

    def __len__(self) -> int:
        return len(self._live)

    def add(self, transport: asyncio.SubprocessTransport) -> None:
        """Track a started child."""
        self._live[transport.get_pid()] = transport

    def discard(self, transport: asyncio.SubprocessTransport) -> None:
        """Forget a reaped child."""
        self._live.pop(transport.get_pid(), None)

    def kill_all(self) -> None:
        """SIGKILL every live child's process group (their runs then fail)."""
        for pid in list(self._live):
            _kill_group(pid)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signals.SIGKILL)


class _ChildProtocol(asyncio.SubprocessProtocol):
    """Collects stdout lines and stderr under their limits; records the first failure."""

    def __init__(self, *, max_message_bytes: int) -> None:
        self._splitter = LineSplitter(max_message_bytes=max_message_bytes)
        self.stderr = StderrCollector(max_bytes=max_message_bytes)
        self._lines: collections.deque[bytes] = collections.deque()
        self._changed = asyncio.Event()
        self._paused = False
        self.failure: WorkflowExecutorError | None = None
        self.stdout_closed = False
        self.exited = asyncio.get_running_loop().create_future()
        self.transport: asyncio.SubprocessTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast("asyncio.SubprocessTransport", transport)

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        if self.failure is not None:
            return
        raw = data.encode() if isinstance(data, str) else data
        try:
            if fd == 1:
                self._lines.extend(self._splitter.feed(raw))
                if len(self._lines) >= _MAX_QUEUED_LINES:
                    self._stdout(pause=True)
            else:
                self.stderr.feed(raw)
        except WorkflowExecutorError as error:
            self.failure = error
        self._changed.set()

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self.stdout_closed = True
            self._changed.set()

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)
        self._changed.set()

    def _stdout(self, *, pause: bool) -> None:
        if self.transport is None or pause == self._paused:
            return
        pipe = self.transport.get_pipe_transport(1)
        if isinstance(pipe, asyncio.ReadTransport):
            if pause:
                pipe.pause_reading()
            else:
                pipe.resume_reading()
            self._paused = pause

    async def next_line(self) -> bytes | None:
        """The next complete line, or None at end of output; raises the recorded failure."""
        while True:
            if self.failure is not None:
                raise self.failure
            if self._lines:
                line = self._lines.popleft()
                if len(self._lines) < _MAX_QUEUED_LINES // 2:
                    self._stdout(pause=False)
                return line
            if self.stdout_closed:
                return None
            self._changed.clear()
            await self._changed.wait()

    def send(self, data: bytes) -> None:
        """Write to the child's stdin."""
        assert self.transport is not None
        pipe = self.transport.get_pipe_transport(0)
        if isinstance(pipe, asyncio.WriteTransport) and not pipe.is_closing():
            pipe.write(data)


@attrs.frozen(kw_only=True)
class ChildRun:
    """Everything :func:`run_child` needs for one run."""

    argv: Sequence[str]
    cwd: str
    workspace: str
    executor_kind: str
    source: str
    input: JsonValue
    capabilities: tuple[str, ...]
    handlers: Mapping[str, CapabilityHandler]
    limits: WorkflowExecutorLimits
    timeout_ms: int
    signal: AbortSignal | None
    pass_fds: tuple[int, ...] = ()
    workspace_quota_bytes: int | None = None  # ProcessResourceLimits.workspace_bytes


def execute_message(run: ChildRun) -> bytes:
    """Encode the one ``workflow.execute`` request (raises before any spawn when too large)."""
    return execute_message_for(
        source=run.source,
        value=run.input,
        capabilities=run.capabilities,
        limits=run.limits,
        timeout_ms=run.timeout_ms,
    )


def execute_message_for(
    *,
    source: str,
    value: JsonValue,
    capabilities: Sequence[str],
    limits: WorkflowExecutorLimits,
    timeout_ms: int,
) -> bytes:
    """Encode a ``workflow.execute`` request from its parts.

    Raises:
        WorkflowMessageLimitError: the message is larger than ``maxMessageBytes``.
    """
    return encode_message(
        {
            "jsonrpc": JSONRPC_VERSION,
            "id": EXECUTE_ID,
            "method": "workflow.execute",
            "params": {
                "source": source,
                "input": value,
                "capabilities": list(capabilities),
                "vmTimeoutMs": timeout_ms,
                "maxOutputBytes": limits.max_output_bytes,
                "maxMessageBytes": limits.max_message_bytes,
                "maxProtocolMessages": limits.max_protocol_messages,
            },
        },
        max_message_bytes=limits.max_message_bytes,
        detail="Workflow execute message",
    )


async def run_child(
    run: ChildRun, *, registry: ProcessRegistry, first_message: bytes
) -> tuple[JsonValue, int]:
    """Spawn the child, converse, and return ``(value, capability_calls)``.

    Raises:
        WorkflowExecutorError: every failure, typed as in spec 04 §2.6.
    """
    loop = asyncio.get_running_loop()
    protocol = _ChildProtocol(max_message_bytes=run.limits.max_message_bytes)
    settled = AbortController()
    remove_listener: Callable[[], None] | None = None
    if run.signal is not None:
        remove_listener = run.signal.add_listener(settled.abort)
    transport: asyncio.SubprocessTransport | None = None
    pids: list[int] = []

    def kill() -> None:
        if pids:
            _kill_group(pids[0])

    quota = None
    if run.workspace_quota_bytes is not None:
        quota = WorkspaceQuota(run.workspace, run.workspace_quota_bytes, kill)
    try:
        async with workflow_boundary(timeout_ms=run.timeout_ms, signal=run.signal):
            if quota is not None:
                await quota.start()  # before the spawn: what is there already does not count
            try:
                transport, _ = await loop.subprocess_exec(
                    lambda: protocol,
                    *run.argv,
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                    env={},
                    cwd=run.cwd,
                    start_new_session=True,
                    close_fds=True,
                    pass_fds=run.pass_fds,
                )
            except OSError as error:
                raise WorkflowProtocolError(
                    f"Workflow child could not be started: {error.strerror or error}."
                ) from None
            registry.add(transport)
            pids.append(transport.get_pid())
            conversation = _converse(run, protocol, first_message, settled.signal)
            if quota is None:
                return await conversation
            return await run_within_quota(quota, conversation)
    finally:
        if remove_listener is not None:
            remove_listener()
        settled.abort(WorkflowAbortedError("Workflow run settled."))
        if transport is not None:
            await _terminate(transport, protocol)
            registry.discard(transport)


async def _terminate(transport: asyncio.SubprocessTransport, protocol: _ChildProtocol) -> None:
    _kill_group(transport.get_pid())
    transport.close()
    try:
        async with asyncio.timeout(_EXIT_GRACE_SECONDS):
            await asyncio.shield(protocol.exited)
    except TimeoutError:
        pass


def _reply(message_id: JsonValue, *, result: JsonValue = None, error: Any = None) -> dict[str, Any]:
    if error is not None:
        return {"jsonrpc": JSONRPC_VERSION, "id": message_id, "error": error}
    return {"jsonrpc": JSONRPC_VERSION, "id": message_id, "result": result}


def _error_body(code: str, message: str) -> dict[str, str]:
    return {"code": code, "message": message[:MAX_REMOTE_MESSAGE_CHARS]}


async def _converse(
    run: ChildRun, protocol: _ChildProtocol, first_message: bytes, settled: AbortSignal
) -> tuple[JsonValue, int]:
    limits = run.limits
    messages = 0
    capability_calls = 0

    def count() -> None:
        nonlocal messages
        messages += 1
        if messages > limits.max_protocol_messages:
            raise WorkflowMessageLimitError(
                "Workflow protocol message count",
                limits.max_protocol_messages,
                message=(
                    "Workflow protocol message count exceeded the "
                    f"{limits.max_protocol_messages}-message limit."
                ),
            )

    count()
    protocol.send(first_message)
    while True:
        line = await protocol.next_line()
        if line is None:
            raise await _exit_error(protocol)
        count()
        message = decode_message(line)
        if "method" in message:
            reply = await _answer_call(run, message, settled)
            if reply[0]:
                capability_calls += 1
            count()
            protocol.send(
                encode_message(
                    reply[1],
                    max_message_bytes=limits.max_message_bytes,
                    detail="Workflow capability reply",
                )
            )
            continue
        return settle_message(message, limits=limits, timeout_ms=run.timeout_ms), capability_calls


def settle_message(
    message: dict[str, JsonValue], *, limits: WorkflowExecutorLimits, timeout_ms: int
) -> JsonValue:
    """Turn the child's final ``workflow:execute`` response into the result or a typed error.

    Raises:
        WorkflowProtocolError: wrong id, neither result nor error, or a value the host cannot
            clone (for example nested deeper than the interpreter can encode).
        WorkflowOutputLimitError: the result is larger than ``maxOutputBytes``.
        WorkflowExecutorError: the child's error, mapped by :func:`error_from_remote`.
    """
    if message.get("id") != EXECUTE_ID:
        raise WorkflowProtocolError("Workflow child answered with an unexpected response id.")
    error = message.get("error")
    if isinstance(error, dict):
        code = error.get("code")
        text = error.get("message")
        data = error.get("data")
        raise error_from_remote(
            code if isinstance(code, str) else "WORKFLOW_EXECUTION_FAILED",
            text if isinstance(text, str) else "Workflow failed.",
            max_output_bytes=limits.max_output_bytes,
            max_message_bytes=limits.max_message_bytes,
            timeout_ms=timeout_ms,
            data=data if isinstance(data, dict) else None,
        )
    if "result" not in message:
        raise WorkflowProtocolError("Workflow child answered without result or error.")
    try:
        return clone_json_within(
            message["result"], limit=limits.max_output_bytes, label="Workflow output"
        )
    except WorkflowMessageLimitError:
        raise WorkflowOutputLimitError(limits.max_output_bytes) from None
    except (JsonValueError, RecursionError, ValueError):
        raise WorkflowProtocolError(
            "Workflow child returned a value the host cannot copy."
        ) from None


async def _answer_call(
    run: ChildRun, message: dict[str, JsonValue], settled: AbortSignal
) -> tuple[bool, dict[str, Any]]:
    """Handle one ``capability.call``; returns ``(counted, reply)``."""
    message_id = message.get("id")
    params = message.get("params")
    if message.get("method") != "capability.call" or not isinstance(params, dict):
        raise WorkflowProtocolError("Workflow child sent an unknown request.")
    name = params.get("name")
    if type(message_id) not in (str, int) or not isinstance(name, str):
        raise WorkflowProtocolError("Workflow child sent a malformed capability call.")
    handler = run.handlers.get(name)
    if name not in run.capabilities or handler is None:
        body = _error_body(
            "WORKFLOW_CAPABILITY_NOT_ALLOWED", f"Workflow capability is not allowed: {name}."
        )
        return False, _reply(message_id, error=body)
    context = CapabilityCallContext(
        name=name, trust="untrusted", signal=settled, workspace_dir=run.workspace
    )
    try:
        result = await invoke_capability(
            handler,
            params.get("input"),
            context=context,
            signal=settled,
            max_message_bytes=run.limits.max_message_bytes,
        )
    except WorkflowAbortedError:
        raise
    except WorkflowExecutorError as error:
        return True, _reply(message_id, error=_error_body(error.code, error.message))
    except JsonValueError as error:
        return True, _reply(message_id, error=_error_body(CAPABILITY_FAILED_CODE, str(error)))
    except Exception as error:  # a host handler failed: the script sees a rejection
        text = f"{type(error).__name__}: {error}"
        return True, _reply(message_id, error=_error_body(CAPABILITY_FAILED_CODE, text))
    return True, _reply(message_id, result=result)


async def _exit_error(protocol: _ChildProtocol) -> WorkflowExecutorError:
    try:
        async with asyncio.timeout(_EXIT_GRACE_SECONDS):
            await asyncio.shield(protocol.exited)
    except TimeoutError:
        pass
    if protocol.failure is not None:
        return protocol.failure
    transport = protocol.transport
    code = transport.get_returncode() if transport is not None else None
    diagnostics = protocol.stderr.text
    if code == _SETUP_FAILED_EXIT and diagnostics.startswith(_SETUP_FAILED_PREFIX):
        # The child could not enter its kernel layers: fail closed, as a configuration problem.
        return WorkflowConfigurationError(
            f"The workflow sandbox could not be set up here: {diagnostics.strip()[:500]}"
        )
    if code is not None and code > 128 and code - 128 in _REPORTED_SIGNALS:
        code = 128 - code  # bwrap's PID 1 reports a signalled child as 128 + signal
    if code is not None and code < 0:
        number = -code
        if number == signals.SIGXCPU:
            return WorkflowResourceLimitError(
                "cpu", "Workflow exceeded its CPU time limit (SIGXCPU)."
            )
        if number == signals.SIGXFSZ:
            return WorkflowResourceLimitError(
                "fileSize", "Workflow exceeded its file size limit (SIGXFSZ)."
            )
        if number == signals.SIGSYS:
            return WorkflowPermissionError(
                "seccomp",
                "The seccomp filter killed the workflow child (a system call through a foreign "
                "ABI, or a filtered call; SIGSYS).",
                layer="seccomp",
            )
        try:
            signal_name = signals.Signals(number).name
        except ValueError:
            signal_name = str(number)
        exit_code = "null"
    else:
        exit_code, signal_name = str(code), "null"
    return WorkflowProtocolError(
        f"Workflow child exited before a result (code={exit_code}, signal={signal_name}): "
        f"{protocol.stderr.text}"
    )


def monotonic_ms() -> float:
    """Milliseconds on the monotonic clock (durations only)."""
    return time.monotonic() * 1000


def default_python() -> str:
    """The interpreter that runs the child: the real binary behind ``sys.executable``."""
    return os.path.realpath(sys.executable)
