"""The ``actoviq`` command line (Click): commands, options, and nothing heavy at import.

Each command parses its options here and imports its implementation (``actoviq.cli.cmd_*``)
only when it runs, so ``actoviq --help`` loads Click and this module alone. Every command takes
``--json`` (also accepted before the command), ``--debug`` and ``--config``; errors become one
line and an exit code (:class:`~actoviq.cli.exit_codes.ExitCode`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from actoviq.cli.invocation import Invocation

if TYPE_CHECKING:
    from actoviq.cli.output import Output

__all__ = ["Invocation", "cli"]

F = TypeVar("F", bound=Callable[..., Any])


def _common(command: F) -> F:
    """``--json``, ``--debug`` and ``--config`` on every command (after the command name too)."""
    command = click.option(
        "--config", "config_file", default=None, metavar="FILE", help="Use this actoviq.toml."
    )(command)
    command = click.option(
        "--debug", "debug_flag", is_flag=True, help="Show tracebacks on errors."
    )(command)
    return click.option(
        "--json",
        "json_flag",
        is_flag=True,
        help="Machine-readable output: one JSON document, or NDJSON for streams.",
    )(command)


def _invocation(ctx: click.Context, options: dict[str, Any]) -> Invocation:
    root: dict[str, Any] = ctx.find_root().params
    return Invocation(
        config=options.pop("config_file", None) or root.get("config_file"),
        db=root.get("db"),
        json_mode=bool(options.pop("json_flag", False) or root.get("json_flag")),
        debug=bool(options.pop("debug_flag", False) or root.get("debug_flag")),
    )


def _execute(
    ctx: click.Context,
    options: dict[str, Any],
    work: Callable[[Invocation, Output], Coroutine[Any, Any, int]],
) -> NoReturn:
    """Run ``work`` on an event loop and exit with its status; an error becomes one line."""
    import asyncio

    from actoviq.cli.output import Output

    invocation = _invocation(ctx, options)
    output = Output(json_mode=invocation.json_mode, debug=invocation.debug)
    try:
        code = int(asyncio.run(work(invocation, output)))
    except BrokenPipeError:
        code = _pipe_closed()
    except KeyboardInterrupt as error:
        code = int(output.fail(error))
    except Exception as error:
        code = int(output.fail(error))
    ctx.exit(code)


def _pipe_closed() -> int:
    """The reader of stdout went away (``actoviq ... | head``): end quietly, as a shell would.

    Python would report the pipe again when it flushes stdout at exit, so stdout is pointed at
    the null device first. The status is 141 (128 + SIGPIPE), what a shell shows for the same.
    """
    import os

    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError):  # no real file descriptor (a test runner's buffer)
        pass
    return 141


def _json_requested(args: Sequence[str]) -> bool:
    return "--json" in args[: args.index("--")] if "--" in args else "--json" in args


class _Group(click.Group):
    """Click's group, reporting usage errors as an error document under ``--json``."""

    def main(self, args: Sequence[str] | None = None, *extra: Any, **options: Any) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        if not _json_requested(argv):
            return super().main(argv, *extra, **options)
        standalone = options.pop("standalone_mode", True)
        try:
            code: Any = super().main(argv, *extra, standalone_mode=False, **options)
        except (click.ClickException, click.exceptions.Abort) as error:
            from actoviq.cli.errors import CliUsageError
            from actoviq.cli.output import Output

            message = error.format_message() if isinstance(error, click.ClickException) else ""
            code = Output(json_mode=True).fail(CliUsageError(message or "Aborted."))
        code = int(code) if isinstance(code, int) else 0
        if standalone:
            sys.exit(code)
        return code


def _version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from importlib.metadata import version

    click.echo(f"actoviq-cli {version('actoviq-cli')}")
    ctx.exit()


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--config", "config_file", default=None, metavar="FILE", help="Use this actoviq.toml."
)
@click.option("--db", default=None, metavar="URL", help="SQLite file or SQLAlchemy async URL.")
@click.option("--json", "json_flag", is_flag=True, help="Machine-readable output (every command).")
@click.option("--debug", "debug_flag", is_flag=True, help="Show tracebacks on errors.")
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_version)
def cli(config_file: str | None, db: str | None, json_flag: bool, debug_flag: bool) -> None:
    """Actoviq agents in the terminal and the browser.

    Models are 'provider:model' (openai-responses:gpt-4.1-mini, anthropic:claude-sonnet-4-5,
    or scripted:demo to run offline). Keys come from OPENAI_API_KEY / ANTHROPIC_API_KEY.
    Agents, tools and storage are configured in actoviq.toml.

    Exit codes: 0 ok, 1 failed, 2 usage or configuration, 3 the run waits for a decision
    (actoviq resume RUN_ID), 4 not found, 5 refused (already done / conflict), 130 cancelled,
    141 stdout closed early (a pipe such as `| head`).
    """


