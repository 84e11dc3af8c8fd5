"""What a scope carries besides its budget and permits: policy, tenant and workspace (spec 04 §1.2).

All are frozen values; JSON inside them is deep-frozen (``MappingProxyType``/tuples), so a child
that inherits them by reference cannot change its parent's.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal, TypeAlias, cast

import attrs

from actoviq.core import JsonObject, JsonValueError
from actoviq.orchestration.errors import OrchestrationConfigError
from actoviq.runtime import FrozenJson, freeze_json, thaw_json

__all__ = [
    "MAX_SAFE_INTEGER",
    "SecurityPolicyRef",
    "TenantSessionNamespace",
    "WorkspaceAccess",
    "WorkspacePolicy",
    "check_deadline",
    "freeze_object",
    "policy_from_json",
    "tool_names",
    "within",
]

MAX_SAFE_INTEGER: Final = 2**53 - 1
WorkspaceAccess: TypeAlias = Literal["read-only", "read-write"]
"""Whether a child may write to the shared workspace."""


def freeze_object(value: object, label: str) -> Mapping[str, FrozenJson]:
    """A deep-frozen copy of a JSON object.

    Raises:
        OrchestrationConfigError: ``value`` is not a strict JSON object.
    """
    if value is None:
        return freeze_json({}, label)  # type: ignore[return-value]
    if not isinstance(value, Mapping):
        raise OrchestrationConfigError(f"{label} must be a JSON object.", details={"field": label})
    try:
        frozen = freeze_json(cast(Mapping[str, object], value), label)
    except JsonValueError as error:
        raise OrchestrationConfigError(
            f"{label} must be a strict JSON object.", details={"field": label}
        ) from error
    return frozen  # type: ignore[return-value]


def check_deadline(deadline: object) -> float | None:
    """An absolute deadline in epoch milliseconds (finite, >= 0), or None.

    Raises:
        OrchestrationConfigError: "Orchestration deadline must be a finite Unix epoch value."
    """
    if deadline is None:
        return None
    if type(deadline) not in (int, float) or not math.isfinite(deadline) or deadline < 0:  # type: ignore[arg-type]
        raise OrchestrationConfigError(
            "Orchestration deadline must be a finite Unix epoch value.",
            details={"field": "deadline"},
        )
    return float(deadline)  # type: ignore[arg-type]


def _nonblank(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _attributes(value: object) -> Mapping[str, FrozenJson]:
    return freeze_object(value, "securityPolicy.attributes")


@attrs.frozen(kw_only=True, slots=True)
class SecurityPolicyRef:
    """A reference to the security policy a tree runs under (data only, no callables).

    Raises:
        OrchestrationConfigError: a blank id ("Security policy id must not be empty.").
    """

    id: str = "default"
    version: str | None = None
    attributes: Mapping[str, FrozenJson] = attrs.field(
        factory=lambda: freeze_object({}, "securityPolicy.attributes"),
        converter=_attributes,
    )

    def __attrs_post_init__(self) -> None:
        if not _nonblank(self.id):
            raise OrchestrationConfigError(
                "Security policy id must not be empty.", details={"field": "securityPolicy.id"}
            )

    def to_json(self) -> JsonObject:
        """``{id, version|null, attributes}``."""
        return {
            "id": self.id,
            "version": self.version,
            "attributes": thaw_json(self.attributes),
        }


@attrs.frozen(kw_only=True, slots=True)
class TenantSessionNamespace:
    """The tenant and session namespace a tree writes to; ``session_id`` is the parent session.

    Raises:
        OrchestrationConfigError: a blank tenant or namespace
            ("Tenant id and session namespace must not be empty.").
    """

    tenant_id: str = "default"
    namespace: str = "default"
    session_id: str | None = None

    def __attrs_post_init__(self) -> None:
        if not (_nonblank(self.tenant_id) and _nonblank(self.namespace)):
            raise OrchestrationConfigError(
                "Tenant id and session namespace must not be empty.",
                details={"field": "tenantSession"},
            )
        if self.session_id is not None and not _nonblank(self.session_id):
            raise OrchestrationConfigError(
                "Tenant session id must not be blank.", details={"field": "tenantSession"}
            )

    def to_json(self) -> JsonObject:
        """``{tenantId, namespace, sessionId|null}``."""
        return {
            "tenantId": self.tenant_id,
            "namespace": self.namespace,
            "sessionId": self.session_id,
        }


def _roots(value: Iterable[str] | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        raise OrchestrationConfigError(
            "workspacePolicy.allowedRoots must be a list of paths, not one string.",
            details={"field": "workspace.allowedRoots"},
        )
    try:
        roots = tuple(value)
    except TypeError:
        raise OrchestrationConfigError(
            "workspacePolicy.allowedRoots must be a list of paths.",
            details={"field": "workspace.allowedRoots"},
        ) from None
    for root in roots:
        if not _nonblank(root) or "\x00" in root:
            raise OrchestrationConfigError(
                "workspacePolicy.allowedRoots entries must be non-empty paths.",
                details={"field": "workspace.allowedRoots"},
            )
    return roots


def _optional_path(attribute: str) -> Any:
    """An attrs validator: None or a non-blank string without NUL (``attribute`` names it)."""

    def check(_: object, __: object, value: object) -> None:
        if value is not None and (not _nonblank(value) or "\x00" in cast(str, value)):
            raise OrchestrationConfigError(
                f"{attribute} must be a non-empty string without NUL characters.",
                details={"field": attribute},
            )

    return check


def tool_names(value: object, field: str = "allowedTools") -> frozenset[str] | None:
    """A frozen set of tool names (None stays None).

    Raises:
        OrchestrationConfigError: one string, a non-iterable, or a name that is not a string.
    """
    if value is None:
        return None
    if isinstance(value, str | bytes | Mapping):
        raise OrchestrationConfigError(
            "allowed_tools must be a collection of tool names, not one string.",
            details={"field": field},
        )
    try:
        names = frozenset(cast(Iterable[object], value))
    except TypeError:
        raise OrchestrationConfigError(
            "allowed_tools must be a collection of tool names.", details={"field": field}
        ) from None
    if not all(type(name) is str for name in names):
        raise OrchestrationConfigError(
            "allowed_tools must hold tool names (strings).", details={"field": field}
        )
    return cast(frozenset[str], names)


def _access(_: object, __: object, value: object) -> None:
    if value not in ("read-only", "read-write"):
        raise OrchestrationConfigError(
            'workspacePolicy.access must be "read-only" or "read-write".',
            details={"field": "workspace.access"},
        )


@attrs.frozen(kw_only=True, slots=True)
class WorkspacePolicy:
    """Where a tree may work: a workspace id, a root, the access mode and the allowed roots.

    ``allowed_roots`` (frozen) restricts paths; ``None`` means the ``root`` alone (when set) or no
    restriction. :meth:`effective_roots` resolves them with ``realpath``.
    """

    workspace_id: str | None = attrs.field(
        default=None, validator=_optional_path("workspace.workspaceId")
    )
    root: str | None = attrs.field(default=None, validator=_optional_path("workspace.root"))
    access: WorkspaceAccess = attrs.field(default="read-write", validator=_access)
    allowed_roots: tuple[str, ...] | None = attrs.field(default=None, converter=_roots)

    def effective_roots(self) -> tuple[str, ...] | None:
        """The real paths this policy allows (None: unrestricted)."""
        if self.allowed_roots is not None:
            return tuple(os.path.realpath(root) for root in self.allowed_roots)
        if self.root is not None:
            return (os.path.realpath(self.root),)
        return None

    def to_json(self) -> JsonObject:
        """``{workspaceId|null, root|null, access, allowedRoots}``."""
        return {
            "workspaceId": self.workspace_id,
            "root": self.root,
            "access": self.access,
            "allowedRoots": list(self.allowed_roots or ()),
        }


def within(path: str, roots: Iterable[str]) -> bool:
    """True when the real ``path`` is one of ``roots`` or inside one (roots are real paths)."""
    real = os.path.realpath(path)
    for root in roots:
        try:
            if os.path.commonpath([root, real]) == root:
                return True
        except ValueError:  # different drives / mixed absolute and relative
            continue
    return False


def policy_from_json(
    data: Any,
) -> tuple[SecurityPolicyRef, TenantSessionNamespace, WorkspacePolicy]:
    """The three policies of a persisted scope.

    Reads ``securityPolicy``, ``tenantSession`` and ``workspacePolicy`` (defaults when absent).
    """
    if not isinstance(data, Mapping):
        raise OrchestrationConfigError("Persisted scope must be a JSON object.")
    mapping = cast(Mapping[str, Any], data)
    policy = cast(Mapping[str, Any], mapping.get("securityPolicy") or {})
    tenant = cast(Mapping[str, Any], mapping.get("tenantSession") or {})
    workspace = cast(Mapping[str, Any], mapping.get("workspacePolicy") or {})
    roots = workspace.get("allowedRoots")
    return (
        SecurityPolicyRef(
            id=policy.get("id", "default"),
            version=policy.get("version"),
            attributes=policy.get("attributes") or {},
        ),
        TenantSessionNamespace(
            tenant_id=tenant.get("tenantId", "default"),
            namespace=tenant.get("namespace", "default"),
            session_id=tenant.get("sessionId"),
        ),
        WorkspacePolicy(
            workspace_id=workspace.get("workspaceId"),
            root=workspace.get("root"),
            access=workspace.get("access", "read-write"),
            allowed_roots=roots if roots else None,
        ),
    )
