"""The workspace disk quota: how much one run may add to its workspace, summed over all files.

``RLIMIT_FSIZE`` bounds each file the child writes, not their number: a script could write a
thousand files each under the limit, or a million empty ones, and fill the host's disk. No
kernel layer the local executors use counts a directory's total (quotas and size-limited mounts
need root or a mount namespace the workspace bind would hide), so the host measures: it walks
the workspace before the run, then again every few tens of milliseconds while the child runs
and once more when it ends, and kills the child's process group as soon as the usage grew past
the quota. What the script can write between two walks is the overshoot (the walk interval times
the disk's write speed, each file still capped by ``RLIMIT_FSIZE``); the run then fails with
:class:`~actoviq.workflow.WorkflowResourceLimitError` (resource ``disk``).

Usage counts allocated blocks, and every entry (file, directory, link, FIFO) as at least one
4 KiB block, so empty files count too. The walk never follows a symlink, and stops as soon as the
total passes the bound, so its cost is bounded by the quota, not by what the script wrote.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Coroutine
from typing import Final, TypeVar

from actoviq.workflow.errors import WorkflowExecutorError, WorkflowResourceLimitError

__all__ = ["ENTRY_BYTES", "WorkspaceQuota", "run_within_quota", "workspace_usage"]

T = TypeVar("T")

ENTRY_BYTES: Final = 4096
"""Every entry counts as at least this many bytes (an inode and a directory slot)."""
_MIN_INTERVAL_S: Final = 0.025
_MAX_INTERVAL_S: Final = 0.5


def workspace_usage(root: str, stop_above: int | None = None) -> int:
    """Bytes under ``root`` (allocated blocks, at least :data:`ENTRY_BYTES` per entry).

    Symlinks are counted as entries, never followed. Entries that vanish mid-walk are skipped.
    Returns as soon as the total exceeds ``stop_above`` (the result is then only a lower bound).
    """
    total = 0
    pending = [root]
    while pending:
        directory = pending.pop()
        try:
            entries = os.scandir(directory)
        except OSError:
            continue  # removed, or not readable by the host: nothing the run can grow there
        with entries:
            for entry in entries:
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                total += max(info.st_blocks * 512, ENTRY_BYTES)
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                if stop_above is not None and total > stop_above:
                    return total
    return total


class WorkspaceQuota:
    """Watches one run's workspace and calls ``kill`` once it grew past ``limit_bytes``.

    Use :meth:`start` before the child runs (it measures the baseline), run :meth:`watch` as a
    task while it runs, then :meth:`exceeded` (which measures once more) when it ended.
    """

    __slots__ = ("_baseline", "_kill", "_limit", "_root", "_usage")

    def __init__(self, root: str, limit_bytes: int, kill: Callable[[], None]) -> None:
        self._root = root
        self._limit = limit_bytes
        self._kill = kill
        self._baseline = 0
        self._usage: int | None = None  # the usage that broke the quota, once seen

    @property
    def limit_bytes(self) -> int:
        """How many bytes the run may add."""
        return self._limit

    @property
    def added_bytes(self) -> int | None:
        """What the run had added when the quota was seen broken (None: not broken)."""
        return None if self._usage is None else self._usage - self._baseline

    async def start(self) -> None:
        """Measure the workspace before the run (what is already there does not count)."""
        self._baseline = await asyncio.to_thread(workspace_usage, self._root)

    async def watch(self) -> None:
        """Walk the workspace until cancelled; kill the child once the quota is broken."""
        interval = _MIN_INTERVAL_S
        while self._usage is None:
            await asyncio.sleep(interval)
            began = time.monotonic()
            await self._measure()
            # A large workspace takes long to walk: walk it at most a fifth of the time.
            interval = min(max(_MIN_INTERVAL_S, 4 * (time.monotonic() - began)), _MAX_INTERVAL_S)

    async def exceeded(self) -> bool:
        """True when the quota was broken during the run or is broken now."""
        if self._usage is None:
            await self._measure()
        return self._usage is not None

    async def _measure(self) -> None:
        bound = self._baseline + self._limit
        usage = await asyncio.to_thread(workspace_usage, self._root, bound)
        if usage > bound and self._usage is None:
            self._usage = usage
            self._kill()


async def run_within_quota(quota: WorkspaceQuota, work: Coroutine[object, object, T]) -> T:
    """Await ``work`` (the conversation with the child) while ``quota`` watches the workspace.

    Raises:
        WorkflowResourceLimitError: resource ``disk``: the run added more than the quota (the
            child was killed, or it ended with the workspace over the quota).
    """
    # Owned here and always awaited (not a TaskGroup: it would wrap the child's typed error).
    watcher = asyncio.create_task(quota.watch())
    try:
        result = await work
    except WorkflowExecutorError:
        if await quota.exceeded():
            raise _over(quota) from None
        raise
    finally:
        watcher.cancel()
        await asyncio.wait([watcher])
    if await quota.exceeded():
        raise _over(quota)
    return result


def _over(quota: WorkspaceQuota) -> WorkflowResourceLimitError:
    return WorkflowResourceLimitError(
        "disk",
        f"The workflow added more than {quota.limit_bytes} bytes to its workspace "
        "(ProcessResourceLimits.workspace_bytes, every file and directory counted); the run "
        "was stopped.",
    )
