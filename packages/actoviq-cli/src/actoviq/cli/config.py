"""``actoviq.toml``: the project configuration of the ``actoviq`` command.

The file is found with ``--config FILE``, else ``$ACTOVIQ_CONFIG``, else the nearest
``actoviq.toml`` in the working directory or a parent. Paths in it are relative to its folder.
Every key is checked: an unknown key or a wrong type is a :class:`CliConfigError` naming the file
and the key. API keys are never written here: a provider names the environment variable.

Example ``actoviq.toml``::

    model = "openai-responses:gpt-4.1-mini"     # agents without a model use it
    storage = ".actoviq/actoviq.db"             # or "postgresql+asyncpg://…"
    lease_seconds = 30                          # a crashed run can be resumed after this
    tools = ["myapp.tools:lookup", "myapp.tools:send_email"]

    [providers.local]                           # an OpenAI-compatible server
    kind = "openai-chat"
    base_url = "http://127.0.0.1:8080/v1"
    api_key_env = "LOCAL_API_KEY"

    [agents.support]
    name = "Support"
    instructions = "Answer briefly; look things up first."
    tools = ["lookup", "send_email"]

    [agents.planner]
    spec = "myapp.agents:planner"               # an AgentSpec in your code
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, cast

import attrs

from actoviq.cli.errors import CliConfigError

__all__ = [
    "CONFIG_FILENAME",
    "PROVIDER_KINDS",
    "AgentSettings",
    "CliSettings",
    "ProviderSettings",
    "find_config",
    "load_settings",
]

CONFIG_FILENAME: Final = "actoviq.toml"
PROVIDER_KINDS: Final = ("scripted", "openai-responses", "openai-chat", "anthropic")
"""Provider kinds the command builds itself (``factory`` adds any other)."""

_TOP_KEYS: Final = frozenset(
    {
        "model",
        "storage",
        "tenant",
        "tools",
        "middleware",
        "middleware_registry",
        "providers",
        "agents",
        "history",
        "show_reasoning",
        "lease_seconds",
    }
)
_PROVIDER_KEYS: Final = frozenset(
    {"kind", "base_url", "api_key_env", "factory", "script", "timeout", "max_retries"}
)
_AGENT_KEYS: Final = frozenset(
    {
        "spec",
        "name",
        "description",
        "instructions",
        "instructions_file",
        "model",
        "tools",
        "middleware",
        "limits",
        "metadata",
    }
)


@attrs.frozen(kw_only=True, slots=True)
class ProviderSettings:
    """One ``[providers.<id>]`` table (or a built-in provider used by name).

    Attributes:
        id: the provider id models are routed by (``<id>:<model>``).
        kind: one of :data:`PROVIDER_KINDS` (unused when ``factory`` is set).
        base_url: API root (e.g. an OpenAI-compatible server).
        api_key_env: the environment variable holding the key (default per kind).
        factory: ``module:callable`` returning a ``ModelProvider`` (called with no arguments).
        script: a scripted-provider script file (JSON), for ``kind = "scripted"``.
        timeout: SDK timeout in seconds.
        max_retries: SDK retries.
    """

    id: str
    kind: str
    base_url: str | None = None
    api_key_env: str | None = None
    factory: str | None = None
    script: Path | None = None
    timeout: float | None = None
    max_retries: int | None = None


@attrs.frozen(kw_only=True, slots=True)
class AgentSettings:
    """One ``[agents.<id>]`` table: either ``spec = "module:attribute"`` or a declaration."""

    id: str
    spec: str | None = None
    name: str | None = None
    description: str | None = None
    instructions: str | None = None
    model: str | None = None
    tools: tuple[str, ...] = ()
    middleware: tuple[str, ...] = ()
    limits: Mapping[str, Any] | None = None
    metadata: Mapping[str, Any] | None = None


@attrs.frozen(kw_only=True, slots=True)
class CliSettings:
    """Everything the command needs from the configuration (defaults without a file).

    Attributes:
        path: the configuration file, or None.
        root: the project folder (the file's folder, else the working directory); module
            references are imported with it on ``sys.path``.
        model: the default model (``$ACTOVIQ_MODEL`` when unset).
        storage: SQLite path or SQLAlchemy async URL (``--db`` and ``$ACTOVIQ_DB`` override).
        tenant: the storage tenant.
        tools: ``module:function`` references registered with every runtime.
        middleware: ``module:attribute`` runtime middleware (definitions or lists of them).
        middleware_registry: id → ``module:attribute`` for agents' middleware references.
        providers: configured providers by id.
        agents: configured agents by id.
        history: the chat line-history file.
        show_reasoning: show reasoning text in the terminal.
        lease_seconds: how long a run's claim outlives a process that stopped renewing it (a
            crash): another process may resume the run after that. None: the runtime's
            default (30 s).
    """

    path: Path | None
    root: Path
    model: str | None = None
    storage: str = ".actoviq/actoviq.db"
    tenant: str = "default"
    tools: tuple[str, ...] = ()
    middleware: tuple[str, ...] = ()
    middleware_registry: Mapping[str, str] = attrs.field(factory=lambda: cast(dict[str, str], {}))
    providers: Mapping[str, ProviderSettings] = attrs.field(
        factory=lambda: cast(dict[str, ProviderSettings], {})
    )
    agents: Mapping[str, AgentSettings] = attrs.field(
        factory=lambda: cast(dict[str, AgentSettings], {})
    )
    history: Path | None = None
    show_reasoning: bool = False
    lease_seconds: float | None = None

    @property
    def label(self) -> str:
        """Where the settings came from (for messages)."""
        return str(self.path) if self.path is not None else "(no actoviq.toml)"


def find_config(start: Path) -> Path | None:
    """The nearest ``actoviq.toml`` in ``start`` or a parent, or None."""
    for folder in (start, *start.parents):
        candidate = folder / CONFIG_FILENAME
        if candidate.is_file():
            return candidate
    return None


class _Reader:
    """Typed access to one table of the file, with errors that name the file and key."""

    def __init__(self, path: Path | None, table: Mapping[str, Any], prefix: str) -> None:
        self.path = str(path) if path is not None else None
        self.table = table
        self.prefix = prefix

    def fail(self, key: str, message: str) -> CliConfigError:
        return CliConfigError(message, path=self.path, key=self.prefix + key)

    def check_keys(self, allowed: frozenset[str]) -> None:
        for key in self.table:
            if key not in allowed:
                raise self.fail(key, f"unknown key (allowed: {', '.join(sorted(allowed))})")

    def text(self, key: str) -> str | None:
        value = self.table.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.fail(key, "must be a non-empty string")
        return value.strip()

    def texts(self, key: str) -> tuple[str, ...]:
        value = self.table.get(key)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(
            isinstance(entry, str) and entry.strip() for entry in cast(list[object], value)
        ):
            raise self.fail(key, "must be a list of non-empty strings")
        return tuple(entry.strip() for entry in cast(list[str], value))

    def table_of(self, key: str) -> Mapping[str, Any]:
        value = self.table.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(key, "must be a table")
        return cast(dict[str, Any], value)

    def number(self, key: str, *, integer: bool = False) -> float | None:
        value = self.table.get(key)
        if value is None:
            return None
        ok = type(value) is int or (not integer and type(value) is float)
        if not ok or value < 0:
            raise self.fail(key, "must be a non-negative " + ("integer" if integer else "number"))
        return cast(float, value)

    def flag(self, key: str) -> bool:
        value = self.table.get(key, False)
        if type(value) is not bool:
            raise self.fail(key, "must be true or false")
        return value


def _resolve_path(root: Path, text: str) -> Path:
    path = Path(text).expanduser()
    return path if path.is_absolute() else root / path


def _storage_target(root: Path, text: str) -> str:
    if "://" in text or text == ":memory:":
        return text
    return str(_resolve_path(root, text))


def _provider(reader: _Reader, provider_id: str, root: Path) -> ProviderSettings:
    reader.check_keys(_PROVIDER_KEYS)
    factory = reader.text("factory")
    kind = reader.text("kind") or ("factory" if factory else provider_id)
    if factory is None and kind not in PROVIDER_KINDS:
        raise reader.fail(
            "kind", f"unknown provider kind {kind!r} (one of: {', '.join(PROVIDER_KINDS)})"
        )
    script = reader.text("script")
    retries = reader.number("max_retries", integer=True)
    return ProviderSettings(
        id=provider_id,
        kind=kind,
        base_url=reader.text("base_url"),
        api_key_env=reader.text("api_key_env"),
        factory=factory,
        script=_resolve_path(root, script) if script else None,
        timeout=reader.number("timeout"),
        max_retries=int(retries) if retries is not None else None,
    )


def _agent(reader: _Reader, agent_id: str, root: Path) -> AgentSettings:
    reader.check_keys(_AGENT_KEYS)
    spec = reader.text("spec")
    instructions = reader.text("instructions")
    instructions_file = reader.text("instructions_file")
    if instructions is not None and instructions_file is not None:
        raise reader.fail("instructions_file", "give instructions or instructions_file, not both")
    if instructions_file is not None:
        path = _resolve_path(root, instructions_file)
        try:
            instructions = path.read_text("utf-8")
        except OSError as error:
            raise reader.fail("instructions_file", f"cannot read {path}: {error}") from None
    if spec is not None:
        extra = sorted(set(reader.table) - {"spec", "model"})
        if extra:
            raise reader.fail(extra[0], "an agent given by spec takes only spec and model")
    elif instructions is None:
        raise reader.fail("instructions", "required (or give spec = 'module:attribute')")
    limits = reader.table_of("limits")
    metadata = reader.table_of("metadata")
    return AgentSettings(
        id=agent_id,
        spec=spec,
        name=reader.text("name"),
        description=reader.text("description"),
        instructions=instructions,
        model=reader.text("model"),
        tools=reader.texts("tools"),
        middleware=reader.texts("middleware"),
        limits=limits or None,
        metadata=metadata or None,
    )


def _read(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except OSError as error:
        raise CliConfigError(f"cannot read the configuration: {error}", path=str(path)) from None
    except tomllib.TOMLDecodeError as error:
        raise CliConfigError(f"not valid TOML: {error}", path=str(path)) from None


def load_settings(
    config: str | Path | None = None,
    *,
    db: str | None = None,
    cwd: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> CliSettings:
    """Read the configuration (see the module docstring) and apply the overrides.

    Args:
        config: an explicit file (``--config``); otherwise ``$ACTOVIQ_CONFIG`` or the nearest
            ``actoviq.toml``.
        db: ``--db`` (wins over the file and ``$ACTOVIQ_DB``).
        cwd: the working directory (default: the process's).
        environ: the environment (default: ``os.environ``).

    Raises:
        CliConfigError: the file is missing (when named), unreadable, or holds a bad value.
    """
    env = os.environ if environ is None else environ
    here = (cwd or Path.cwd()).resolve()
    named = config if config is not None else env.get("ACTOVIQ_CONFIG") or None
    if named is not None:
        path: Path | None = _resolve_path(here, str(named)).resolve()
        assert path is not None
        if not path.is_file():
            raise CliConfigError("configuration file not found", path=str(path))
    else:
        path = find_config(here)
    data = _read(path) if path is not None else {}
    root = path.parent if path is not None else here
    top = _Reader(path, data, "")
    top.check_keys(_TOP_KEYS)
    providers: dict[str, ProviderSettings] = {}
    for provider_id, table in top.table_of("providers").items():
        if not isinstance(table, dict):
            raise top.fail(f"providers.{provider_id}", "must be a table")
        reader = _Reader(path, cast(dict[str, Any], table), f"providers.{provider_id}.")
        providers[provider_id] = _provider(reader, provider_id, root)
    agents: dict[str, AgentSettings] = {}
    for agent_id, table in top.table_of("agents").items():
        if not isinstance(table, dict):
            raise top.fail(f"agents.{agent_id}", "must be a table")
        reader = _Reader(path, cast(dict[str, Any], table), f"agents.{agent_id}.")
        agents[agent_id] = _agent(reader, agent_id, root)
    registry: dict[str, str] = {}
    for group_id, ref in top.table_of("middleware_registry").items():
        if not isinstance(ref, str) or ":" not in ref:
            raise top.fail(f"middleware_registry.{group_id}", "must be 'module:attribute'")
        registry[group_id] = ref
    override = db or env.get("ACTOVIQ_DB") or None
    storage = override or top.text("storage") or ".actoviq/actoviq.db"
    history = top.text("history")
    return CliSettings(
        path=path,
        root=root,
        model=top.text("model") or env.get("ACTOVIQ_MODEL") or None,
        storage=_storage_target(here if override else root, storage),
        tenant=top.text("tenant") or "default",
        tools=top.texts("tools"),
        middleware=top.texts("middleware"),
        middleware_registry=registry,
        providers=providers,
        agents=agents,
        history=_resolve_path(root, history) if history else None,
        show_reasoning=top.flag("show_reasoning"),
        lease_seconds=_lease_seconds(top),
    )


def _lease_seconds(top: _Reader) -> float | None:
    value = top.number("lease_seconds")
    if value is not None and not 0.5 <= value <= 86_400:
        raise top.fail("lease_seconds", "must be between 0.5 and 86400 seconds")
    return value
