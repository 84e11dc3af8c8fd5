"""``actoviq inspect models|middleware|services|agent``."""

from __future__ import annotations

import asyncio

import pytest
from cli_testkit import Project, last

from actoviq.cli.agents import resolve_agent, setup_agent
from actoviq.cli.config import load_settings
from actoviq.providers import ModelRegistry
from actoviq.runtime import AgentRuntime


def test_inspect_models_lists_providers_and_why_not(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.write_config(
        '[providers.local]\nkind = "openai-chat"\nbase_url = "http://127.0.0.1:9/v1"\n'
    )
    _result, documents = project.json("inspect", "models")
    providers = {p["id"]: p for p in last(documents, "inspect.models")["providers"]}
    assert providers["scripted"]["available"] is True
    assert providers["openai-responses"] == {
        "id": "openai-responses",
        "kind": "openai-responses",
        "configured": False,
        "available": False,
        "keyVariable": "OPENAI_API_KEY",
        "hint": "set OPENAI_API_KEY",
    }
    assert providers["local"]["available"] is True  # a local server needs no key
    assert providers["local"]["baseUrl"] == "http://127.0.0.1:9/v1"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    _, documents = project.json("inspect", "models")
    providers = {p["id"]: p for p in last(documents, "inspect.models")["providers"]}
    assert providers["anthropic"]["available"] is True
    table = project.invoke("inspect", "models")
    assert "openai-responses" in table.stdout and "set OPENAI_API_KEY" in table.stdout


def test_inspect_one_model_capabilities(project: Project) -> None:
    _result, documents = project.json("inspect", "models", "scripted:demo")
    model = last(documents, "inspect.model")
    assert model["provider"] == "scripted"
    assert model["capabilities"]["tools"]["function"] is True
    text = project.invoke("inspect", "models", "scripted:demo")
    assert "tools.function" in text.stdout and "streaming" in text.stdout


def test_inspect_middleware_order_stages_priorities(project: Project) -> None:
    _result, documents = project.json("inspect", "middleware")
    runtime = last(documents, "inspect.middleware")
    assert runtime["registry"] == ["audit"]
    assert [(m["name"], m["stage"], m["priority"]) for m in runtime["middleware"]] == [
        ("timing", "wrapModelCall", 10)
    ]
    _, documents = project.json("inspect", "middleware", "payer")
    chain = last(documents, "inspect.middleware")["middleware"]
    assert [(m["name"], m["stage"], m["priority"], m["chainIndex"]) for m in chain] == [
        ("timing", "wrapModelCall", 10, 0),
        ("audit-model", "wrapModelCall", 20, 1),
        ("audit-tool", "wrapToolCall", 5, 0),
    ]
    text = project.invoke("inspect", "middleware", "payer")
    assert "audit-tool" in text.stdout and "wrapToolCall" in text.stdout


def test_inspect_services_initialises_nothing(project: Project) -> None:
    _result, documents = project.json("inspect", "services")
    services = last(documents, "inspect.services")
    assert services["services"] == [
        {
            "id": "sessions",
            "initialized": False,
            "pending": False,
            "description": "SQL sessions (actoviq-storage-sqlite)",
        }
    ]
    assert services["storage"].endswith(".actoviq/actoviq.db")
    assert not (project.root / ".actoviq" / "actoviq.db").exists()


def test_inspect_agent_digest_is_the_runtimes(project: Project) -> None:
    _result, documents = project.json("inspect", "agent", "payer")
    agent = last(documents, "inspect.agent")
    settings = load_settings()
    resolved = resolve_agent(settings, "payer")
    setup = setup_agent(settings, resolved)

    async def digest() -> str:
        async with AgentRuntime(models=ModelRegistry(), tools=setup.tools) as runtime:
            return runtime.agent_digest(resolved.spec)

    assert agent["digest"] == asyncio.run(digest())
    assert agent["model"] == "scripted:test" and agent["source"] == "config"
    tools = {t["name"]: t for t in agent["tools"]}
    assert set(tools) == {"send_payment", "lookup"}
    assert tools["send_payment"]["requiresApproval"] is True
    assert tools["send_payment"]["effect"] == "side-effect"
    assert tools["send_payment"]["timeoutMs"] == 30_000
    assert tools["lookup"]["effect"] == "read"
    assert agent["declaration"]["middleware"] == ["audit"]
    other = project.invoke("--json", "inspect", "agent", "payer", "--model", "scripted:other")
    assert '"model":"scripted:other"' in other.stdout
    assert agent["digest"] not in other.stdout  # the model is part of the digest
    text = project.invoke("inspect", "agent", "cli_test_tools:coder")
    assert "shout" in text.stdout and "sha256v1:" in text.stdout
