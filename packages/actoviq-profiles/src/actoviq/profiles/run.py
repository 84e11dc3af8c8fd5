"""Checking a runtime against a profile, then running the profile on it (spec 04 §4.4).

:func:`assert_profile_runtime` performs no I/O and resolves no service: it only asks the
runtime's registries whether each id is registered, so a missing dependency is refused before
any model call. :func:`run_profile` and :func:`stream_profile` check, then run ``profile.spec``
on the **same** runtime.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Unpack

from actoviq.core import RunResult
from actoviq.profiles.build import check_profile_consistency, profile_config_of
from actoviq.profiles.errors import ProfileRuntimeConfigurationError
from actoviq.profiles.memory import COMPACTION_METADATA_KEY
from actoviq.profiles.types import BuiltAgentProfile
from actoviq.runtime import AgentInput, AgentRuntime, RunHandle
from actoviq.runtime.run_setup import RunOptions

__all__ = [
    "assert_profile_runtime",
    "missing_profile_dependencies",
    "run_profile",
    "stream_profile",
]


def missing_profile_dependencies(
    profile: BuiltAgentProfile, runtime: AgentRuntime
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """The required ``(services, middleware, tools)`` ids ``runtime`` does not register."""
    deps = profile_config_of(profile).dependencies
    services = tuple(s for s in deps.required_services if not runtime.services.has(s))
    middleware = tuple(
        m for m in deps.required_middleware_ids if not runtime.middleware_registry.has(m)
    )
    tools = tuple(t for t in deps.required_tool_ids if not runtime.tools.has(t))
    return services, middleware, tools


def assert_profile_runtime(
    profile: BuiltAgentProfile,
    runtime: AgentRuntime,
    options: Mapping[str, Any] | None = None,
    *,
    workspace_id: str | None = None,
) -> None:
    """Check that ``runtime`` provides everything ``profile`` requires (no I/O).

    ``options`` may carry ``workspaceId`` (or ``workspace_id``), as the keyword does.

    Raises:
        ProfileRuntimeConfigurationError: every missing service, middleware and tool, plus
            ``workspaceId`` when the profile needs a workspace and none (or a blank one) was
            given; one error listing them all.
        ProfileConsistencyError: the profile's permission policy is not required middleware.
        ProfileDefinitionError: ``profile`` is not a built profile.
    """
    config = profile_config_of(profile)
    check_profile_consistency(config)
    if workspace_id is None and options is not None:
        value = options.get("workspaceId", options.get("workspace_id"))
        workspace_id = value if isinstance(value, str) else None
    services, middleware, tools = missing_profile_dependencies(profile, runtime)
    needs_workspace = config.workspace.required and not (workspace_id or "").strip()
    if services or middleware or tools or needs_workspace:
        raise ProfileRuntimeConfigurationError(
            config.kind,
            services=services,
            middleware=middleware,
            tools=tools,
            workspace_id=needs_workspace,
        )


async def run_profile(
    runtime: AgentRuntime,
    profile: BuiltAgentProfile,
    input: AgentInput,
    **options: Unpack[RunOptions],
) -> RunResult[Any]:
    """Check ``runtime`` against ``profile``, then ``runtime.run(profile.spec, input, ...)``.

    ``options`` are :meth:`AgentRuntime.run`'s keyword options (``workspace_id``,
    ``session_id``, ...). Nothing is sent to a model when a dependency is missing. A profile
    with the compaction opt-in run in a session has its conversation built (and compacted when
    over budget) by the ``profile.compaction`` middleware; the session keeps every item.

    Raises:
        ProfileRuntimeConfigurationError: see :func:`assert_profile_runtime`.
    """
    assert_profile_runtime(profile, runtime, workspace_id=options.get("workspace_id"))
    return await runtime.run(profile.spec, input, **_with_compaction(profile, options))


def stream_profile(
    runtime: AgentRuntime,
    profile: BuiltAgentProfile,
    input: AgentInput,
    **options: Unpack[RunOptions],
) -> RunHandle[Any]:
    """Check ``runtime`` against ``profile``, then ``runtime.stream(profile.spec, input, ...)``.

    Raises:
        ProfileRuntimeConfigurationError: see :func:`assert_profile_runtime`.
    """
    assert_profile_runtime(profile, runtime, workspace_id=options.get("workspace_id"))
    return runtime.stream(profile.spec, input, **_with_compaction(profile, options))


def _with_compaction(profile: BuiltAgentProfile, options: RunOptions) -> RunOptions:
    """A compaction session run: the ``profile.compaction`` middleware builds the conversation."""
    if (
        not profile.config.opt_ins.compaction
        or options.get("session_id") is None
        or options.get("session_history") is not None
    ):
        return options
    metadata = dict(options.get("metadata") or {})
    metadata[COMPACTION_METADATA_KEY] = {"sessionHistory": "provided"}
    return {**options, "session_history": "provided", "metadata": metadata}
