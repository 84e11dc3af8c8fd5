"""``actoviq chat`` in a real pseudo-terminal (pexpect): editing, history, Ctrl-C, a restart."""

from __future__ import annotations

import json

import pexpect
import pytest
from cli_testkit import Project

pytestmark = pytest.mark.slow

PROMPT = "you>"  # prompt_toolkit draws the trailing space as a cursor move
UP = "\x1b[A"


def _spawn(project: Project, session: str) -> pexpect.spawn[str]:
    command = project.command("chat", "payer", "--session", session)
    env = project.env(TERM="xterm", PROMPT_TOOLKIT_NO_CPR="1", COLUMNS="120", LINES="40")
    child: pexpect.spawn[str] = pexpect.spawn(
        command[0],
        command[1:],
        cwd=str(project.root),
        env=env,
        encoding="utf-8",
        timeout=60,
        dimensions=(40, 120),
    )
    return child


def test_chat_in_a_terminal_survives_a_restart(project: Project) -> None:
    child = _spawn(project, "pty")
    try:
        child.expect("with 0 earlier item")
        child.expect_exact(PROMPT)
        child.sendline("hello")
        child.expect_exact("You said: hello (message 1)")
        child.expect_exact(PROMPT)

        # Ctrl-C while the answer streams cancels that run only; the chat goes on.
        child.sendline("slow please")
        child.expect_exact("three")
        child.sendcontrol("c")
        child.expect("cancelled")
        child.expect_exact(PROMPT)
        child.sendline("after the cancel")
        child.expect_exact("You said: after the cancel (message 2)")  # nothing of the cancelled run
        child.expect_exact(PROMPT)
        child.sendline("/usage")
        child.expect("this chat: 3 run")
        child.expect_exact(PROMPT)
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0

    # A new process: the session's history and the line history are both still there.
    child = _spawn(project, "pty")
    try:
        child.expect("with 4 earlier item")
        child.expect_exact(PROMPT)
        child.send(UP + UP + "\r")  # recalls "after the cancel" from the line history
        child.expect_exact("You said: after the cancel (message 3)")
        child.expect_exact(PROMPT)
        child.sendline("/reset")
        child.expect("Conversation reset")
        child.expect_exact(PROMPT)
        child.sendline("fresh start")
        child.expect_exact("You said: fresh start (message 1)")
        child.expect_exact(PROMPT)
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0

    shown = project.invoke("--json", "sessions", "show", "pty")
    transcript = json.loads(shown.stdout)["transcript"]
    assert [i["text"] for i in transcript] == ["fresh start", "You said: fresh start (message 1)"]
    exported = project.invoke("sessions", "export", "pty").stdout
    assert "slow please" not in exported


def test_chat_approval_prompt_in_a_terminal(project: Project) -> None:
    child = _spawn(project, "pay")
    try:
        child.expect_exact(PROMPT)
        child.sendline("please pay")
        child.expect_exact("[y/N/always]")
        child.sendline("y")
        child.expect_exact("Invoice INV-42 is paid.")
        child.expect_exact(PROMPT)
        child.sendline("pay again please")
        child.expect_exact("[y/N/always]")
        child.sendline("n")
        child.expect("rejected")
        child.expect_exact(PROMPT)
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert project.ledger() == ["pay INV-42 1250"]


def test_ctrl_d_while_an_answer_streams_quits_after_it(project: Project) -> None:
    # In cooked mode Ctrl-D would be an end of file the next prompt never recovers from.
    child = _spawn(project, "eof")
    try:
        child.expect_exact(PROMPT)
        child.sendline("slow please")
        child.expect_exact("three")
        child.sendcontrol("d")
        child.expect_exact("sixteen")  # the answer finishes
        child.expect(pexpect.EOF)  # then the typed-ahead Ctrl-D quits at the empty prompt
    finally:
        child.close()
    assert child.exitstatus == 0
    shown = project.invoke("--json", "sessions", "show", "eof")
    transcript = json.loads(shown.stdout)["transcript"]
    assert transcript[-1]["text"].endswith("sixteen")
