"""``actoviq run`` / ``resume`` through Click's runner with the scripted provider."""

from __future__ import annotations

import pytest
from cli_testkit import Project, last

from actoviq.cli import ExitCode


def test_run_streams_the_answer_and_its_usage(project: Project) -> None:
    result = project.invoke("run", "payer", "hello there")
    assert result.exit_code == 0, result.output
    assert "You said: hello there (message 1)" in result.stdout
    assert "[usage] 1 request" in result.stdout
    assert result.stderr == ""


def test_run_json_is_ndjson_of_semantic_events_then_the_result(project: Project) -> None:
    result, documents = project.json("run", "payer", "hello")
    assert result.exit_code == 0
    kinds = [d["kind"] for d in documents]
    assert kinds[-1] == "result" and set(kinds[:-1]) == {"event"}
    types = [d["event"]["type"] for d in documents[:-1]]
    assert types[0] == "run.started" and "text.delta" in types and "terminal" in types
    text = "".join(
        d["event"]["data"]["delta"] for d in documents[:-1] if d["event"]["type"] == "text.delta"
    )
    final = documents[-1]
    assert final["status"] == "completed" and final["exitCode"] == 0
    assert final["output"] == text == "You said: hello (message 1)"
    assert {d["event"]["runId"] for d in documents[:-1]} == {final["runId"]}


def test_surface_redaction_reaches_the_terminal_and_json(project: Project) -> None:
    plain = project.invoke("run", "payer", "tell me the secret")
    assert "sk-proj-ABCDEFGHIJKLMNOPQRST1234" not in plain.stdout
    assert "[REDACTED]" in plain.stdout
    _, documents = project.json("run", "payer", "tell me the secret")
    assert "sk-proj-ABCDEFGHIJKLMNOPQRST1234" not in str(documents)
    assert last(documents, "result")["output"] == "the key is [REDACTED] ok"


def test_read_tool_runs_without_approval(project: Project) -> None:
    result = project.invoke("run", "payer", "look it up")
    assert result.exit_code == 0
    assert "[tool] lookup" in result.stdout and "-> ok" in result.stdout
    assert "Looked it up: result for weather." in result.stdout


def test_interrupt_prints_the_run_id_and_exits_3_then_resume_pays_once(project: Project) -> None:
    paused = project.invoke("run", "payer", "please pay INV-42", "--interrupt")
    assert paused.exit_code == ExitCode.INTERRUPTED == 3
    run_id = paused.stdout.strip().splitlines()[-1]
    assert "[approval required] send_payment (call_pay)" in paused.stdout
    assert f"actoviq resume {run_id} --approve call_pay" in paused.stderr
    assert project.ledger() == []

    resumed = project.invoke("resume", run_id, "--approve", "call_pay")
    assert resumed.exit_code == 0, resumed.output
    assert "Invoice INV-42 is paid." in resumed.stdout
    assert project.ledger() == ["pay INV-42 1250"]

    again = project.invoke("resume", run_id, "--approve", "call_pay")
    assert again.exit_code == ExitCode.REFUSED == 5
    assert again.stderr.startswith("actoviq: error[RUN_STATE_STALE]:")
    assert len(again.stderr.strip().splitlines()) == 1
    assert project.ledger() == ["pay INV-42 1250"]


def test_non_interactive_run_without_a_flag_leaves_the_run_paused(project: Project) -> None:
    paused = project.invoke("run", "payer", "pay it")  # stdin is not a terminal here
    assert paused.exit_code == 3
    assert project.ledger() == []


def test_json_interrupt_and_resume_by_tool_name(project: Project) -> None:
    paused, documents = project.json("run", "payer", "please pay", "--interrupt")
    assert paused.exit_code == 3
    result = last(documents, "result")
    assert result["status"] == "interrupted" and result["exitCode"] == 3
    (waiting,) = result["interruptions"]
    assert waiting == {
        "id": f"{result['runId']}:call_pay",
        "kind": "approval",
        "reason": 'Tool "send_payment" requires approval.',
        "callId": "call_pay",
        "toolName": "send_payment",
    }
    resumed, documents = project.json("resume", result["runId"], "--approve", "send_payment")
    assert resumed.exit_code == 0
    assert last(documents, "result")["output"] == "Invoice INV-42 is paid."
    assert project.ledger() == ["pay INV-42 1250"]


def test_reject_on_resume_runs_nothing(project: Project) -> None:
    run_id = project.invoke("run", "payer", "pay", "--interrupt").stdout.strip().splitlines()[-1]
    rejected = project.invoke("resume", run_id, "--reject", "all", "--reason", "not today")
    assert rejected.exit_code == 0
    assert "[tool] send_payment -> rejected" in rejected.stdout
    assert project.ledger() == []


@pytest.mark.parametrize(("flag", "ledger"), [("--approve", 1), ("--reject", 0)])
def test_run_approve_and_reject_flags_decide_without_asking(
    project: Project, flag: str, ledger: int
) -> None:
    result = project.invoke("run", "payer", "please pay", flag)
    assert result.exit_code == 0
    assert len(project.ledger()) == ledger


