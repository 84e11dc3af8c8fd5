"""Configuration, references, the scripted provider and provider selection."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_testkit import Project

from actoviq.cli import CliConfigError, CliExtraMissingError, ProviderKeyMissingError
from actoviq.cli.config import load_settings
from actoviq.cli.errors import CliReferenceError, CliUsageError, exit_code_for, one_line
from actoviq.cli.loading import is_reference, load_reference
from actoviq.cli.models import build_registry, provider_id_of
from actoviq.cli.scripted import load_script, select_turn
from actoviq.core import TextItem, ToolCallItem, ToolResultItem
from actoviq.providers import ModelRequest


def _write(root: Path, text: str) -> Path:
    path = root / "actoviq.toml"
    path.write_text(text, "utf-8")
    return path


@pytest.mark.parametrize(
    ("text", "key", "fragment"),
    [
        ("modle = 'x'", "modle", "unknown key"),
        ("tools = 'a:b'", "tools", "list of non-empty strings"),
        ("[agents.a]\nname = 'A'", "agents.a.instructions", "required"),
        ("[agents.a]\ninstructions = 'x'\ncolor = 1", "agents.a.color", "unknown key"),
        ("[agents.a]\nspec = 'm:a'\nname = 'A'", "agents.a.name", "takes only spec and model"),
        ("[providers.p]\nkind = 'bogus'", "providers.p.kind", "unknown provider kind"),
        (
            "[providers.p]\nkind = 'openai-chat'\ntimeout = -1",
            "providers.p.timeout",
            "non-negative",
        ),
        ("[middleware_registry]\nx = 'nocolon'", "middleware_registry.x", "module:attribute"),
        ("show_reasoning = 'yes'", "show_reasoning", "true or false"),
        ("lease_seconds = 0.1", "lease_seconds", "between 0.5 and 86400"),
        ("lease_seconds = '30'", "lease_seconds", "non-negative number"),
    ],
)
def test_bad_values_name_the_file_and_the_key(
    tmp_path: Path, text: str, key: str, fragment: str
) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(CliConfigError) as caught:
        load_settings(cwd=tmp_path, environ={})
    assert caught.value.details == {"path": str(path), "key": key}
    assert fragment in caught.value.message
    assert exit_code_for(caught.value) == 2
    assert one_line(caught.value).startswith("error[CLI_CONFIG_INVALID]: " + str(path))


def test_not_toml_and_missing_explicit_file(tmp_path: Path) -> None:
    _write(tmp_path, "model = ")
    with pytest.raises(CliConfigError, match="not valid TOML"):
        load_settings(cwd=tmp_path, environ={})
    with pytest.raises(CliConfigError, match="configuration file not found"):
        load_settings(tmp_path / "nope.toml", cwd=tmp_path, environ={})


def test_nearest_file_paths_and_overrides(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "model = 'scripted:a'\nstorage = 'data/x.db'\nhistory = 'h.txt'\n"
        "[agents.a]\ninstructions_file = 'prompt.md'\n",
    )
    (tmp_path / "prompt.md").write_text("Be brief.", "utf-8")
    nested = tmp_path / "src" / "deep"
    nested.mkdir(parents=True)
    settings = load_settings(cwd=nested, environ={})
    assert settings.path == tmp_path / "actoviq.toml" and settings.root == tmp_path
    assert settings.storage == str(tmp_path / "data" / "x.db")
    assert settings.history == tmp_path / "h.txt"
    assert settings.agents["a"].instructions == "Be brief."
    env = load_settings(cwd=nested, environ={"ACTOVIQ_DB": "other.db", "ACTOVIQ_MODEL": "x:y"})
    assert env.storage == str(nested / "other.db") and env.model == "scripted:a"
    flag = load_settings(cwd=nested, db="postgresql+asyncpg://u@h/db", environ={})
    assert flag.storage == "postgresql+asyncpg://u@h/db"
    explicit = load_settings(str(tmp_path / "actoviq.toml"), cwd=Path("/"), environ={})
    assert explicit.root == tmp_path
    bare = load_settings(cwd=Path("/"), environ={"ACTOVIQ_MODEL": "scripted:m"})
    assert bare.path is None and bare.model == "scripted:m"


def test_references(tmp_path: Path) -> None:
    assert (
        is_reference("a.b:c.d") and not is_reference("openai-chat:gpt-4") and not is_reference("x")
    )
    (tmp_path / "refmod.py").write_text("class K:\n    value = 3\n", "utf-8")
    assert load_reference("refmod:K.value", "thing", roots=(tmp_path,)) == 3
    with pytest.raises(CliReferenceError, match=r"has no attribute 'K\.nope'"):
        load_reference("refmod:K.nope", "thing", roots=(tmp_path,))
    with pytest.raises(CliReferenceError, match="must look like"):
        load_reference("not a ref", "thing")
    (tmp_path / "broken_mod.py").write_text("raise RuntimeError('boom')\n", "utf-8")
    with pytest.raises(CliReferenceError, match="RuntimeError: boom"):
        load_reference("broken_mod:x", "thing", roots=(tmp_path,))


def _request(*items: object) -> ModelRequest:
    return ModelRequest(model="scripted:m", input=items)


def test_scripted_turns_follow_the_transcript_not_a_counter(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(
        json.dumps(
            {
                "turns": [
                    {"match": "pay", "toolCalls": [{"name": "send", "input": {"a": 1}}]},
                    {"match": "pay", "text": "paid", "usage": {"inputTokens": 7}},
                    {"text": "generic"},
                ]
            }
        ),
        "utf-8",
    )
    turns = load_script(script)
    user = TextItem(role="user", text="please PAY")
    first = select_turn(turns, _request(user))
    assert [c.name for c in first.tool_calls] == ["send"] and first.tool_calls[0].id == "call_0"
    call = ToolCallItem(id="call_0", name="send", input={"a": 1})
    result = ToolResultItem(call_id="call_0", status="success", output="ok")
    second = select_turn(turns, _request(user, call, result))
    assert second.text == "paid" and second.usage == {"inputTokens": 7}
    third = select_turn(
        turns, _request(user, call, result, TextItem(role="assistant", text="paid"))
    )
    assert third.text == "generic"  # a turn without match is a candidate for every message
    rounds = (user, call, result, call, result, call, result)  # three answers so far
    fourth = select_turn(turns, _request(*rounds))
    assert fourth.text == "You said: please PAY (message 1)"  # past the script: the echo
    # an earlier exchange in the history does not shift the position of the new message
    history = (TextItem(role="user", text="hi"), TextItem(role="assistant", text="x"))
    other = select_turn(turns, _request(*history, TextItem(role="user", text="hello")))
    assert other.text == "generic" and other.usage is not None  # estimated usage
    echo = select_turn((), _request(*history, TextItem(role="user", text="again")))
    assert echo.text == "You said: again (message 2)"
    assert "".join(echo.stream_deltas or ()) == echo.text


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("{", "cannot read the script"),
        ('{"turns": 3}', "a script is a list of turns"),
        ('[{"txt": "x"}]', "unknown turn key 'txt'"),
        ('[{"match": "("}]', "invalid turn"),
        ('[{"toolCalls": [{"input": {}}]}]', "invalid turn"),
    ],
)
def test_bad_scripts_are_config_errors(tmp_path: Path, content: str, fragment: str) -> None:
    script = tmp_path / "s.json"
    script.write_text(content, "utf-8")
    with pytest.raises(CliConfigError, match=fragment.replace("(", r"\(")):
        load_script(script)


def test_provider_selection(tmp_path: Path) -> None:
    with pytest.raises(CliUsageError, match="must be 'provider:model'"):
        provider_id_of("gpt-4.1")
    settings = load_settings(cwd=tmp_path, environ={})
    with pytest.raises(CliUsageError, match="Unknown model provider 'nope'"):
        build_registry(settings, ["nope:m"], environ={})
    with pytest.raises(ProviderKeyMissingError) as missing:
        build_registry(settings, ["anthropic:claude"], environ={})
    assert missing.value.variable == "ANTHROPIC_API_KEY"
    assert "--model scripted:demo" in missing.value.message
    registry = build_registry(
        settings, ["openai-chat:m", "scripted:x"], environ={"OPENAI_API_KEY": "k"}
    )
    assert [p.id for p in registry.list()] == ["openai-chat", "scripted"]


def test_missing_sdk_extra_names_the_pip_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "actoviq.providers.anthropic", None)
    settings = load_settings(cwd=tmp_path, environ={})
    with pytest.raises(CliExtraMissingError) as caught:
        build_registry(settings, ["anthropic:c"], environ={"ANTHROPIC_API_KEY": "k"})
    assert "pip install 'actoviq-cli[anthropic]'" in caught.value.message


def test_factory_provider_and_secrets_stay_out_of_messages(project: Project) -> None:
    (project.root / "myproviders.py").write_text(
        "from actoviq.providers.testing import ScriptedProvider\n"
        "def make():\n"
        "    return ScriptedProvider(['from the factory'], id='mine', repeat_last=True)\n",
        "utf-8",
    )
    project.write_config("[providers.mine]\nfactory = 'myproviders:make'\n")
    result = project.invoke("run", "assistant", "hi", "--model", "mine:any")
    assert result.exit_code == 0 and "from the factory" in result.stdout
    error = CliUsageError("bad key sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX1234 here")
    assert "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX1234" not in one_line(error)
