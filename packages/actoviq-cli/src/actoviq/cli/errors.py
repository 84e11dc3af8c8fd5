"""Typed errors of the ``actoviq`` command and how any error becomes one line and an exit code.

Every error the command reports is printed as ``actoviq: error[CODE]: message`` on one line (a
traceback only with ``--debug``); :func:`exit_code_for` maps SDK errors to :class:`ExitCode`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from actoviq.cli.exit_codes import ExitCode
from actoviq.core import ActoviqError

__all__ = [
    "CliConfigError",
    "CliError",
    "CliExtraMissingError",
    "CliNotFoundError",
    "CliReferenceError",
    "CliUsageError",
    "ProviderKeyMissingError",
    "error_document",
    "exit_code_for",
    "one_line",
]


class CliError(ActoviqError):
    """Root of the command's own errors; ``exit_code`` is the process status it ends with."""

    default_code: ClassVar[str] = "CLI_ERROR"
    exit_code: ClassVar[ExitCode] = ExitCode.FAILED


class CliUsageError(CliError, ValueError):
    """Arguments that do not fit (an unknown interruption, conflicting options)."""

    default_code: ClassVar[str] = "CLI_USAGE"
    exit_code: ClassVar[ExitCode] = ExitCode.USAGE


class CliConfigError(CliError, ValueError):
    """``actoviq.toml`` (or ``--config``) is unreadable or holds an invalid value.

    ``details`` name the file and the key when known.
    """

    default_code: ClassVar[str] = "CLI_CONFIG_INVALID"
    exit_code: ClassVar[ExitCode] = ExitCode.USAGE

    def __init__(self, message: str, *, path: str | None = None, key: str | None = None) -> None:
        details: dict[str, Any] = {}
        if path is not None:
            details["path"] = path
        if key is not None:
            details["key"] = key
        where = f"{path}: " if path else ""
        where += f"{key}: " if key else ""
        super().__init__(where + message, details=details or None)


class CliReferenceError(CliError, ValueError):
    """A ``module:attribute`` reference could not be imported or has the wrong type."""

    default_code: ClassVar[str] = "CLI_REFERENCE_INVALID"
    exit_code: ClassVar[ExitCode] = ExitCode.USAGE


class CliNotFoundError(CliError, LookupError):
    """The named session, run, checkpoint or agent does not exist."""

    default_code: ClassVar[str] = "CLI_NOT_FOUND"
    exit_code: ClassVar[ExitCode] = ExitCode.NOT_FOUND


class ProviderKeyMissingError(CliError):
    """A real provider was asked for but its API key variable is not set.

    The message names the variable and the offline alternative (``--model scripted:demo``).
    """

    default_code: ClassVar[str] = "CLI_PROVIDER_KEY_MISSING"
    exit_code: ClassVar[ExitCode] = ExitCode.USAGE

    def __init__(self, provider_id: str, variable: str) -> None:
        super().__init__(
            f"Provider {provider_id!r} needs an API key: set {variable} "
            "(or run offline with --model scripted:demo).",
            details={"provider": provider_id, "variable": variable},
        )
        self.variable = variable


class CliExtraMissingError(CliError):
    """A feature needs an optional extra that is not installed; the message has the pip line."""

    default_code: ClassVar[str] = "CLI_EXTRA_MISSING"
    exit_code: ClassVar[ExitCode] = ExitCode.USAGE

    def __init__(self, feature: str, extra: str, missing: str) -> None:
        super().__init__(
            f"{feature} needs the {extra!r} extra ({missing} is not installed): "
            f"pip install 'actoviq-cli[{extra}]'",
            details={"extra": extra, "missing": missing},
        )
        self.extra = extra


_BY_CODE: Mapping[str, ExitCode] = {
    "RUN_STATE_STALE": ExitCode.REFUSED,
    "RUN_CLAIM_LOST": ExitCode.REFUSED,
    "RUN_ALREADY_ACTIVE": ExitCode.REFUSED,
    "SESSION_REVISION_CONFLICT": ExitCode.REFUSED,
    "STORAGE_CONFLICT": ExitCode.REFUSED,
    "STORAGE_NOT_FOUND": ExitCode.NOT_FOUND,
    "RUN_CANCELLED": ExitCode.CANCELLED,
    "AGENT_SPEC_INVALID": ExitCode.USAGE,
    "MODEL_REF_INVALID": ExitCode.USAGE,
    "MODEL_REGISTRY_ERROR": ExitCode.USAGE,
    "AGENT_NOT_REGISTERED": ExitCode.USAGE,
    "AGENT_CONFIG_MISMATCH": ExitCode.USAGE,
}
_USAGE_NAMES: Sequence[str] = (
    "MiddlewareConfigurationError",
    "MiddlewarePriorityConflictError",
    "MiddlewareRegistryError",
    "ToolDefinitionError",
    "ToolRegistryError",
    "InterruptionDecisionError",
    "ReconciliationDecisionError",
    "AgentRegistrationError",
    "ModelOwnershipError",
)


def exit_code_for(error: BaseException) -> ExitCode:
    """The exit status an error ends the command with (see :class:`ExitCode`)."""
    if isinstance(error, CliError):
        return error.exit_code
    if isinstance(error, KeyboardInterrupt):
        return ExitCode.CANCELLED
    if isinstance(error, ActoviqError):
        by_code = _BY_CODE.get(error.code)
        if by_code is not None:
            return by_code
        if any(cls.__name__ in _USAGE_NAMES for cls in type(error).__mro__):
            return ExitCode.USAGE
    return ExitCode.FAILED


def _redact(text: str) -> str:
    from actoviq.events import redact_text

    return redact_text(text)


def _code_and_message(error: BaseException) -> tuple[str, str]:
    if isinstance(error, ActoviqError):
        code, message = error.code, error.message
    elif isinstance(error, KeyboardInterrupt):
        code, message = "CANCELLED", "Cancelled."
    else:
        code = "INTERNAL"
        message = f"{type(error).__name__}: {error} (run with --debug for the traceback)"
    return code, " ".join(_redact(str(message)).split())


def one_line(error: BaseException) -> str:
    """``error[CODE]: message`` on one line, redacted (keys and tokens never reach a terminal)."""
    code, message = _code_and_message(error)
    return f"error[{code}]: {message}"


def error_document(error: BaseException) -> dict[str, Any]:
    """The ``--json`` form: ``{kind: "error", error: {name, code, message, ...}, exitCode}``."""
    code, message = _code_and_message(error)
    body: dict[str, Any] = {"name": type(error).__name__, "code": code, "message": message}
    if isinstance(error, ActoviqError):
        body["retryable"] = error.retryable
        if error.details:
            from actoviq.events import redact_value

            body["details"] = redact_value(dict(error.details))
    return {"kind": "error", "error": body, "exitCode": int(exit_code_for(error))}
