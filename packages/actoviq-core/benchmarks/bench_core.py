"""Core hot paths: item construction (strict-JSON checks), the converter, the JSON codecs.

Every figure is CPU time per call (median of five passes), the stable measure on a shared,
loaded machine. Values are the shapes a run produces: a text item, a tool call with a small
input, a tool result with a nested output, a 1,000-entry tool output.

Usage: python bench_core.py --out result.json [--n 20000]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from actoviq.core import (
    TextItem,
    ToolCallItem,
    ToolResultItem,
    clone_json_value,
    dumps,
    dumps_compact,
    is_json_value,
    item_from_json,
    item_to_json,
    loads,
    loads_strict,
)

TEXT = "The forecast for Paris is sunny with a high of 21 degrees. " * 3
INPUT: dict[str, Any] = {"city": "Paris", "days": 3, "units": "metric"}
OUTPUT: dict[str, Any] = {"temp": 21.5, "list": [1, 2, {"a": "b"}], "ok": True, "note": "fine"}
BIG: list[Any] = [
    {"id": n, "name": f"row {n}", "tags": ["a", "b"], "score": n * 0.5} for n in range(1000)
]


def _cpu_us(call: Callable[[], object], n: int) -> float:
    samples: list[float] = []
    for _ in range(5):
        start = time.process_time()
        for _ in range(n):
            call()
        samples.append((time.process_time() - start) / n)
    return round(statistics.median(samples) * 1e6, 3)


def measure(n: int) -> dict[str, float]:
    """CPU microseconds per call of each hot path."""
    result = ToolResultItem(call_id="c1", status="success", output=OUTPUT, name="weather")
    wire = item_to_json(result)
    text = dumps(result)
    big_text = dumps_compact(BIG)
    small = max(1, n // 200)
    return {
        "construct_text_item": _cpu_us(lambda: TextItem(role="assistant", text=TEXT), n),
        "construct_tool_call": _cpu_us(lambda: ToolCallItem(id="c", name="n", input=INPUT), n),
        "construct_tool_result": _cpu_us(
            lambda: ToolResultItem(call_id="c", status="success", output=OUTPUT), n
        ),
        "item_to_json_tool_result": _cpu_us(lambda: item_to_json(result), n),
        "item_from_json_tool_result": _cpu_us(lambda: item_from_json(wire), n),
        "dumps_tool_result": _cpu_us(lambda: dumps(result), n),
        "loads_tool_result": _cpu_us(lambda: loads(ToolResultItem, text), n),
        "is_json_value_1000_rows": _cpu_us(lambda: is_json_value(BIG), small),
        "dumps_compact_1000_rows": _cpu_us(lambda: dumps_compact(BIG), small),
        "loads_strict_1000_rows": _cpu_us(lambda: loads_strict(big_text), small),
        "clone_json_value_1000_rows": _cpu_us(lambda: clone_json_value(BIG), small),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--n", type=int, default=20_000)
    args = parser.parse_args()
    figures = measure(args.n)
    report = {
        "benchmark": "core hot paths (CPU microseconds per call, median of 5)",
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "calls": args.n,
        "cpu_microseconds": figures,
    }
    args.out.write_text(json.dumps(report, indent=2) + "\n", "utf-8")
    for name, value in figures.items():
        print(f"{name:32} {value:10.3f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