def test_interactive_prompt_y_n_always(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("actoviq.cli.cmd_run.interactive", lambda output: True)  # pyright: ignore[reportUnknownLambdaType, reportUnknownArgumentType]
    answered = project.invoke("run", "payer", "please pay", input="always\n")
    assert answered.exit_code == 0, answered.output
    assert "Approve send_payment (call_pay)" in answered.stderr
    assert "[y/N/always]" in answered.stderr
    assert project.ledger() == ["pay INV-42 1250"]
    declined = project.invoke("run", "payer", "please pay", input="\n")  # default is No
    assert declined.exit_code == 0
    assert "-> rejected" in declined.stdout
    assert project.ledger() == ["pay INV-42 1250"]


def test_resume_errors_are_typed_one_liners(project: Project) -> None:
    missing = project.invoke("resume", "no-such-run", "--approve", "all")
    assert missing.exit_code == ExitCode.NOT_FOUND == 4
    assert missing.stderr.startswith("actoviq: error[CLI_NOT_FOUND]:")
    run_id = project.invoke("run", "payer", "pay", "--interrupt").stdout.strip().splitlines()[-1]
    wrong = project.invoke("resume", run_id, "--approve", "call_nope")
    assert wrong.exit_code == 2
    assert "matches no open interruption (open: call_pay" in wrong.stderr
    undecided = project.invoke("resume", run_id)
    assert undecided.exit_code == 2
    assert "Decide with --approve/--reject" in undecided.stderr
    assert project.ledger() == []


def test_prompt_from_stdin_and_empty_stdin(project: Project) -> None:
    result = project.invoke("run", "payer", "-", input="from a pipe\n")
    assert "You said: from a pipe" in result.stdout
    empty = project.invoke("run", "payer", "-", input="  \n")
    assert empty.exit_code == 2 and "error[CLI_USAGE]" in empty.stderr


def test_module_agent_plain_function_tool_and_model_override(project: Project) -> None:
    result = project.invoke("run", "cli_test_tools:coder", "hi", "--model", "scripted:other")
    assert result.exit_code == 0, result.output
    assert "You said: hi" in result.stdout
    configured = project.invoke("run", "coder", "hi")
    assert configured.exit_code == 0


def test_builtin_assistant_needs_a_model_from_somewhere(project: Project) -> None:
    project.write_config("")
    missing = project.invoke("run", "assistant", "hi")
    assert missing.exit_code == 2
    assert "has no model: pass --model provider:model" in missing.stderr
    ok = project.invoke("run", "assistant", "hi", "--model", "scripted:x")
    assert ok.exit_code == 0 and "You said: hi" in ok.stdout


def test_errors_are_one_line_without_traceback_unless_debug(project: Project) -> None:
    unknown = project.invoke("run", "nobody", "hi")
    assert unknown.exit_code == 2
    assert unknown.stderr.count("\n") == 1
    assert "Unknown agent 'nobody'" in unknown.stderr and "Traceback" not in unknown.stderr
    debug = project.invoke("--debug", "run", "nobody", "hi")
    assert "Traceback" in debug.stderr and debug.exit_code == 2
    bad_ref = project.invoke("run", "cli_test_tools:not_an_agent", "hi")
    assert bad_ref.exit_code == 2 and "error[CLI_REFERENCE_INVALID]" in bad_ref.stderr
    bad_import = project.invoke("run", "no_such_module:agent", "hi")
    assert bad_import.exit_code == 2 and "Cannot import 'no_such_module'" in bad_import.stderr


def test_missing_key_names_the_variable_and_the_offline_model(project: Project) -> None:
    result, documents = project.json("run", "payer", "hi", "--model", "openai-responses:gpt-4.1")
    assert result.exit_code == 2
    error = last(documents, "error")["error"]
    assert error["code"] == "CLI_PROVIDER_KEY_MISSING"
    assert "OPENAI_API_KEY" in error["message"] and "--model scripted:demo" in error["message"]
    bare = project.invoke("run", "payer", "hi", "--model", "gpt-4.1")
    assert bare.exit_code == 2 and "must be 'provider:model'" in bare.stderr


def test_usage_errors_are_json_documents_with_json(project: Project) -> None:
    result, documents = project.json("run", "payer")  # PROMPT missing
    assert result.exit_code == 2
    assert last(documents, "error")["error"]["code"] == "CLI_USAGE"
    assert project.invoke("run", "payer").exit_code == 2  # Click's own usage message


def test_json_after_the_command_works_too(project: Project) -> None:
    result = project.invoke("run", "payer", "hi", "--json")
    lines = result.stdout.splitlines()
    assert result.exit_code == 0 and lines and all(line.startswith("{") for line in lines)


def test_run_on_a_session_keeps_history(project: Project) -> None:
    first = project.invoke("run", "payer", "one", "--session", "s1")
    second = project.invoke("run", "payer", "two", "--session", "s1")
    assert "(message 1)" in first.stdout and "(message 2)" in second.stdout