_MODEL = click.option(
    "--model", "-m", default=None, metavar="PROVIDER:MODEL", help="Model override."
)
_REASONING = click.option("--show-reasoning", is_flag=True, help="Show reasoning text.")


@cli.command()
@click.argument("agent")
@click.argument("prompt")
@_MODEL
@click.option("--session", "-s", default=None, metavar="NAME", help="Continue a stored session.")
@click.option("--approve", "mode", flag_value="approve", help="Approve every tool call that asks.")
@click.option("--reject", "mode", flag_value="reject", help="Reject every tool call that asks.")
@click.option(
    "--interrupt",
    "mode",
    flag_value="interrupt",
    help="Stop at the first approval: print the run id, exit 3 (default when not a terminal).",
)
@_REASONING
@_common
@click.pass_context
def run(ctx: click.Context, **options: Any) -> None:
    """Run AGENT on PROMPT ('-' reads stdin), streaming the answer.

    AGENT is an [agents.<id>] of actoviq.toml, 'package.module:attribute' (an AgentSpec) or
    'assistant'. Tool calls that need approval ask [y/N/always] on a terminal.
    """

    async def work(invocation: Invocation, output: Output) -> int:
        from actoviq.cli.cmd_run import run_command

        return await run_command(invocation, output, **options)

    _execute(ctx, options, work)


@cli.command()
@click.argument("run_id")
@click.option("--approve", multiple=True, metavar="CALL", help="Approve (call id, tool, or all).")
@click.option("--reject", multiple=True, metavar="CALL", help="Reject (call id, tool, or all).")
@click.option(
    "--retry", multiple=True, metavar="CALL", help="Reconcile: run an unknown call again."
)
@click.option("--failed", multiple=True, metavar="CALL", help="Reconcile: the call had no effect.")
@click.option("--reason", default=None, help="Reason recorded with --reject/--failed.")
@click.option(
    "--agent", default=None, help="The agent (default: the one the run was started with)."
)
@_MODEL
@_REASONING
@_common
@click.pass_context
def resume(ctx: click.Context, **options: Any) -> None:
    """Continue the paused run RUN_ID from the checkpoint store, exactly once."""

    async def work(invocation: Invocation, output: Output) -> int:
        from actoviq.cli.cmd_run import resume_command

        return await resume_command(invocation, output, **options)

    _execute(ctx, options, work)


@cli.command()
@click.argument("agent")
@_MODEL
@click.option(
    "--session", "-s", default=None, metavar="NAME", help="Session (default: AGENT's id)."
)
@_REASONING
@_common
@click.pass_context
def chat(ctx: click.Context, **options: Any) -> None:
    """Chat with AGENT; the session survives restarts.

    Commands: /reset /save [FILE] /usage /history /help /exit. Ctrl-C cancels the current
    answer (nothing of it is stored); Ctrl-D quits.
    """

    async def work(invocation: Invocation, output: Output) -> int:
        from actoviq.cli.cmd_chat import chat_command

        return await chat_command(invocation, output, **options)

    _execute(ctx, options, work)


@cli.group()
def sessions() -> None:
    """List, show, export and delete stored sessions."""


@sessions.command("list")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="At most this many.")
@_common
@click.pass_context
def sessions_list(ctx: click.Context, **options: Any) -> None:
    """List sessions, most recently updated first."""

    async def work(invocation: Invocation, output: Output) -> int:
        from actoviq.cli.cmd_sessions import list_command

        return await list_command(invocation, output, **options)

    _execute(ctx, options, work)


@sessions.command("show")
@click.argument("session")
@_common
@click.pass_context
def sessions_show(ctx: click.Context, **options: Any) -> None:
    """Show SESSION's transcript."""

    async def work(invocation: Invocation, output: Output) -> int:
        from actoviq.cli.cmd_sessions import show_command

        return await show_command(invocation, output, **options)

    _execute(ctx, options, work)


@sessions.command("export")
@click.argument("session")
@click.option("--output", "-o", "target", default=None, metavar="FILE", help="Write to FILE.")
@_common
@click.pass_context
def sessions_export(ctx: click.Context, **options: Any) -> None:
    """Export SESSION as JSON Lines of canonical items."""

    async def work(invocation: Invocation, output: Output) -> int:
        from actoviq.cli.cmd_sessions import export_command

        return await export_command(invocation, output, **options)

    _execute(ctx, options, work)


