"""``python -m actoviq.storage.sqlite migrate|verify|rollback``: the JSON v1 migration CLI.

Every command prints its report as JSON on stdout. Exit codes: 0 success, 1 verification found
problems or the source has invalid files, 2 any other storage error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence

from actoviq.core import JsonObject
from actoviq.runtime.stores import StorageError
from actoviq.storage.sqlite.errors import MigrationSourceError
from actoviq.storage.sqlite.migration import JsonV1Migrator
from actoviq.storage.sqlite.storage import SqliteStorage

__all__ = ["build_parser", "main", "run"]


def build_parser() -> argparse.ArgumentParser:
    """The argparse tree (the ``actoviq migrate`` command wraps it)."""
    parser = argparse.ArgumentParser(
        prog="python -m actoviq.storage.sqlite",
        description="Actoviq storage maintenance.",
        epilog="The main command is `actoviq migrate json-v1` (actoviq-cli, with a progress bar); "
        "this entry stays as an alias with the same migrator and reports.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", required=True, help="SQLite file path or SQLAlchemy async URL")
    common.add_argument("--tenant", default="default", help="tenant id (default: %(default)s)")
    common.add_argument("--source-id", default=None, help="ledger source id (default: realpath)")

    migrate = commands.add_parser("migrate", parents=[common], help="JSON v1 -> SQL migration")
    migrate.add_argument("--source", required=True, help="JSON v1 root (holds sessions/)")
    migrate.add_argument("--dry-run", action="store_true", help="plan only; write nothing")
    migrate.add_argument("--backup", default=None, help="backup directory (default: sibling)")
    migrate.add_argument("--chunk-size", type=int, default=100, help="sessions per transaction")

    verify = commands.add_parser("verify", parents=[common], help="check a finished migration")
    verify.add_argument("--source", required=True, help="JSON v1 root (holds sessions/)")

    rollback = commands.add_parser(
        "rollback", parents=[common], help="delete the sessions the ledger lists"
    )
    rollback.add_argument("--source", default=None, help="JSON v1 root (or give --source-id)")
    rollback.add_argument("--dry-run", action="store_true", help="list only; delete nothing")
    rollback.add_argument("--force", action="store_true", help="also remove changed sessions")
    return parser


async def run(args: argparse.Namespace) -> tuple[int, JsonObject]:
    """Execute parsed arguments; returns ``(exit code, JSON report)``."""
    async with await SqliteStorage.open(args.db) as storage:
        migrator = JsonV1Migrator(storage, chunk_size=getattr(args, "chunk_size", 100))
        if args.command == "migrate":
            report = await migrator.migrate(
                tenant_id=args.tenant,
                source_directory=args.source,
                source_id=args.source_id,
                dry_run=args.dry_run,
                backup_directory=args.backup,
            )
            return (1 if report.invalid_files else 0), report.to_json()
        if args.command == "verify":
            checked = await migrator.verify(
                tenant_id=args.tenant, source_directory=args.source, source_id=args.source_id
            )
            return (0 if checked.ok else 1), checked.to_json()
        undone = await migrator.rollback(
            tenant_id=args.tenant,
            source_directory=args.source,
            source_id=args.source_id,
            dry_run=args.dry_run,
            force=args.force,
        )
        return 0, undone.to_json()


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv``, run, print the JSON report; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        code, report = asyncio.run(run(args))
    except MigrationSourceError as error:
        problems = [{"path": path, "reason": reason} for path, reason in error.problems]
        report = {"error": error.to_json(), "problems": problems}
        code = 1
    except StorageError as error:
        report, code = {"error": error.to_json()}, 2
    json.dump(report, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
    return code
