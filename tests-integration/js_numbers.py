"""What a JavaScript program does to our JSON: ``JSON.stringify(JSON.parse(text))``.

Written from the ECMAScript specification (``Number::toString`` in §6.1.6.1.20, ``JSON.parse``
and ``JSON.stringify`` in §25.5), not from any implementation, so the contract tests can check the
"language-neutral wire format" promise (D2) without a JavaScript engine; ``NodeJson`` runs the
real thing when ``node`` is installed, and a test checks the two agree.

In JavaScript every JSON number becomes an IEEE-754 double, and ``JSON.stringify`` writes it with
``Number::toString``: the shortest digits that read back as the same double, as an integer up to
1e21 (``45927402752296410``), in plain decimals down to 1e-7 (``0.000001``), else with an
exponent (``1e+21``, ``1e-7``); ``-0`` is written ``0``.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from decimal import Decimal
from typing import Any, cast

__all__ = ["NodeJson", "es_number_to_string", "js_reserialise", "node_path"]


def es_number_to_string(value: float) -> str:
    """``Number::toString(value)`` (radix 10) for a double, per ECMAScript §6.1.6.1.20."""
    if math.isnan(value):
        return "NaN"
    if value == 0:
        return "0"  # +0 and -0
    if value < 0:
        return "-" + es_number_to_string(-value)
    if math.isinf(value):
        return "Infinity"
    # s * 10^(n-k) = value with k digits as few as possible: Python's repr gives the shortest
    # round-tripping digits (the same choice the specification makes).
    sign, digits, exponent = Decimal(repr(value)).as_tuple()
    assert sign == 0 and isinstance(exponent, int)
    text = "".join(map(str, digits)).lstrip("0")
    stripped = text.rstrip("0")
    exponent += len(text) - len(stripped)
    k = len(stripped)
    n = exponent + k
    if k <= n <= 21:
        return stripped + "0" * (n - k)
    if 0 < n <= 21:
        return stripped[:n] + "." + stripped[n:]
    if -6 < n <= 0:
        return "0." + "0" * (-n) + stripped
    sign_char = "+" if n - 1 >= 0 else "-"
    mantissa = stripped if k == 1 else stripped[0] + "." + stripped[1:]
    return f"{mantissa}e{sign_char}{abs(n - 1)}"


def _js_string(text: str) -> str:
    # JSON.stringify's QuoteJSONString: the six short escapes, other controls as \u00XX, lone
    # surrogates as \uDXXX (well-formed JSON.stringify), everything else as is.
    out = ['"']
    for char in text:
        code = ord(char)
        if char in '"\\':
            out.append("\\" + char)
        elif char in "\b\f\n\r\t":
            out.append(json.dumps(char)[1:-1])
        elif code < 0x20 or 0xD800 <= code <= 0xDFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def _js_property_order(value: dict[str, Any]) -> list[tuple[str, Any]]:
    """A JavaScript object's property order: array-index keys (``"0"``, ``"17"``: canonical
    integers below 2^32 - 1) ascending first, then every other key in insertion order."""
    indices: list[tuple[int, str, Any]] = []
    others: list[tuple[str, Any]] = []
    for key, child in value.items():
        if (
            key.isascii()
            and key.isdigit()
            and (key == "0" or key[0] != "0")
            and int(key) < 2**32 - 1
        ):
            indices.append((int(key), key, child))
        else:
            others.append((key, child))
    if not indices:
        return others
    indices.sort(key=lambda entry: entry[0])
    return [(key, child) for _, key, child in indices] + others


def js_reserialise(text: str) -> str:
    """``JSON.stringify(JSON.parse(text))``: every number read as a double, written back by
    ``Number::toString``; properties in JavaScript's order (array-index keys first, ascending,
    then the others as given). Iterative, so any depth JavaScript accepts works."""
    value = json.loads(text, parse_int=float, parse_float=float)
    parts: list[str] = []
    # A stack of pending writes: a value to serialise, or a literal piece of text.
    stack: list[tuple[bool, Any]] = [(False, value)]
    while stack:
        literal, item = stack.pop()
        if literal:
            parts.append(cast(str, item))
            continue
        if item is None:
            parts.append("null")
        elif item is True:
            parts.append("true")
        elif item is False:
            parts.append("false")
        elif type(item) is float:
            parts.append(es_number_to_string(item) if math.isfinite(item) else "null")
        elif type(item) is str:
            parts.append(_js_string(item))
        elif type(item) is list:
            pending: list[tuple[bool, Any]] = [(True, "[")]
            for index, child in enumerate(cast(list[Any], item)):
                if index:
                    pending.append((True, ","))
                pending.append((False, child))
            pending.append((True, "]"))
            stack.extend(reversed(pending))
        else:
            pending = [(True, "{")]
            for index, (key, child) in enumerate(_js_property_order(cast(dict[str, Any], item))):
                if index:
                    pending.append((True, ","))
                pending.append((True, _js_string(key) + ":"))
                pending.append((False, child))
            pending.append((True, "}"))
            stack.extend(reversed(pending))
    return "".join(parts)


def node_path() -> str | None:
    """The ``node`` executable on the PATH, if any."""
    return shutil.which("node")


_NODE_SCRIPT = r"""
const readline = require("readline");
const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on("line", (line) => {
  const request = JSON.parse(line);
  let answer;
  if (request.op === "json") answer = JSON.stringify(JSON.parse(request.text));
  else answer = String(request.number);
  process.stdout.write(JSON.stringify({ answer }) + "\n");
});
"""


class NodeJson:
    """A running ``node`` answering ``JSON.stringify(JSON.parse(text))`` and ``String(number)``.

    One process serves many questions (a line each way); ``close()`` ends it.
    """

    def __init__(self, executable: str) -> None:
        self._process = subprocess.Popen(
            [executable, "-e", _NODE_SCRIPT],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )

    def _ask(self, request: dict[str, Any]) -> str:
        stdin, stdout = self._process.stdin, self._process.stdout
        assert stdin is not None and stdout is not None
        stdin.write(json.dumps(request) + "\n")
        stdin.flush()
        line = stdout.readline()
        if not line:
            raise RuntimeError(f"node exited with {self._process.wait(timeout=10)}")
        return cast(str, json.loads(line)["answer"])

    def reserialise(self, text: str) -> str:
        """``JSON.stringify(JSON.parse(text))`` in node."""
        return self._ask({"op": "json", "text": text})

    def number_to_string(self, value: float) -> str:
        """``String(value)`` in node (``value`` sent as its shortest repr, read as a double)."""
        return self._ask({"op": "number", "number": value})

    def close(self) -> None:
        """End the node process."""
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - node ends on stdin EOF
            self._process.kill()
            self._process.wait(timeout=10)
        if self._process.stdout is not None:
            self._process.stdout.close()
