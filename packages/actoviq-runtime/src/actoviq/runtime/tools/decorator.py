"""The ``@tool`` decorator: a :class:`RuntimeTool` from a typed function (D5).

The JSON Schema is derived from the parameter type hints (see
:mod:`actoviq.runtime.tools.schema`); the description and per-parameter descriptions come from a
Google-style docstring. A parameter annotated :class:`ToolExecutionContext` receives the context.

Example:
    >>> @tool(effect="read")
    ... async def add(a: int, b: int = 1) -> int:
    ...     '''Add two numbers.
    ...
    ...     Args:
    ...         a: the first number.
    ...         b: the second number.
    ...     '''
    ...     return a + b
    >>> add.descriptor.input.json_schema["required"]
    ['a']
    >>> add.descriptor.description
    'Add two numbers.'
"""

from __future__ import annotations

import inspect
import re
import sys
import typing
from collections.abc import Callable
from typing import Any, Generic, ParamSpec, TypeVar, overload

import attrs

from actoviq.core import JsonObject, SchemaBuilder, is_json_value, object_schema
from actoviq.runtime.tools.descriptor import (
    RuntimeTool,
    ToolBehavior,
    ToolDescriptor,
    ToolEffect,
    ToolExecutionContext,
    ToolSchema,
)
from actoviq.runtime.tools.errors import ToolDefinitionError
from actoviq.runtime.tools.schema import ToolInputInvalidError, compile_json_schema

__all__ = ["FunctionTool", "tool"]

# The decorated function's own signature is arbitrary; the tool erases it.
ToolFunction = Callable[..., Any]
P = ParamSpec("P")
R = TypeVar("R")


