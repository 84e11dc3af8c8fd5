"""Artifact bytes benchmark: stream a 200 MiB artifact in and out, memory stays a few chunks wide.

Usage: python bench_artifacts.py --out report.json [--mib 200]

Each backend runs in a fresh subprocess, so its peak resident set size (``ru_maxrss``) is its own:

* ``directory``: records in SQLite, bytes in the local directory (the default for a file);
* ``sqlite-table``: bytes in SQLite's chunked blob table;
* ``postgres-table``: bytes in PostgreSQL's blob table (when ``ACTOVIQ_TEST_POSTGRES_URL`` is set).

The source is an async generator producing 1 MiB chunks (never the whole artifact); the read
hashes each chunk and drops it. Reported per backend: put and read throughput (MiB/s), the peak of
Python allocations during each phase (``tracemalloc``) and the process's peak RSS minus its RSS
before the put. Target: both peaks stay under 16 MiB for a 200 MiB artifact.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from actoviq.storage.sqlite import SqliteStorage

CHUNK = 1 << 20
TARGET_PEAK_MIB = 16


def _rss_mib() -> float:
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / (1 << 20)


def _current_rss_mib() -> float:
    with open("/proc/self/statm") as handle:
        pages = int(handle.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / (1 << 20)


async def _source(total: int) -> AsyncIterator[bytes]:
    block = os.urandom(CHUNK)
    sent = 0
    while sent < total:
        piece = block[: min(CHUNK, total - sent)]
        sent += len(piece)
        yield piece


async def scenario(backend: str, mib: int, folder: Path) -> dict[str, Any]:
    total = mib << 20
    if backend == "postgres-table":
        url = os.environ["ACTOVIQ_TEST_POSTGRES_URL"].replace(
            "postgresql://", "postgresql+asyncpg://", 1
        )
        target, blobs = url, "database"
    else:
        target = str(folder / f"{backend}.db")
        blobs = "database" if backend == "sqlite-table" else "directory"
    tenant = uuid.uuid4().hex
    async with await SqliteStorage.open(target, artifact_blobs=blobs) as storage:
        store = storage.artifact_store
        rss_before = _current_rss_mib()
        tracemalloc.start()
        start = time.perf_counter()
        record = await store.put(
            tenant_id=tenant,
            artifact_id="big",
            expected_revision=None,
            media_type="application/octet-stream",
            data=_source(total),
        )
        put_s = time.perf_counter() - start
        _, put_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        digest = hashlib.sha256()
        start = time.perf_counter()
        async with store.open(tenant_id=tenant, artifact_id="big") as reader:
            async for chunk in reader:
                digest.update(chunk)
        read_s = time.perf_counter() - start
        _, read_peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert digest.hexdigest() == record.sha256
        assert record.size == total
        await store.delete(tenant_id=tenant, artifact_id="big")
        await store.collect_garbage(grace_ms=0)
    return {
        "backend": backend,
        "mib": mib,
        "put_mib_per_s": round(mib / put_s, 1),
        "read_mib_per_s": round(mib / read_s, 1),
        "put_python_peak_mib": round(put_peak / (1 << 20), 2),
        "read_python_peak_mib": round(read_peak / (1 << 20), 2),
        "rss_growth_mib": round(_rss_mib() - rss_before, 1),
        "within_target": max(put_peak, read_peak) < TARGET_PEAK_MIB << 20,
    }


def _run_child(backend: str, mib: int, folder: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--backend", backend, "--mib", str(mib), "--dir", str(folder)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--mib", type=int, default=200)
    parser.add_argument("--backend")
    parser.add_argument("--dir", type=Path)
    args = parser.parse_args()
    if args.backend:
        print(json.dumps(asyncio.run(scenario(args.backend, args.mib, args.dir))))
        return
    if args.out is None:
        parser.error("--out is required")
    backends = ["directory", "sqlite-table"]
    if os.environ.get("ACTOVIQ_TEST_POSTGRES_URL"):
        backends.append("postgres-table")
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as folder:
        for backend in backends:
            results.append(_run_child(backend, args.mib, Path(folder)))
            print(json.dumps(results[-1]), file=sys.stderr)
    report = {
        "benchmark": "actoviq-storage-sqlite artifacts",
        "python": platform.python_version(),
        "platform": platform.platform(),
        "target": f"Python allocation peak < {TARGET_PEAK_MIB} MiB per phase",
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    if not all(result["within_target"] for result in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
