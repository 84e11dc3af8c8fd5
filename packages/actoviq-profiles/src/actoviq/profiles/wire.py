"""Reading a profile config back from its camelCase wire form (``AgentProfileConfig.to_json``).

``profile_config_from_json(config.to_json()) == config`` for every built profile; anything that
is not such a document (a missing section, an unknown enum value, a wrong type, another
``schemaVersion``) is refused with :class:`~actoviq.profiles.ProfileDefinitionError`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

import attrs

from actoviq.core import RunLimits
from actoviq.profiles.errors import ProfileDefinitionError
from actoviq.profiles.types import (
    AGENT_PROFILE_KINDS,
    AgentProfileConfig,
    ChildBudget,
    ProfileDependencies,
    ProfileOptIns,
    ProfileOrchestration,
    ProfileRef,
    ProfileResult,
    ProfileSecurity,
    ProfileWorkspace,
)

__all__ = ["profile_config_from_json"]

_TOP_KEYS = frozenset(
    {
        "schemaVersion",
        "kind",
        "limits",
        "optIns",
        "dependencies",
        "workspace",
        "security",
        "result",
        "orchestration",
    }
)

T = TypeVar("T")


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _object(value: object, label: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ProfileDefinitionError(f"Profile config {label} must be an object.")
    return cast(Mapping[str, Any], value)


def _section(
    data: Mapping[str, Any], cls: type[T], label: str, **convert: Callable[[Any], Any]
) -> T:
    """``cls`` from the camelCase keys of ``data`` (every field required, nothing extra)."""
    fields = attrs.fields(cast(Any, cls))
    names = {_camel(field.name): field.name for field in fields if field.name != "schema_version"}
    unknown = set(data) - set(names)
    if unknown:
        raise ProfileDefinitionError(f"Profile config {label} has unknown keys: {sorted(unknown)}.")
    values: dict[str, Any] = {}
    for wire, name in names.items():
        if wire not in data:
            raise ProfileDefinitionError(f"Profile config {label}.{wire} is missing.")
        value = data[wire]
        values[name] = convert[name](value) if name in convert else value
    try:
        built = cls(**values)
    except (TypeError, ValueError) as error:
        raise ProfileDefinitionError(f"Profile config {label} is invalid: {error}") from error
    _check_literals(built, label)
    return built


_ALLOWED: dict[tuple[type[Any], str], tuple[object, ...]] = {
    (ProfileWorkspace, "access"): ("none", "read-only", "read-write", "inherited"),
    (ProfileWorkspace, "containment"): ("not-applicable", "workspace-root"),
    (ProfileWorkspace, "symlink_escape"): ("not-applicable", "deny"),
    (ProfileWorkspace, "resume_policy"): ("not-applicable", "same-workspace"),
    (ProfileSecurity, "side_effects"): ("none", "deny-by-default", "approval-or-policy"),
    (ProfileSecurity, "network"): ("disabled", "policy-controlled"),
    (ProfileSecurity, "process"): ("disabled", "policy-controlled"),
    (ProfileSecurity, "child_policy"): ("none", "inherit-stricter"),
    (ProfileSecurity, "secrets"): ("runtime-service-only",),
    (ProfileResult, "artifacts"): ("none", "optional", "required"),
    (ProfileResult, "citations"): ("none", "optional", "required"),
    (ProfileResult, "artifact_item_type"): (None, "artifact_ref"),
    (ProfileOrchestration, "mode"): ("none", "workflow", "supervisor", "background"),
    (ProfileOrchestration, "child_failure_policy"): (None, "fail-fast"),
}


def _check_literals(value: object, label: str) -> None:
    for (cls, name), allowed in _ALLOWED.items():
        if isinstance(value, cls) and getattr(value, name) not in allowed:
            raise ProfileDefinitionError(
                f"Profile config {label}.{_camel(name)} must be one of {list(allowed)}."
            )
    for field in attrs.fields(type(value)):
        if field.type in ("bool",) and not isinstance(getattr(value, field.name), bool):
            raise ProfileDefinitionError(
                f"Profile config {label}.{_camel(field.name)} must be a boolean."
            )


def _refs(value: object) -> tuple[ProfileRef, ...]:
    if not isinstance(value, list):
        raise ProfileDefinitionError("Profile config dependency lists must be arrays.")
    refs: list[ProfileRef] = []
    for item in cast(list[object], value):
        if isinstance(item, str) and item.strip():
            refs.append(ProfileRef(id=item))
        elif isinstance(item, Mapping) and isinstance(
            cast(Mapping[str, object], item).get("id"), str
        ):
            entry = cast(Mapping[str, object], item)
            refs.append(ProfileRef(id=cast(str, entry["id"]), options=entry.get("options")))
        else:
            raise ProfileDefinitionError(f"Profile config reference {item!r} is invalid.")
    return tuple(refs)


def _ids(value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(
        isinstance(item, str) for item in cast(list[object], value)
    ):
        raise ProfileDefinitionError("Profile config service lists must be arrays of ids.")
    return tuple(cast(list[str], value))


def _limits(value: object) -> RunLimits:
    data = _object(value, "limits")
    names = {_camel(field.name): field.name for field in attrs.fields(RunLimits)}
    if set(data) != set(names):
        raise ProfileDefinitionError("Profile config limits must have exactly the 13 run limits.")
    try:
        return RunLimits(**{names[key]: item for key, item in data.items()})
    except (TypeError, ValueError) as error:
        raise ProfileDefinitionError(f"Profile config limits are invalid: {error}") from error


def _budget(value: object) -> ChildBudget | None:
    if value is None:
        return None
    return _section(_object(value, "orchestration.childBudget"), ChildBudget, "childBudget")


def profile_config_from_json(data: object) -> AgentProfileConfig:
    """The :class:`AgentProfileConfig` of a ``to_json()`` document.

    Raises:
        ProfileDefinitionError: not a schemaVersion 1 profile config of a known kind.
    """
    document = _object(data, "document")
    unknown = set(document) - _TOP_KEYS
    if unknown:
        raise ProfileDefinitionError(f"Profile config has unknown keys: {sorted(unknown)}.")
    if document.get("schemaVersion") != 1:
        raise ProfileDefinitionError("Profile config schemaVersion must be 1.")
    kind = document.get("kind")
    if kind not in AGENT_PROFILE_KINDS:
        raise ProfileDefinitionError(f'Unknown agent profile "{kind}".')
    dependencies = _section(
        _object(document.get("dependencies"), "dependencies"),
        ProfileDependencies,
        "dependencies",
        required_services=_ids,
        optional_services=_ids,
        required_middleware=_refs,
        optional_middleware=_refs,
        required_tools=_refs,
        optional_tools=_refs,
    )
    orchestration = _section(
        _object(document.get("orchestration"), "orchestration"),
        ProfileOrchestration,
        "orchestration",
        refs=_ids,
        child_budget=_budget,
    )
    return AgentProfileConfig(
        kind=kind,
        limits=_limits(document.get("limits")),
        opt_ins=_section(_object(document.get("optIns"), "optIns"), ProfileOptIns, "optIns"),
        dependencies=dependencies,
        workspace=_section(
            _object(document.get("workspace"), "workspace"), ProfileWorkspace, "workspace"
        ),
        security=_section(
            _object(document.get("security"), "security"), ProfileSecurity, "security"
        ),
        result=_section(_object(document.get("result"), "result"), ProfileResult, "result"),
        orchestration=orchestration,
    )