@attrs.frozen(kw_only=True, slots=True)
class FunctionTool(RuntimeTool, Generic[P, R]):
    """What ``@tool`` returns: a :class:`RuntimeTool` that is still the function.

    Call it like the function (unit tests need no runtime): ``add(1, 2) == 3``. The runtime uses
    it as any tool (``descriptor``, ``execute``); ``function`` is the decorated function.

    Example:
        >>> @tool
        ... def add(a: int, b: int) -> int:
        ...     '''Add.'''
        ...     return a + b
        >>> add(1, 2), add.name
        (3, 'add')
    """

    function: Callable[P, R] = attrs.field(eq=False, repr=False)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Call the decorated function directly (no validation, no runtime)."""
        return self.function(*args, **kwargs)


@overload
def tool(fn: Callable[P, R], /) -> FunctionTool[P, R]: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    effect: ToolEffect | None = None,
    timeout_ms: float | None = None,
    requires_approval: bool = False,
    parallel_safe: bool | None = None,
    metadata: JsonObject | None = None,
    max_retries: int | None = None,
    max_output_chars: int | None = None,
) -> Callable[[Callable[P, R]], FunctionTool[P, R]]: ...


def tool(
    fn: ToolFunction | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    effect: ToolEffect | None = None,
    timeout_ms: float | None = None,
    requires_approval: bool = False,
    parallel_safe: bool | None = None,
    metadata: JsonObject | None = None,
    max_retries: int | None = None,
    max_output_chars: int | None = None,
) -> FunctionTool[..., Any] | Callable[[ToolFunction], FunctionTool[..., Any]]:
    """Turn a (sync or async) function into a tool the runtime can run.

    The result is a :class:`FunctionTool`: a :class:`RuntimeTool` that can still be called like
    the function. Raise :class:`~actoviq.runtime.tools.ToolRetry` inside it to ask the model
    for another try.

    Args:
        fn: the function (when used as bare ``@tool``).
        name: the tool name (default: the function name).
        description: the description (default: the docstring's first paragraph).
        effect: ``read``, ``idempotent-write`` or ``side-effect`` (the default when omitted).
        timeout_ms: a per-call timeout.
        requires_approval: every call needs an approval.
        parallel_safe: False keeps a read tool out of parallel batches.
        metadata: JSON metadata on the descriptor.
        max_retries: consecutive ``ToolRetry`` or invalid-argument calls the tool accepts in a
            run before the run fails (default ``DEFAULT_TOOL_MAX_RETRIES``).
        max_output_chars: the largest result, in characters of its JSON text (default
            ``DEFAULT_TOOL_MAX_OUTPUT_CHARS``); a larger one fails the call (``validation``).

    Raises:
        ToolDefinitionError: a parameter type cannot be expressed as JSON Schema, or the
            function takes ``*args`` / ``**kwargs``.
    """
    # Like pydantic: resolve string annotations of locally defined types via the caller's frame.
    caller_locals = dict(sys._getframe(1).f_locals)  # pyright: ignore[reportPrivateUsage]
    behavior = ToolBehavior(
        effect=effect,
        timeout_ms=timeout_ms,
        requires_approval=requires_approval,
        parallel_safe=parallel_safe,
        max_retries=max_retries,
        max_output_chars=max_output_chars,
    )

    def decorate(function: ToolFunction) -> FunctionTool[..., Any]:
        return _build_tool(function, name, description, behavior, metadata, caller_locals)

    if fn is not None:
        return decorate(fn)
    return decorate


def _build_tool(
    fn: ToolFunction,
    name: str | None,
    description: str | None,
    behavior: ToolBehavior,
    metadata: JsonObject | None,
    localns: dict[str, object],
) -> FunctionTool[..., Any]:
    if not callable(fn):
        raise ToolDefinitionError("@tool expects a function.")
    tool_name = name if name is not None else getattr(fn, "__name__", "")
    summary, param_docs = _parse_docstring(inspect.getdoc(fn) or "")
    builder = SchemaBuilder(localns, error=ToolDefinitionError)
    try:
        hints = builder.hints(fn)
    except ToolDefinitionError as error:
        raise ToolDefinitionError(f'Tool "{tool_name}": {error}') from None
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin or class without an inspectable signature
        raise ToolDefinitionError(
            f'Tool "{tool_name}": @tool needs a function with a signature, got {fn!r}.'
        ) from None
    properties: dict[str, JsonObject] = {}
    converters: dict[str, Callable[[Any], Any]] = {}
    required: set[str] = set()
    positional: list[str] = []
    context_param: str | None = None
    for param in signature.parameters.values():
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise ToolDefinitionError(
                f'Tool "{tool_name}": *args and **kwargs parameters are not supported.'
            )
        hint = hints.get(param.name, Any)
        if hint is ToolExecutionContext:
            context_param = param.name
            continue
        if param.kind is inspect.Parameter.POSITIONAL_ONLY:
            positional.append(param.name)
        try:
            schema, convert = builder.build(hint)
        except ToolDefinitionError as error:
            raise ToolDefinitionError(
                f'Tool "{tool_name}" parameter "{param.name}": {error}'
            ) from None
        if param.name in param_docs and "description" not in schema:
            schema = {**schema, "description": param_docs[param.name]}
        if param.default is inspect.Parameter.empty:
            required.add(param.name)
        elif is_json_value(param.default) and param.default is not None:
            schema = {**schema, "default": param.default}
        properties[param.name] = schema
        converters[param.name] = convert
    document = builder.finish(object_schema(properties, required))
    validate = compile_json_schema(document)

    def parse(value: object) -> object:
        validate(value)
        arguments = typing.cast(dict[str, Any], value)
        try:
            return {key: converters[key](item) for key, item in arguments.items()}
        except ToolInputInvalidError:
            raise
        except Exception as error:
            raise ToolInputInvalidError([f"$: {error}"]) from error

    def arguments(ctx: ToolExecutionContext, parsed: Any) -> tuple[list[Any], dict[str, Any]]:
        kwargs = dict(typing.cast(dict[str, Any], parsed))
        args = [kwargs.pop(key) for key in positional if key in kwargs]
        if context_param is not None:
            kwargs[context_param] = ctx
        return args, kwargs

    # An async function stays a coroutine function (it runs on the event loop); a plain one
    # stays plain, so the runner runs it in a worker thread (D10: plain tools never block).
    execute: Callable[[ToolExecutionContext, Any], Any]
    if inspect.iscoroutinefunction(fn):

        async def execute_async(ctx: ToolExecutionContext, parsed: Any) -> Any:
            args, kwargs = arguments(ctx, parsed)
            return await fn(*args, **kwargs)

        execute = execute_async
    else:

        def execute_plain(ctx: ToolExecutionContext, parsed: Any) -> Any:
            args, kwargs = arguments(ctx, parsed)
            return fn(*args, **kwargs)

        execute = execute_plain

    descriptor = ToolDescriptor(
        name=tool_name,
        description=description if description is not None else summary,
        input=ToolSchema(parse=parse, json_schema=document),
        behavior=behavior,
        metadata=metadata,
    )
    return FunctionTool(descriptor=descriptor, execute=execute, function=fn)


_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Returns|Raises|Yields|Example|Examples|Note|Notes):\s*$"
)
_ARG_LINE = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The first paragraph and the ``Args:`` descriptions of a Google-style docstring."""
    lines = doc.splitlines()
    summary_lines: list[str] = []
    for line in lines:
        if not line.strip() or _SECTION.match(line.strip()):
            break
        summary_lines.append(line.strip())
    params: dict[str, str] = {}
    in_args = False
    current: str | None = None
    arg_indent: int | None = None
    for line in lines:
        stripped = line.strip()
        section = _SECTION.match(stripped)
        if section:
            in_args = section.group(1) in ("Args", "Arguments", "Parameters")
            current, arg_indent = None, None
            continue
        if not in_args or not stripped:
            continue
        indent = len(line) - len(line.lstrip())
        if arg_indent is None:
            arg_indent = indent
        match = _ARG_LINE.match(stripped)
        if match and indent <= arg_indent:
            key = str(match.group(1)).lstrip("*")
            params[key] = str(match.group(2)).strip()
            current = key
        elif current is not None:
            params[current] = f"{params[current]} {stripped}".strip()
    return " ".join(summary_lines), params
