"""``actoviq migrate json-v1``: the storage package's JSON v1 migrator with a progress bar.

The migration itself (dry run, verified backup, chunked cutover with a ledger, verify, rollback)
is ``actoviq.storage.sqlite.JsonV1Migrator``; ``python -m actoviq.storage.sqlite`` remains as an
alias. On a terminal a ``rich`` progress bar on stderr shows files, items and MB/s; the report is
a JSON document with ``--json`` and a summary otherwise. Exit status 1 when the source has invalid
files or verification finds problems.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Literal, cast

from actoviq.cli.exit_codes import ExitCode
from actoviq.cli.output import Output
from actoviq.core import JsonObject

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID

    from actoviq.cli.invocation import Invocation
    from actoviq.storage.sqlite import MigrationProgress

__all__ = ["MigrationProgressBar", "migrate_command"]

Action = Literal["dry-run", "verify", "rollback"]
_PHASES = {"scan": "reading", "cutover": "writing", "verify": "verifying"}


class MigrationProgressBar:
    """A ``rich`` progress bar fed by ``JsonV1Migrator(progress=...)``: files, items, MB/s.

    Args:
        console: where to draw (stderr on a terminal).
    """

    def __init__(self, console: Console) -> None:
        from rich.progress import (
            BarColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TransferSpeedColumn,
        )

        self.progress: Progress = Progress(
            TextColumn("{task.description:<9}"),
            BarColumn(),
            TextColumn("{task.fields[files]} files"),
            TextColumn("{task.fields[items]} items"),
            TransferSpeedColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        self._tasks: dict[str, TaskID] = {}

    def update(self, event: MigrationProgress) -> None:
        """Show one progress report (a task per phase; bytes drive the bar and the speed)."""
        task = self._tasks.get(event.phase)
        if task is None:
            task = self.progress.add_task(
                _PHASES.get(event.phase, event.phase),
                total=max(event.bytes_total, 1),
                files="0/0",
                items=0,
            )
            self._tasks[event.phase] = task
        self.progress.update(
            task,
            completed=event.bytes_done if event.bytes_total else 1,
            files=f"{event.files_done}/{event.files_total}",
            items=event.items_done,
        )

    def __enter__(self) -> MigrationProgressBar:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()


def _summary(output: Output, action: str, report: JsonObject) -> None:
    if action == "verify":
        problems = cast(list[JsonObject], report.get("problems") or [])
        output.print(
            f"verify: {report['sessionsChecked']} session(s), {report['itemsChecked']} item(s), "
            + ("ok" if report.get("ok") else f"{len(problems)} problem(s)")
        )
        for problem in problems:
            output.print(f"  {problem['sourceKey']}: {problem['reason']}", style="yellow")
        return
    if action == "rollback":
        removed = cast(list[str], report.get("removedSessions") or [])
        verb = "would remove" if report.get("dryRun") else "removed"
        output.print(f"rollback: {verb} {len(removed)} session(s)")
        return
    output.print(
        f"{'dry run' if report.get('dryRun') else 'migrate'}: "
        f"{report['migratedSessions']} migrated, {report['skippedSessions']} skipped, "
        f"{report['invalidFiles']} invalid, {report['totalItems']} item(s)"
        + (f"; backup at {report['backupDirectory']}" if report.get("backupDirectory") else "")
    )
    for entry in cast(list[JsonObject], report.get("files") or []):
        if entry.get("status") == "invalid":
            output.print(f"  {entry['sourceFile']}: {entry.get('reason')}", style="yellow")


async def migrate_command(
    invocation: Invocation,
    output: Output,
    *,
    source: str,
    target: str,
    action: Action | None,
    backup: str | None,
    tenant: str,
    source_id: str | None,
    force: bool,
    chunk_size: int,
) -> int:
    """``actoviq migrate json-v1``: see the module docstring."""
    from actoviq.storage.sqlite import JsonV1Migrator, MigrationSourceError, SqliteStorage

    name = action or "migrate"
    show_bar = sys.stderr.isatty()
    bar = MigrationProgressBar(output.err_console) if show_bar else None
    async with await SqliteStorage.open(target) as storage:
        migrator = JsonV1Migrator(
            storage, chunk_size=chunk_size, progress=bar.update if bar is not None else None
        )
        try:
            if bar is not None:
                bar.__enter__()
            if action == "verify":
                checked = await migrator.verify(
                    tenant_id=tenant, source_directory=source, source_id=source_id
                )
                report, code = checked.to_json(), (ExitCode.OK if checked.ok else ExitCode.FAILED)
            elif action == "rollback":
                undone = await migrator.rollback(
                    tenant_id=tenant, source_directory=source, source_id=source_id, force=force
                )
                report, code = undone.to_json(), ExitCode.OK
            else:
                try:
                    done = await migrator.migrate(
                        tenant_id=tenant,
                        source_directory=source,
                        source_id=source_id,
                        dry_run=action == "dry-run",
                        backup_directory=backup,
                    )
                except MigrationSourceError as error:
                    problems = [{"path": path, "reason": reason} for path, reason in error.problems]
                    error.details = {**(error.details or {}), "problems": problems}
                    raise
                report = done.to_json()
                code = ExitCode.FAILED if done.invalid_files else ExitCode.OK
        finally:
            if bar is not None:
                bar.__exit__()
    if output.json_mode:
        output.emit({"kind": "migration", "action": name, "report": report, "exitCode": int(code)})
    else:
        _summary(output, name, report)
    return code
