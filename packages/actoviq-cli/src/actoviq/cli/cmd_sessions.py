"""``actoviq sessions list|show|export|delete``."""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING

from actoviq.cli.config import load_settings
from actoviq.cli.environment import CliEnvironment
from actoviq.cli.errors import CliUsageError
from actoviq.cli.output import Output, dumps_line
from actoviq.cli.sessions import (
    delete_session,
    describe_item,
    items_json,
    list_sessions,
    record_json,
    session_record,
    transcript,
    write_text,
)

if TYPE_CHECKING:
    from actoviq.cli.invocation import Invocation

__all__ = ["delete_command", "export_command", "list_command", "show_command"]


async def list_command(invocation: Invocation, output: Output, *, limit: int | None) -> int:
    """List the tenant's sessions (newest first)."""
    settings = load_settings(invocation.config, db=invocation.db)
    async with CliEnvironment(settings) as env:
        records = await list_sessions(env, limit=limit)
    if output.json_mode:
        output.emit(
            {
                "kind": "sessions",
                "tenantId": settings.tenant,
                "sessions": [record_json(record) for record in records],
            }
        )
        return 0
    if not records:
        output.note(f"No sessions in {settings.storage}.")
        return 0
    from rich.table import Table

    table = Table("session", "items", "revision", "updated", box=None, header_style="bold")
    for record in records:
        table.add_row(
            record.session_id, str(record.last_sequence), str(record.revision), record.updated_at
        )
    output.print(table)
    return 0


async def show_command(invocation: Invocation, output: Output, *, session: str) -> int:
    """Show a session's transcript (what the next run on it is given)."""
    settings = load_settings(invocation.config, db=invocation.db)
    async with CliEnvironment(settings) as env:
        record = await session_record(env, session)
        items = await transcript(env, session)
    if output.json_mode:
        output.emit({"kind": "session", **record_json(record), "transcript": items_json(items)})
        return 0
    output.note(f"session {session}: {len(items)} item(s), revision {record.revision}")
    for item in items:
        speaker, text = describe_item(item)
        output.print(f"{speaker}: {text}", style="cyan" if speaker == "tool" else None)
    return 0


async def export_command(
    invocation: Invocation, output: Output, *, session: str, target: str | None
) -> int:
    """Write the transcript as JSON Lines of canonical items (stdout, or ``-o FILE``)."""
    settings = load_settings(invocation.config, db=invocation.db)
    async with CliEnvironment(settings) as env:
        items = await transcript(env, session)
    text = "".join(dumps_line(item) for item in items_json(items))
    if target is None or target == "-":
        output.stdout.write(text)
        output.stdout.flush()
        return 0
    path = await asyncio.to_thread(write_text, target, text)
    if output.json_mode:
        output.emit(
            {"kind": "session.saved", "sessionId": session, "path": str(path), "items": len(items)}
        )
    else:
        output.note(f"Wrote {len(items)} item(s) to {path}.")
    return 0


async def delete_command(invocation: Invocation, output: Output, *, session: str, yes: bool) -> int:
    """Delete a session (asks first on a terminal unless ``--yes``)."""
    if not yes:
        if output.json_mode or not sys.stdin.isatty():
            raise CliUsageError("Deleting a session needs --yes when nobody can be asked.")
        import click

        if not click.confirm(f"Delete session {session!r} and its history?", err=True):
            output.note("Nothing deleted.")
            return 0
    settings = load_settings(invocation.config, db=invocation.db)
    async with CliEnvironment(settings) as env:
        await delete_session(env, session)
    if output.json_mode:
        output.emit({"kind": "session.deleted", "sessionId": session})
    else:
        output.note(f"Deleted session {session}.")
    return 0
