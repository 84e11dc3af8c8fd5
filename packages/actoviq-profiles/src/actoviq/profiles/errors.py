"""Typed profile errors; each has a stable ``code`` (and keeps the reference's message text)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from actoviq.core import ActoviqError

__all__ = [
    "ProfileConsistencyError",
    "ProfileDefinitionError",
    "ProfileError",
    "ProfileLimitError",
    "ProfileRuntimeConfigurationError",
    "UnknownProfileKindError",
]


class ProfileError(ActoviqError):
    """Root of the profile errors."""

    default_code: ClassVar[str] = "PROFILE_ERROR"


class UnknownProfileKindError(ProfileError, TypeError):
    """``build_profile`` of a kind that is not one of the six (a ``TypeError``, as upstream)."""

    default_code: ClassVar[str] = "PROFILE_KIND_UNKNOWN"


class ProfileDefinitionError(ProfileError, TypeError):
    """An option of ``build_profile`` has the wrong shape: a blank id or name, a bad ref."""

    default_code: ClassVar[str] = "PROFILE_DEFINITION_INVALID"


class ProfileLimitError(ProfileError, ValueError):
    """A run limit is not a positive finite number (or not a safe integer where required)."""

    default_code: ClassVar[str] = "PROFILE_LIMIT_INVALID"


class ProfileConsistencyError(ProfileError, ValueError):
    """A profile contradicts itself: its ``permissionPolicyRef`` is not required middleware."""

    default_code: ClassVar[str] = "PROFILE_INCONSISTENT"


class ProfileRuntimeConfigurationError(ProfileError):
    """The runtime lacks what the profile requires; raised before any model call.

    Attributes:
        kind: the profile kind.
        missing_services / missing_middleware / missing_tools: the missing ids, in order.
        missing_workspace_id: the profile needs a workspace and none was given.
    """

    default_code: ClassVar[str] = "PROFILE_RUNTIME_CONFIGURATION"

    def __init__(
        self,
        kind: str,
        *,
        services: Sequence[str] = (),
        middleware: Sequence[str] = (),
        tools: Sequence[str] = (),
        workspace_id: bool = False,
    ) -> None:
        groups: list[str] = []
        if services:
            groups.append(f"services: {', '.join(services)}")
        if middleware:
            groups.append(f"middleware: {', '.join(middleware)}")
        if tools:
            groups.append(f"tools: {', '.join(tools)}")
        if workspace_id:
            groups.append("workspaceId")
        super().__init__(
            f'Profile "{kind}" is missing runtime composition ({"; ".join(groups)}).',
            details={
                "kind": kind,
                "services": list(services),
                "middleware": list(middleware),
                "tools": list(tools),
                "workspaceId": workspace_id,
            },
        )
        self.kind = kind
        self.missing_services = tuple(services)
        self.missing_middleware = tuple(middleware)
        self.missing_tools = tuple(tools)
        self.missing_workspace_id = workspace_id
