"""``actoviq chat``: a multi-turn loop on a stored session.

On a terminal the line editor is prompt_toolkit (editing, history in ``.actoviq/chat-history``,
Ctrl-C clears the line, Ctrl-D quits); piped input is read line by line. Each message is a run
on the session (``--session``, default the agent's id), so the history survives restarts. Ctrl-C
while an answer streams cancels that run: a cancelled run stores nothing in the session, so the
next message continues from the last complete exchange. Commands: ``/reset`` (an empty snapshot:
later runs start fresh, the journal keeps the history), ``/save [FILE]`` (JSON Lines of the
transcript), ``/usage``, ``/history``, ``/help``, ``/exit``.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Generator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

from actoviq.cli.agents import ResolvedAgent, resolve_agent, setup_agent
from actoviq.cli.approvals import Approver
from actoviq.cli.cmd_run import interactive, report_result
from actoviq.cli.config import load_settings
from actoviq.cli.driving import drive
from actoviq.cli.environment import CliEnvironment
from actoviq.cli.output import Output, dumps_line
from actoviq.cli.render import sink_for
from actoviq.cli.sessions import (
    describe_item,
    items_json,
    reset_session,
    session_usage,
    transcript,
    usage_json,
    write_text,
)
from actoviq.core import Usage
from actoviq.surfaces import AgentRuntimeBridgeAdapter

if TYPE_CHECKING:
    from actoviq.cli.invocation import Invocation

__all__ = ["ChatLoop", "LineReader", "chat_command"]

_HELP: Final = (
    "/reset          forget the conversation (later answers start fresh)\n"
    "/save [FILE]    write the transcript as JSON Lines\n"
    "/usage          tokens and requests of this chat and of the session\n"
    "/history        show the transcript\n"
    "/exit           quit (or Ctrl-D); Ctrl-C cancels the answer being written"
)


class _Stop(Exception):
    """Ctrl-C or Ctrl-D at an approval question: leave the run paused."""


class LineReader(Protocol):
    """Where chat lines and approval answers come from."""

    async def read(self, prompt: str) -> str | None:
        """The next line (None at end of input)."""
        ...

    async def ask(self, question: str) -> str:
        """An answer to a question (raises to leave a run paused)."""
        ...

    def answering(self) -> AbstractContextManager[None]:
        """Held while an answer streams (keys typed meanwhile wait for the next prompt)."""
        ...


@contextmanager
def _type_ahead(fd: int) -> Generator[None]:
    """Non-canonical, no-echo input on terminal ``fd`` for the block; signals stay on.

    Between prompts the terminal is in cooked mode, where Ctrl-D is no key but an end of file:
    the next ``read`` returns nothing and prompt_toolkit's next prompt never reads again (the
    chat hangs). Without ``ICANON`` Ctrl-D stays a key that the next prompt reads (and quits
    on, as it says); without ``ECHO`` keys typed ahead do not garble the streamed answer and
    appear at that prompt. ``ISIG`` stays, so Ctrl-C still cancels the run.
    """
    import termios

    try:
        saved = termios.tcgetattr(fd)
    except termios.error:
        yield
        return
    changed = list(saved)
    changed[3] = saved[3] & ~(termios.ICANON | termios.ECHO)
    control = list(saved[6])
    control[termios.VMIN], control[termios.VTIME] = 1, 0
    changed[6] = control
    termios.tcsetattr(fd, termios.TCSANOW, changed)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, saved)


class _TerminalReader:
    """prompt_toolkit: line editing and a persistent history file."""

    def __init__(self, history: Path) -> None:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory

        history.parent.mkdir(parents=True, exist_ok=True)
        self._lines: PromptSession[str] = PromptSession(history=FileHistory(str(history)))
        self._questions: PromptSession[str] = PromptSession()

    async def read(self, prompt: str) -> str | None:
        while True:
            try:
                return await self._lines.prompt_async(prompt)
            except KeyboardInterrupt:
                continue  # Ctrl-C at the prompt clears the line, like a shell
            except EOFError:
                return None

    async def ask(self, question: str) -> str:
        try:
            return await self._questions.prompt_async(question)
        except (KeyboardInterrupt, EOFError):
            raise _Stop from None

    def answering(self) -> AbstractContextManager[None]:
        return _type_ahead(sys.stdin.fileno())


class _PipeReader:
    """Lines from a pipe or file (no editing; approvals are not asked)."""

    async def read(self, prompt: str) -> str | None:
        line = await asyncio.to_thread(sys.stdin.readline)
        return line.rstrip("\n") if line else None

    async def ask(self, question: str) -> str:
        raise _Stop

    def answering(self) -> AbstractContextManager[None]:
        return nullcontext()


class _ChatApprover(Approver):
    async def decide(self, interruptions: Any) -> Any:
        try:
            return await super().decide(interruptions)
        except _Stop:
            return None


class ChatLoop:
    """One chat: reads lines, runs them on the session, handles the slash commands."""

    def __init__(
        self,
        env: CliEnvironment,
        agent: ResolvedAgent,
        bridge: AgentRuntimeBridgeAdapter,
        session_id: str,
        output: Output,
        reader: LineReader,
        *,
        show_reasoning: bool,
        ask: bool,
    ) -> None:
        self.env = env
        self.agent = agent
        self.bridge = bridge
        self.session_id = session_id
        self.output = output
        self.reader = reader
        self.show_reasoning = show_reasoning
        self.approver = _ChatApprover(
            "ask" if ask else "interrupt", ask=reader.ask if ask else None
        )
        self.usage = Usage()
        self.runs = 0

    def _say(self, text: str, style: str | None = "dim") -> None:
        if not self.output.json_mode:
            self.output.note(text, style)

    async def banner(self) -> None:
        """Who we talk to, on which session, and how much history it has."""
        earlier = len(await self._transcript())
        self._say(
            f"actoviq chat: {self.agent.spec.name} ({self.agent.spec.model}), session "
            f"{self.session_id!r} with {earlier} earlier item(s). /help for commands, "
            "Ctrl-D to quit."
        )

    async def _transcript(self) -> list[Any]:
        try:
            return await transcript(self.env, self.session_id)
        except LookupError:
            return []

    async def message(self, text: str) -> None:
        """Run one message on the session, streaming the answer."""
        sink = sink_for(self.output, show_reasoning=self.show_reasoning)
        stream = self.bridge.stream(
            text,
            session_id=self.session_id,
            tenant_id=self.env.tenant,
            metadata=self.agent.metadata(),
        )
        try:
            with self.reader.answering():
                result = await drive(self.bridge, stream, sink, self.approver)
        except Exception as error:  # the chat goes on; the session holds nothing of this run
            self.output.fail(error)
            return
        self.usage = self.usage + result.usage
        self.runs += 1
        if self.output.json_mode or result.status != "completed":
            report_result(self.output, result)

    async def command(self, line: str) -> bool:
        """Handle a slash command; False means quit."""
        name, _, argument = line[1:].partition(" ")
        name, argument = name.lower(), argument.strip()
        if name in ("exit", "quit", "q"):
            return False
        if name == "reset":
            hidden = await reset_session(self.env, self.session_id)
            self._emit({"kind": "session.reset", "sessionId": self.session_id, "hidden": hidden})
            self._say(f"Conversation reset ({hidden} item(s) hidden; the journal keeps them).")
        elif name == "save":
            await self._save(argument)
        elif name == "usage":
            await self._usage()
        elif name == "history":
            await self._history()
        elif name == "help":
            self._say(_HELP, None)
        elif self.output.json_mode:  # an error document; the chat goes on
            from actoviq.cli.errors import CliUsageError

            self.output.fail(CliUsageError(f"Unknown command /{name}. /help lists them."))
        else:
            self._say(f"Unknown command /{name}. /help lists them.", "yellow")
        return True

    def _emit(self, document: dict[str, Any]) -> None:
        if self.output.json_mode:
            self.output.emit(document)

    async def _save(self, argument: str) -> None:
        items = await self._transcript()
        stamp = time.strftime("%Y%m%d-%H%M%S")
        text = "".join(dumps_line(item) for item in items_json(items))
        target = await asyncio.to_thread(
            write_text, argument or f"{self.session_id}-{stamp}.jsonl", text
        )
        self._emit(
            {
                "kind": "session.saved",
                "sessionId": self.session_id,
                "path": str(target),
                "items": len(items),
            }
        )
        self._say(f"Saved {len(items)} item(s) to {target}.")

    async def _usage(self) -> None:
        total, runs = await session_usage(self.env, self.session_id)
        self._emit(
            {
                "kind": "usage",
                "sessionId": self.session_id,
                "chat": {"runs": self.runs, "usage": usage_json(self.usage)},
                "session": {"runs": runs, "usage": usage_json(total)},
            }
        )
        for label, count, usage in (("this chat", self.runs, self.usage), ("session", runs, total)):
            self._say(
                f"{label}: {count} run(s), {usage.requests} request(s), {usage.input_tokens} in / "
                f"{usage.output_tokens} out tokens"
                + (f", ${usage.cost_usd:.4f}" if usage.cost_usd else ""),
                None,
            )

    async def _history(self) -> None:
        items = await self._transcript()
        if self.output.json_mode:
            self.output.emit(
                {
                    "kind": "session.history",
                    "sessionId": self.session_id,
                    "items": items_json(items),
                }
            )
            return
        for item in items:
            speaker, text = describe_item(item)
            self.output.print(f"{speaker}: {text}", style="cyan" if speaker == "tool" else None)

    async def loop(self) -> None:
        """Read and answer until end of input or ``/exit``."""
        await self.banner()
        prompt = "" if self.output.json_mode else "you> "
        while True:
            line = await self.reader.read(prompt)
            if line is None:
                break
            text = line.strip()
            if not text:
                continue
            if text.startswith("/"):
                if not await self.command(text):
                    break
                continue
            await self.message(text)


async def chat_command(
    invocation: Invocation,
    output: Output,
    *,
    agent: str,
    model: str | None,
    session: str | None,
    show_reasoning: bool,
) -> int:
    """``actoviq chat``: see the module docstring."""
    settings = load_settings(invocation.config, db=invocation.db)
    resolved = resolve_agent(settings, agent, model=model)
    setup = setup_agent(settings, resolved)
    terminal = interactive(output) and sys.stdout.isatty()
    history = settings.history or settings.root / ".actoviq" / "chat-history"
    reader: LineReader = _TerminalReader(history) if terminal else _PipeReader()
    async with CliEnvironment(settings) as env:
        runtime = env.runtime(setup)
        bridge = AgentRuntimeBridgeAdapter(runtime, resolved.spec, target="cli")
        chat = ChatLoop(
            env,
            resolved,
            bridge,
            session or resolved.spec.id,
            output,
            reader,
            show_reasoning=show_reasoning or settings.show_reasoning,
            ask=terminal,
        )
        await chat.loop()
    return 0
