"""actoviq.cli: the ``actoviq`` command (run, chat, resume, sessions, migrate, inspect, serve).

Importing this package is cheap: every name below loads its module on first access, so the
console script starts with Click alone and each command imports only what it uses.

Example:
    >>> from actoviq.cli import ExitCode
    >>> int(ExitCode.INTERRUPTED)
    3
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from actoviq.cli.app import cli
    from actoviq.cli.checkpoints import DeferredCheckpointStore
    from actoviq.cli.config import CliSettings, load_settings
    from actoviq.cli.errors import (
        CliConfigError,
        CliError,
        CliExtraMissingError,
        CliNotFoundError,
        CliReferenceError,
        CliUsageError,
        ProviderKeyMissingError,
    )
    from actoviq.cli.exit_codes import ExitCode
    from actoviq.cli.main import main
    from actoviq.cli.schema import cli_output_json_schema
    from actoviq.cli.scripted import scripted_provider

__all__ = [
    "CliConfigError",
    "CliError",
    "CliExtraMissingError",
    "CliNotFoundError",
    "CliReferenceError",
    "CliSettings",
    "CliUsageError",
    "DeferredCheckpointStore",
    "ExitCode",
    "ProviderKeyMissingError",
    "cli",
    "cli_output_json_schema",
    "load_settings",
    "main",
    "scripted_provider",
]

_HOMES: Final[dict[str, str]] = {
    "cli": "app",
    "DeferredCheckpointStore": "checkpoints",
    "CliSettings": "config",
    "load_settings": "config",
    "CliConfigError": "errors",
    "CliError": "errors",
    "CliExtraMissingError": "errors",
    "CliNotFoundError": "errors",
    "CliReferenceError": "errors",
    "CliUsageError": "errors",
    "ProviderKeyMissingError": "errors",
    "ExitCode": "exit_codes",
    "main": "main",
    "cli_output_json_schema": "schema",
    "scripted_provider": "scripted",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'actoviq.cli' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"actoviq.cli.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
