"""``actoviq chat --json`` through Click's runner: lines on stdin, schema-checked documents out."""

from __future__ import annotations

import json
from typing import Any

from cli_testkit import ITEM_VALIDATOR, Project, last


def test_chat_commands_as_json_documents(project: Project) -> None:
    lines = [
        "hello",
        "/usage",
        "/save saved.jsonl",
        "/history",
        "/reset",
        "after the reset",
        "/nonsense",
        "/exit",
        "never read",
    ]
    result, documents = project.json(
        "chat", "payer", "--session", "j", input="\n".join(lines) + "\n"
    )
    assert result.exit_code == 0, result.stderr

    outputs = [d["output"] for d in documents if d["kind"] == "result"]
    assert outputs == ["You said: hello (message 1)", "You said: after the reset (message 1)"]

    usage = last(documents, "usage")
    assert usage["sessionId"] == "j"
    assert usage["chat"]["runs"] == 1 and usage["session"]["runs"] == 1
    assert usage["chat"]["usage"]["requests"] == 1

    saved = last(documents, "session.saved")
    assert saved["items"] == 2 and saved["path"].endswith("saved.jsonl")
    written = [
        json.loads(line) for line in (project.root / "saved.jsonl").read_text("utf-8").splitlines()
    ]
    for item in written:
        ITEM_VALIDATOR.validate(item)
    assert [i["text"] for i in written] == ["hello", "You said: hello (message 1)"]

    history = last(documents, "session.history")["items"]
    assert history == written
    assert last(documents, "session.reset")["hidden"] == 2

    # The reset hides the history from the model; the journal (sessions export) keeps it all.
    _, shown = project.json("sessions", "show", "j")
    transcript = last(shown, "session")["transcript"]
    assert [i["text"] for i in transcript] == [
        "after the reset",
        "You said: after the reset (message 1)",
    ]
    unknown = last(documents, "error")
    assert unknown["error"]["code"] == "CLI_USAGE" and "/nonsense" in unknown["error"]["message"]
    assert "never read" not in result.stdout  # nothing is read after /exit


def test_every_document_of_the_schema_has_its_own_kind() -> None:
    from actoviq.cli import cli_output_json_schema

    schema: Any = cli_output_json_schema()
    kinds: list[str] = []
    for choice in schema["oneOf"]:
        name = choice["$ref"].removeprefix("#/$defs/")
        kinds.append(schema["$defs"][name]["properties"]["kind"]["const"])
    assert len(kinds) == len(set(kinds))
    assert {"event", "result", "error", "usage", "session.saved", "session.reset"} <= set(kinds)
