"""Events per second through ``ModelStream``: 100,000 scripted text deltas (runtime workload W4).

Measures the stream primitive's per-event overhead (``__anext__``, mapping, settlement) with the
scripted provider as source, so no network or SDK parsing is included. The scripted source yields
one event-loop turn per event (as a network stream would), which is part of the figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

from actoviq.core import TextItem
from actoviq.providers import ModelRequest
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn


async def run_once(deltas: int) -> tuple[float, int]:
    chunks = ["x"] * deltas
    provider = ScriptedProvider([ScriptedTurn(text="x" * deltas, stream_deltas=chunks)])
    request = ModelRequest(model="m", input=[TextItem(role="user", text="go")])
    start = time.perf_counter()
    count = 0
    async with provider.stream(request) as stream:
        async for _event in stream:
            count += 1
        await stream.final_response()
    return time.perf_counter() - start, count


async def measure(deltas: int, repeats: int) -> dict[str, float | int]:
    await run_once(1000)  # warm-up
    timings: list[float] = []
    events = 0
    for _ in range(repeats):
        seconds, events = await run_once(deltas)
        timings.append(seconds)
    best = min(timings)
    return {
        "deltas": deltas,
        "events": events,
        "repeats": repeats,
        "best_seconds": round(best, 4),
        "events_per_second": round(events / best),
        "us_per_event": round(best / events * 1e6, 3),
    }


def main() -> None:
    """Run the benchmark and write its JSON report to ``--out``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True)
    parser.add_argument("--deltas", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    result = asyncio.run(measure(args.deltas, args.repeats))
    print(
        f"ModelStream: {result['events_per_second']:,} events/s ({result['us_per_event']} us/event)"
    )
    Path(args.out).write_text(json.dumps({"model_stream": result}, indent=2) + "\n", "utf-8")


if __name__ == "__main__":
    main()
