r"""NDJSON JSON-RPC 2.0 framing between the host and a workflow child (spec 04 §2.6).

One JSON object per ``\\n``-terminated line. These helpers are pure (no I/O) so every limit is
tested directly; :mod:`actoviq.workflow._process` feeds them the child's bytes.
"""

from __future__ import annotations

from typing import Any, Final

from actoviq.core import JsonValue, JsonValueError, dumps_compact, find_json_violation, loads_strict
from actoviq.workflow.errors import WorkflowMessageLimitError, WorkflowProtocolError

__all__ = [
    "EXECUTE_ID",
    "JSONRPC_VERSION",
    "LineSplitter",
    "StderrCollector",
    "decode_message",
    "encode_message",
]

JSONRPC_VERSION: Final = "2.0"
EXECUTE_ID: Final = "workflow:execute"


def encode_message(message: dict[str, Any], *, max_message_bytes: int, detail: str) -> bytes:
    r"""Encode one line (with its ``\\n``); refuse more than ``max_message_bytes`` of JSON.

    Raises:
        WorkflowMessageLimitError: ``"<detail> exceeded the N-byte limit."``.
    """
    raw = dumps_compact(message).encode("utf-8")
    if len(raw) > max_message_bytes:
        raise WorkflowMessageLimitError(detail, max_message_bytes)
    return raw + b"\n"


def decode_message(line: bytes) -> dict[str, JsonValue]:
    """Parse one line from the child into a JSON-RPC 2.0 object.

    Every failure is a :class:`WorkflowProtocolError`: bytes that are not UTF-8, text that is not
    JSON, JSON nested deeper than the parser (or the shared strict-JSON rules) allow, numbers that
    overflow to infinity (``1e400``), anything else strict JSON refuses, a non-object message, or
    ``jsonrpc != "2.0"``. Nothing else escapes, whatever the child writes.

    Raises:
        WorkflowProtocolError: the line is not a strict JSON-RPC 2.0 object.
    """
    if not line:
        raise WorkflowProtocolError("Workflow child emitted an empty protocol line.")
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        raise WorkflowProtocolError("Workflow child emitted bytes that are not UTF-8.") from None
    try:
        message = loads_strict(text)
    except RecursionError:
        raise WorkflowProtocolError("Workflow child emitted JSON nested too deeply.") from None
    except JsonValueError as error:
        if error.path == "$":  # a NaN/Infinity literal (not JSON), or a bad top-level value
            raise WorkflowProtocolError("Workflow child emitted invalid JSON.") from None
        raise WorkflowProtocolError(  # 1e400, 2^53 + 1, "\ud800", too deep (core rules, D2)
            f"Workflow child emitted a value that is not strict JSON at {error.path[:200]}."
        ) from None
    except (ValueError, TypeError):  # JSONDecodeError
        raise WorkflowProtocolError("Workflow child emitted invalid JSON.") from None
    where = find_json_violation(message)
    if where is not None:  # e.g. 1e400 parses as inf
        raise WorkflowProtocolError(
            f"Workflow child emitted a value that is not strict JSON at {where[:200]}."
        )
    if not isinstance(message, dict):
        raise WorkflowProtocolError("Workflow child emitted a non-object protocol message.")
    if message.get("jsonrpc") != JSONRPC_VERSION:
        raise WorkflowProtocolError('Workflow child message must have jsonrpc "2.0".')
    return message


class LineSplitter:
    r"""Split a byte stream into lines, enforcing the size limit *while* buffering.

    A line longer than ``max_message_bytes`` (not counting ``\\r\\n``) raises before its newline
    arrives, so a child cannot make the host buffer an unbounded line.

    Example:
        >>> splitter = LineSplitter(max_message_bytes=8)
        >>> splitter.feed(b'{"a":1}' + bytes([13, 10]) + b'{"b"')
        [b'{"a":1}']
    """

    def __init__(self, *, max_message_bytes: int) -> None:
        self._limit = max_message_bytes
        self._buffer = bytearray()

    @property
    def buffered(self) -> int:
        """Bytes of an unfinished line."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[bytes]:
        r"""Add bytes; return the complete lines (trailing ``\\r`` stripped).

        Raises:
            WorkflowMessageLimitError: a line exceeds the limit.
        """
        lines: list[bytes] = []
        start = 0
        while True:
            index = data.find(b"\n", start)
            if index < 0:
                break
            piece = data[start:index]
            if len(self._buffer) + len(piece) > self._limit + 1:
                raise WorkflowMessageLimitError("Workflow protocol message", self._limit)
            self._buffer.extend(piece)
            line = bytes(self._buffer)
            self._buffer.clear()
            if line.endswith(b"\r"):
                line = line[:-1]
            if len(line) > self._limit:
                raise WorkflowMessageLimitError("Workflow protocol message", self._limit)
            lines.append(line)
            start = index + 1
        rest = data[start:]
        if len(self._buffer) + len(rest) > self._limit + 1:
            raise WorkflowMessageLimitError("Workflow protocol message", self._limit)
        self._buffer.extend(rest)
        return lines


class StderrCollector:
    """Count the child's diagnostics and keep the first 2048 characters for error messages."""

    def __init__(self, *, max_bytes: int, keep: int = 2048) -> None:
        self._limit = max_bytes
        self._keep = keep
        self._total = 0
        self._head = bytearray()

    def feed(self, data: bytes) -> None:
        """Add bytes.

        Raises:
            WorkflowMessageLimitError: ``"Workflow child diagnostics exceeded the N-byte limit."``.
        """
        self._total += len(data)
        if len(self._head) < self._keep:
            self._head.extend(data[: self._keep - len(self._head)])
        if self._total > self._limit:
            raise WorkflowMessageLimitError("Workflow child diagnostics", self._limit)

    @property
    def text(self) -> str:
        """The first characters of the diagnostics (decoded leniently)."""
        return self._head.decode("utf-8", errors="replace")[: self._keep]
