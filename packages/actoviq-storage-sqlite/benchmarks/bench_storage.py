"""Storage benchmark: append and load 10k / 100k items on SQLite, and snapshot-bounded loads.

Usage: python bench_storage.py --out report.json [--sizes 10000,100000] [--single-max 100000]

Every scenario runs in a fresh subprocess so its peak RSS (``ru_maxrss``) is its own. Scenarios:

* ``append-turns``: N items appended in 1,000-item turns (one transaction each);
* ``append-single``: N single-item appends (one transaction each, CAS on the revision);
* ``load``: after the turns, one ``SqliteRuntimeSessionAdapter.load`` of the whole history
  (canonical items decoded) and one raw ``SessionStore.load``;
* ``load-small-turns``: N items appended in 3-item turns (a runtime session's shape), then a
  raw load (median of 5);
* ``snapshot-load``: a 100k-item session compacted to a summary snapshot, 10 more items, then a
  load: the rows read are the session row, one snapshot and the one turn row holding the 10-item
  tail (counted from the result and confirmed with ``EXPLAIN QUERY PLAN``: a primary-key range),
  compared with a full-history load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sqlalchemy import text

from actoviq.core import TextItem
from actoviq.runtime import NewSessionItem
from actoviq.storage.sqlite import SqliteRuntimeSessionAdapter, SqliteStorage

T = "bench"
TURN = 1000
SMALL_TURN = 3


def _item(n: int) -> NewSessionItem:
    return NewSessionItem(
        item_id=f"i{n}",
        kind="text",
        payload={
            "type": "text",
            "role": "user" if n % 2 else "assistant",
            "text": f"message {n} " * 8,
        },
    )


def _rss_mb() -> float:
    # ru_maxrss is KiB on Linux, bytes on macOS.
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 1e6


async def _fill_turns(storage: SqliteStorage, count: int) -> float:
    await storage.sessions.create(tenant_id=T, session_id="s")
    start = time.perf_counter()
    revision = 0
    for first in range(0, count, TURN):
        batch = [_item(n) for n in range(first, min(first + TURN, count))]
        record = await storage.sessions.append(
            tenant_id=T, session_id="s", expected_revision=revision, items=batch
        )
        revision = record.revision
    return (time.perf_counter() - start) * 1000


async def scenario(name: str, size: int, folder: Path) -> dict[str, Any]:
    """Run one scenario in this process and return its measurements."""
    db = folder / f"{name}-{size}.db"
    result: dict[str, Any] = {"scenario": name, "items": size}
    async with await SqliteStorage.open(db) as storage:
        if name == "append-turns":
            ms = await _fill_turns(storage, size)
            result.update(ms=ms, itemsPerSecond=size / (ms / 1000), transactions=-(-size // TURN))
        elif name == "append-single":
            await storage.sessions.create(tenant_id=T, session_id="s")
            start = time.perf_counter()
            revision = 0
            for n in range(size):
                record = await storage.sessions.append(
                    tenant_id=T, session_id="s", expected_revision=revision, items=[_item(n)]
                )
                revision = record.revision
            ms = (time.perf_counter() - start) * 1000
            result.update(ms=ms, itemsPerSecond=size / (ms / 1000), transactions=size)
        elif name == "load":
            await _fill_turns(storage, size)
            rss_before = _rss_mb()
            start = time.perf_counter()
            raw = await storage.sessions.load(tenant_id=T, session_id="s")
            raw_ms = (time.perf_counter() - start) * 1000
            del raw
            start = time.perf_counter()
            history = await SqliteRuntimeSessionAdapter(storage.sessions).load(
                tenant_id=T, session_id="s"
            )
            adapter_ms = (time.perf_counter() - start) * 1000
            assert len(history.items) == size
            result.update(rawLoadMs=raw_ms, transcriptLoadMs=adapter_ms, rssBeforeLoadMb=rss_before)
        elif name == "load-small-turns":
            # A runtime session: many small appends (3 items, e.g. a user message, a tool call
            # and its result), then a load of the whole journal (median of 5 in this process).
            await storage.sessions.create(tenant_id=T, session_id="s")
            revision = 0
            for first in range(0, size, SMALL_TURN):
                batch = [_item(n) for n in range(first, min(first + SMALL_TURN, size))]
                record = await storage.sessions.append(
                    tenant_id=T, session_id="s", expected_revision=revision, items=batch
                )
                revision = record.revision
            samples: list[float] = []
            for _ in range(5):
                start = time.perf_counter()
                loaded = await storage.sessions.load(tenant_id=T, session_id="s")
                samples.append((time.perf_counter() - start) * 1000)
                assert len(loaded.items) == size
            result.update(
                rawLoadMs=statistics.median(samples),
                samplesMs=samples,
                turnRows=-(-size // SMALL_TURN),
            )
        elif name == "snapshot-load":
            await _fill_turns(storage, size)
            record = await storage.sessions.get(tenant_id=T, session_id="s")
            assert record is not None
            summary = TextItem(role="system", text=f"Summary of the first {size} items.")
            snap = await storage.sessions.compact(
                tenant_id=T,
                session_id="s",
                expected_revision=record.revision,
                through_sequence=record.last_sequence,
                state={"items": [{"type": "text", "role": summary.role, "text": summary.text}]},
            )
            await storage.sessions.append(
                tenant_id=T,
                session_id="s",
                expected_revision=snap.revision,
                items=[_item(size + n) for n in range(10)],
            )
            adapter = SqliteRuntimeSessionAdapter(storage.sessions)
            start = time.perf_counter()
            history = await adapter.load(tenant_id=T, session_id="s")
            snapshot_ms = (time.perf_counter() - start) * 1000
            loaded = await storage.sessions.load(tenant_id=T, session_id="s")
            start = time.perf_counter()
            full = await storage.sessions.load(tenant_id=T, session_id="s", after_sequence=0)
            full_ms = (time.perf_counter() - start) * 1000
            async with storage.database.read() as conn:
                plan = (
                    await conn.execute(
                        text(
                            "EXPLAIN QUERY PLAN SELECT * FROM storage_v2_session_turns "
                            "WHERE tenant_id = :t AND session_id = 's' AND last_sequence > :n "
                            "ORDER BY last_sequence"
                        ),
                        {"t": T, "n": snap.through_sequence},
                    )
                ).all()
            result.update(
                snapshotLoadMs=snapshot_ms,
                fullHistoryLoadMs=full_ms,
                transcriptItems=len(history.items),
                itemRowsRead=len(loaded.items),
                snapshotRowsRead=1,
                sessionRowsRead=1,
                fullHistoryItemRows=len(full.items),
                queryPlan=[str(row[-1]) for row in plan],
            )
            assert len(loaded.items) == 10
    result["peakRssMb"] = _rss_mb()
    return result


def _run_child(name: str, size: int, folder: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--scenario", name, "--size", str(size), "--dir", str(folder)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument(
        "--single-max",
        type=int,
        default=100000,
        help="largest size run as single-item appends (each is one transaction)",
    )
    parser.add_argument("--scenario")
    parser.add_argument("--size", type=int)
    parser.add_argument("--dir", type=Path)
    args = parser.parse_args()
    if args.scenario:
        print(json.dumps(asyncio.run(scenario(args.scenario, args.size, args.dir))))
        return
    if args.out is None:
        parser.error("--out is required")
    sizes = [int(s) for s in args.sizes.split(",")]
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as folder:
        for size in sizes:
            for name in ("append-turns", "append-single", "load", "load-small-turns"):
                if name == "append-single" and size > args.single_max:
                    results.append({"scenario": name, "items": size, "skipped": "--single-max"})
                    continue
                results.append(_run_child(name, size, Path(folder)))
                print(json.dumps(results[-1]), file=sys.stderr)
        results.append(_run_child("snapshot-load", max(sizes), Path(folder)))
        print(json.dumps(results[-1]), file=sys.stderr)
    report = {
        "benchmark": "actoviq-storage-sqlite",
        "python": platform.python_version(),
        "platform": platform.platform(),
        "backend": "sqlite+aiosqlite (WAL, synchronous=NORMAL)",
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
