"""Structured output: validated against the agent's schema, sent back to the model when invalid.

A completed model response of an agent with ``output`` is checked before the run finishes: its
JSON value (the provider's structured output, else the last ``structured`` item) must match the
schema (``jsonschema``, as for tool input) and the schema's ``parse`` must accept it. When it
does not, the model is shown the validation errors (paths and messages, never the values, at
most :data:`MAX_ERRORS`) in a user message and asked again, up to the agent's
``output_retries``; each retry is a model call like any other (usage, ``max_turns`` and the usage
budget apply). Then the run fails with ``RunError`` ``STRUCTURED_OUTPUT_INVALID`` (or
``STRUCTURED_OUTPUT_MISSING`` when the model gave no JSON at all).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, cast

from actoviq.core import UNSET, JsonValue, RunError, StructuredItem, TextItem, Unset
from actoviq.providers import ModelResponse
from actoviq.runtime.output_check import OutputCheck
from actoviq.runtime.tools import ToolInputInvalidError

if TYPE_CHECKING:
    from actoviq.runtime.execution import RunExecution

__all__ = ["MAX_ERRORS", "OutputCheck", "check_output", "output_error", "retry_output"]

MAX_ERRORS: Final = 5
_MAX_ERROR_CHARS: Final = 300
_NO_JSON: Final = "$: the response held no JSON value"


def _json_value(response: ModelResponse) -> JsonValue | Unset:
    if response.has_structured_output:
        return cast(JsonValue, response.structured_output)
    for item in reversed(response.output):
        if isinstance(item, StructuredItem):
            return item.value
    return UNSET


def _bounded(errors: list[str]) -> tuple[str, ...]:
    shown = [
        error if len(error) <= _MAX_ERROR_CHARS else error[: _MAX_ERROR_CHARS - 1] + "…"
        for error in errors[:MAX_ERRORS]
    ]
    if len(errors) > MAX_ERRORS:
        shown.append(f"(and {len(errors) - MAX_ERRORS} more)")
    return tuple(shown)


def check_output(run: RunExecution, response: ModelResponse) -> OutputCheck:
    """Validate and parse ``response``'s structured output (the verdict is cached per response)."""
    cached = run.output_check
    if cached is not None and cached.response is response:
        return cached
    schema = run.agent.output
    validator = run.entry.output_validator
    assert schema is not None
    assert validator is not None
    value = _json_value(response)
    if value is UNSET:
        check = OutputCheck(response, errors=(_NO_JSON,), missing=True)
    else:
        try:
            validator(value)
            parsed = schema.parse(value) if schema.parse is not None else value
        except ToolInputInvalidError as error:
            check = OutputCheck(response, errors=_bounded(list(error.errors)))
        except Exception as error:  # a parse hook (pydantic validators, attrs validators ...)
            check = OutputCheck(response, errors=_bounded([f"$: {type(error).__name__}: {error}"]))
        else:
            check = OutputCheck(response, value=parsed)
    run.output_check = check
    return check


def _retry_text(name: str, errors: tuple[str, ...]) -> str:
    lines = "\n".join(f"- {error}" for error in errors)
    return (
        f'Your answer did not match the required output schema "{name}":\n{lines}\n'
        "Answer again with only a JSON value that matches the schema."
    )


async def retry_output(run: RunExecution, response: ModelResponse) -> bool:
    """True when ``response``'s output is invalid and the model gets another try.

    The correction is a user message appended to the transcript (and the run's items), saved
    with the retry count before the next model call.
    """
    check = check_output(run, response)
    if check.valid or run.output_retries_used >= run.agent.output_retries:
        return False
    schema = run.agent.output
    assert schema is not None
    run.output_retries_used += 1
    message = TextItem(role="user", text=_retry_text(schema.name, check.errors))
    run.transcript.append(message)
    run.generated.append(message)
    await run.save()
    return True


def output_error(run: RunExecution, check: OutputCheck) -> RunError:
    """The run's failure once the retries are spent."""
    schema = run.agent.output
    assert schema is not None
    retries = run.output_retries_used
    details: dict[str, Any] = {
        "schema": schema.name,
        "errors": list(check.errors),
        "retries": retries,
    }
    if check.missing:
        return RunError(
            f'Model did not return structured output for schema "{schema.name}"'
            f" (after {retries} retr{'y' if retries == 1 else 'ies'}).",
            code="STRUCTURED_OUTPUT_MISSING",
            run_id=run.run_id,
            phase="finalize_output",
            details=details,
        )
    return RunError(
        f'Model output does not match schema "{schema.name}" after {retries} '
        f"retr{'y' if retries == 1 else 'ies'}: {'; '.join(check.errors)}",
        code="STRUCTURED_OUTPUT_INVALID",
        run_id=run.run_id,
        phase="finalize_output",
        details=details,
    )