@sessions.command("delete")
@click.argument("session")
@click.option("--yes", "-y", is_flag=True, help="Do not ask.")
@_common
@click.pass_context
def sessions_delete(ctx: click.Context, **options: Any) -> None:
    """Delete SESSION and its history."""

    async def work(invocation: Invocation, output: Output) -> int:
        from actoviq.cli.cmd_sessions import delete_command

        return await delete_command(invocation, output, **options)

    _execute(ctx, options, work)


@cli.group()
def migrate() -> None:
    """Move legacy data into the SQL storage."""


@migrate.command("json-v1")
@click.option("--source", required=True, metavar="DIR", help="JSON v1 root (holds sessions/).")
@click.option("--db", "target", required=True, metavar="URL", help="Target database.")
@click.option("--dry-run", "action", flag_value="dry-run", help="Plan only; write nothing.")
@click.option("--verify", "action", flag_value="verify", help="Check a finished migration.")
@click.option("--rollback", "action", flag_value="rollback", help="Delete what it migrated.")
@click.option("--backup", default=None, metavar="DIR", help="Backup folder (default: sibling).")
@click.option("--tenant", default="default", show_default=True, help="Tenant id.")
@click.option("--source-id", default=None, help="Ledger source id (default: the real path).")
@click.option("--force", is_flag=True, help="Rollback: also remove sessions changed since.")
@click.option("--chunk-size", type=click.IntRange(min=1), default=100, show_default=True)
@_common
@click.pass_context
def migrate_json_v1(ctx: click.Context, **options: Any) -> None:
    """Migrate JSON v1 session folders (dry run, backup, cutover, verify, rollback)."""

    async def work(invocation: Invocation, output: Output) -> int:
        from actoviq.cli.cmd_migrate import migrate_command

        return await migrate_command(invocation, output, **options)

    _execute(ctx, options, work)


@cli.group()
def inspect() -> None:
    """Show models, middleware, services and agents as the runtime sees them."""


@inspect.command("models")
@click.argument("model", required=False)
@_common
@click.pass_context
def inspect_models(ctx: click.Context, **options: Any) -> None:
    """List providers (or one MODEL's capabilities)."""

    async def work(invocation: Invocation, output: Output) -> int:
        from actoviq.cli.cmd_inspect import models_command

        return await models_command(invocation, output, **options)

    _execute(ctx, options, work)


@inspect.command("middleware")
@click.argument("agent", required=False)
@_common
@click.pass_context
def inspect_middleware(ctx: click.Context, **options: Any) -> None:
    """Middleware in execution order, with stages and priorities."""

    async def work(invocation: Invocation, output: Output) -> int:
        from actoviq.cli.cmd_inspect import middleware_command

        return await middleware_command(invocation, output, **options)

    _execute(ctx, options, work)


@inspect.command("services")
@_common
@click.pass_context
def inspect_services(ctx: click.Context, **options: Any) -> None:
    """Runtime services and whether they are initialised."""

    async def work(invocation: Invocation, output: Output) -> int:
        from actoviq.cli.cmd_inspect import services_command

        return await services_command(invocation, output, **options)

    _execute(ctx, options, work)


@inspect.command("agent")
@click.argument("agent")
@_MODEL
@_common
@click.pass_context
def inspect_agent(ctx: click.Context, **options: Any) -> None:
    """An agent's digest, declaration and resolved tools."""

    async def work(invocation: Invocation, output: Output) -> int:
        from actoviq.cli.cmd_inspect import agent_command

        return await agent_command(invocation, output, **options)

    _execute(ctx, options, work)


@cli.command()
@click.argument("agent")
@_MODEL
@click.option("--host", default="127.0.0.1", show_default=True, help="Bind address.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@_common
@click.pass_context
def serve(ctx: click.Context, **options: Any) -> None:
    """Serve a local web chat page for AGENT (needs actoviq-cli[web]).

    Every request needs the token printed at start (open the printed URL).
    """

    async def work(invocation: Invocation, output: Output) -> int:
        from actoviq.cli.cmd_serve import serve_command

        return await serve_command(invocation, output, **options)

    _execute(ctx, options, work)


@cli.group()
def mcp() -> None:
    """Model Context Protocol (needs actoviq-cli[mcp])."""


@mcp.command("serve")
@click.argument("agent")
@_MODEL
@click.option(
    "--transport",
    type=click.Choice(["stdio", "streamable-http"]),
    default="stdio",
    show_default=True,
)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True)
@click.option("--name", default=None, help="The MCP tool name (default: the agent id).")
@_common
@click.pass_context
def mcp_serve(ctx: click.Context, **options: Any) -> None:
    """Serve AGENT as one MCP tool (stdio or streamable HTTP)."""

    async def work(invocation: Invocation, output: Output) -> int:
        from actoviq.cli.cmd_serve import mcp_command

        return await mcp_command(invocation, output, **options)

    _execute(ctx, options, work)
