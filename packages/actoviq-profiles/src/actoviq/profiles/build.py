"""``build_profile`` (spec 04 §4.3), ``inspect_profile`` and the §8.4-27 consistency rule.

Example:
    >>> profile = build_profile("chat", model="scripted:demo")
    >>> profile.spec.id, profile.config.opt_ins.memory
    ('chat-agent', False)
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, TypedDict, cast

import attrs

from actoviq.core import (
    AgentSpec,
    HandoffRef,
    InputGuardrail,
    JsonObject,
    ModelRefParts,
    OutputGuardrail,
    RefSpec,
    RunLimits,
    RunLimitsPatch,
)
from actoviq.profiles.definitions import OPTIONAL_MIDDLEWARE, OPTIONAL_SERVICES, profile_definition
from actoviq.profiles.errors import (
    ProfileConsistencyError,
    ProfileDefinitionError,
    ProfileLimitError,
    UnknownProfileKindError,
)
from actoviq.profiles.types import (
    AGENT_PROFILE_KINDS,
    AgentProfileConfig,
    AgentProfileInspection,
    BuiltAgentProfile,
    ChildBudget,
    ProfileDependencies,
    ProfileOptIns,
    ProfileRef,
)
from actoviq.runtime import freeze_json, thaw_json

__all__ = [
    "PROFILE_METADATA_KEY",
    "ProfileOptions",
    "build_profile",
    "check_profile_consistency",
    "inspect_profile",
    "profile_config_of",
]

PROFILE_METADATA_KEY: Final = "hadamardProfile"
"""The spec metadata key holding the profile's composition summary (the reference's name)."""

_INTEGER_LIMITS: Final = frozenset(
    {"maxTurns", "maxParallelTools", "maxSubagentDepth", "maxSubagentFanout", "streamBufferSize"}
)
_MAX_SAFE_INTEGER: Final = 2**53 - 1

RefLike = str | RefSpec | ProfileRef | Mapping[str, Any]


class ProfileOptions(TypedDict, total=False):
    """The options of :func:`build_profile` (all optional; camelCase keys are accepted too).

    ``limits`` is a partial set of run limits (a :class:`RunLimitsPatch` or a mapping with
    camelCase or snake_case names); ``opt_ins`` enables memory, skills and compaction (only a
    literal ``True`` counts); ``tools`` and ``middleware`` add required references.
    """

    id: str
    name: str
    description: str
    instructions: str
    model: str | ModelRefParts
    tools: Sequence[RefLike]
    handoffs: Sequence[HandoffRef]
    output: Any
    input_guardrails: Sequence[InputGuardrail]
    output_guardrails: Sequence[OutputGuardrail]
    middleware: Sequence[RefLike]
    limits: RunLimitsPatch | Mapping[str, Any]
    metadata: Mapping[str, Any]
    opt_ins: ProfileOptIns | Mapping[str, Any]


_CAMEL_OPTIONS: Final = {
    "inputGuardrails": "input_guardrails",
    "outputGuardrails": "output_guardrails",
    "optIns": "opt_ins",
}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


_LIMIT_NAMES: Final = {_camel(field.name): field.name for field in attrs.fields(RunLimits)}


def _normalise(options: Mapping[str, Any] | None, extra: Mapping[str, Any]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for source in (options or {}, extra):
        if not isinstance(source, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ProfileDefinitionError("Profile options must be a mapping.")
        for key, value in source.items():
            name = _CAMEL_OPTIONS.get(key, key)
            if name not in ProfileOptions.__annotations__:
                raise ProfileDefinitionError(f'Unknown profile option "{key}".')
            merged[name] = value
    return merged


def _text(value: object, default: str, label: str) -> str:
    if value is None:
        return default
    if not isinstance(value, str) or not value.strip():
        raise ProfileDefinitionError(f"Profile agent {label} must not be empty.")
    return value.strip()


def _limit_patch(value: object) -> dict[str, object]:
    if value is None:
        return {}
    if isinstance(value, RunLimitsPatch):
        return {
            _camel(field.name): getattr(value, field.name)
            for field in attrs.fields(RunLimitsPatch)
            if getattr(value, field.name) is not None
        }
    if not isinstance(value, Mapping):
        raise ProfileDefinitionError("Profile limits must be a mapping or a RunLimitsPatch.")
    patch: dict[str, object] = {}
    for key, item in cast(Mapping[object, object], value).items():
        text = str(key)
        name = text if text in _LIMIT_NAMES else _camel(text)
        if name not in _LIMIT_NAMES:
            raise ProfileLimitError(f'Unknown profile run limit "{key}".')
        if item is not None:
            patch[name] = item
    return patch


def _resolve_limits(defaults: RunLimits, patch: Mapping[str, object]) -> RunLimits:
    values: dict[str, object] = {
        _camel(field.name): getattr(defaults, field.name) for field in attrs.fields(RunLimits)
    }
    values.update(patch)
    resolved: dict[str, Any] = {}
    for name, value in values.items():
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or value <= 0
        ):
            raise ProfileLimitError(f"Profile run limit {name} must be a positive finite number.")
        if name != "maxCostUsd":
            if value != int(value) or abs(value) > _MAX_SAFE_INTEGER:
                raise ProfileLimitError(f"Profile run limit {name} must be a safe integer.")
            if name in _INTEGER_LIMITS and not isinstance(value, int):
                raise ProfileLimitError(f"Profile run limit {name} must be a safe integer.")
            value = int(value)
        resolved[_LIMIT_NAMES[name]] = value
    if resolved["stream_buffer_size"] < 2:
        raise ProfileLimitError("Profile run limit streamBufferSize must be at least 2.")
    return RunLimits(**resolved)


def _opt_ins(value: object) -> ProfileOptIns:
    if value is None:
        return ProfileOptIns()
    if isinstance(value, ProfileOptIns):
        return value
    if not isinstance(value, Mapping):
        raise ProfileDefinitionError("Profile optIns must be a mapping or ProfileOptIns.")
    flags = cast(Mapping[str, object], value)
    return ProfileOptIns(
        memory=flags.get("memory") is True,
        skills=flags.get("skills") is True,
        compaction=flags.get("compaction") is True,
    )


def _ref(value: object, label: str) -> ProfileRef:
    if isinstance(value, ProfileRef):
        return value
    if isinstance(value, str):
        if not value.strip():
            raise ProfileDefinitionError(f"Profile {label} reference must not be empty.")
        return ProfileRef(id=value.strip())
    if isinstance(value, RefSpec):
        return _ref({"id": value.id, "options": value.options}, label)
    if isinstance(value, Mapping):
        data = cast(Mapping[str, object], value)
        ref_id, options = data.get("id"), data.get("options")
        if not isinstance(ref_id, str) or not ref_id.strip():
            raise ProfileDefinitionError(f"Profile {label} reference id must not be empty.")
        if options is not None and not isinstance(options, Mapping):
            raise ProfileDefinitionError(f"Profile {label} reference options must be an object.")
        return ProfileRef(id=ref_id.strip(), options=copy.deepcopy(cast(object, options)))
    raise ProfileDefinitionError(
        f"Profile {label} reference must be a string or {{id, options}}; got {value!r}."
    )


def _merge(base: Iterable[object], extra: object, label: str) -> tuple[ProfileRef, ...]:
    """Deduplicate by id: a later duplicate replaces the value but keeps the first position."""
    if extra is None:
        extra = ()
    if isinstance(extra, str | Mapping) or not isinstance(extra, Iterable):
        raise ProfileDefinitionError(f"Profile {label} must be a list of references.")
    merged: dict[str, ProfileRef] = {}
    for item in [*base, *cast(Iterable[object], extra)]:
        ref = _ref(item, label)
        merged[ref.id] = ref
    return tuple(merged.values())


def _unique(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(values))


def _spec_ref(ref: ProfileRef) -> str | RefSpec:
    if ref.options is None:
        return ref.id
    return RefSpec(id=ref.id, options=cast(JsonObject, thaw_json(ref.options)))


def _capped(budget: ChildBudget | None, limits: RunLimits) -> ChildBudget | None:
    if budget is None:
        return None
    return ChildBudget(
        max_child_runs=min(budget.max_child_runs, limits.max_subagent_fanout),
        max_depth=min(budget.max_depth, limits.max_subagent_depth),
        max_total_tokens=min(budget.max_total_tokens, limits.max_total_tokens),
        max_cost_usd=min(budget.max_cost_usd, limits.max_cost_usd),
    )


def check_profile_consistency(config: AgentProfileConfig) -> None:
    """Refuse a config whose ``permissionPolicyRef`` is not among its required middleware.

    Raises:
        ProfileConsistencyError: the policy named by the security section would not run.
    """
    ref = config.security.permission_policy_ref
    if ref is not None and ref not in config.dependencies.required_middleware_ids:
        raise ProfileConsistencyError(
            f'Profile "{config.kind}" names permission policy "{ref}" but does not require it '
            "as middleware.",
            details={"kind": config.kind, "permissionPolicyRef": ref},
        )


def build_profile(
    kind: str, options: ProfileOptions | Mapping[str, Any] | None = None, **extra: Any
) -> BuiltAgentProfile:
    """Build a profile of ``kind`` from its defaults and ``options`` (or keyword options).

    Returns a deeply immutable :class:`BuiltAgentProfile` whose ``spec`` runs on any runtime
    that provides the profile's dependencies (see :func:`~actoviq.profiles.run_profile`).

    Raises:
        UnknownProfileKindError: ``kind`` is not one of :data:`AGENT_PROFILE_KINDS`.
        ProfileDefinitionError: an unknown option, a blank id/name or a malformed reference.
        ProfileLimitError: a limit that is not a positive finite number or safe integer.
    """
    definition = profile_definition(kind)
    if definition is None:
        raise UnknownProfileKindError(f'Unknown agent profile "{kind}".', details={"kind": kind})
    opts = _normalise(options, extra)
    agent_id = _text(opts.get("id"), definition.id, "id")
    name = _text(opts.get("name"), definition.name, "name")
    description = _text(opts.get("description"), definition.description, "description")
    instructions = _text(opts.get("instructions"), definition.instructions, "instructions")
    limits = _resolve_limits(definition.limits, _limit_patch(opts.get("limits")))
    opt_ins = _opt_ins(opts.get("opt_ins"))
    enabled = (opt_ins.memory, opt_ins.skills, opt_ins.compaction)
    services = _unique(
        [
            *definition.required_services,
            *(s for s, on in zip(OPTIONAL_SERVICES, enabled, strict=True) if on),
        ]
    )
    middleware = _merge(
        [
            *definition.required_middleware,
            *(m for m, on in zip(OPTIONAL_MIDDLEWARE, enabled, strict=True) if on),
        ],
        opts.get("middleware"),
        "middleware",
    )
    tools = _merge(definition.required_tools, opts.get("tools"), "tools")
    middleware_ids = {ref.id for ref in middleware}
    tool_ids = {ref.id for ref in tools}
    dependencies = ProfileDependencies(
        required_services=services,
        optional_services=tuple(s for s in OPTIONAL_SERVICES if s not in services),
        required_middleware=middleware,
        optional_middleware=tuple(
            ProfileRef(id=m) for m in OPTIONAL_MIDDLEWARE if m not in middleware_ids
        ),
        required_tools=tools,
        optional_tools=tuple(
            ProfileRef(id=t) for t in definition.optional_tools if t not in tool_ids
        ),
    )
    orchestration = attrs.evolve(
        definition.orchestration,
        child_budget=_capped(definition.orchestration.child_budget, limits),
    )
    config = AgentProfileConfig(
        kind=definition.kind,
        limits=limits,
        opt_ins=opt_ins,
        dependencies=dependencies,
        workspace=definition.workspace,
        security=definition.security,
        result=definition.result,
        orchestration=orchestration,
    )
    check_profile_consistency(config)
    caller_metadata = opts.get("metadata")
    if caller_metadata is not None and not isinstance(caller_metadata, Mapping):
        raise ProfileDefinitionError("Profile metadata must be a JSON object.")
    metadata: dict[str, Any] = copy.deepcopy(dict(cast(Mapping[str, Any], caller_metadata or {})))
    metadata[PROFILE_METADATA_KEY] = config.metadata_json()
    spec_options: dict[str, Any] = {
        "description": description,
        "model": opts.get("model"),
        "tools": [_spec_ref(ref) for ref in tools],
        "handoffs": tuple(opts.get("handoffs") or ()),
        "input_guardrails": tuple(opts.get("input_guardrails") or ()),
        "output_guardrails": tuple(opts.get("output_guardrails") or ()),
        "middleware": [_spec_ref(ref) for ref in middleware],
        "limits": RunLimitsPatch(**attrs.asdict(limits)),
        "metadata": metadata,
    }
    if opts.get("output") is not None:
        spec_options["output"] = opts["output"]
    spec: AgentSpec[Any, Any] = AgentSpec(
        id=agent_id, name=name, instructions=instructions, **spec_options
    )
    frozen = freeze_json(copy.deepcopy(metadata), "profile metadata")
    return BuiltAgentProfile(kind=definition.kind, spec=spec, config=config, metadata=frozen)


def profile_config_of(profile: object) -> AgentProfileConfig:
    """The config of a built profile.

    Raises:
        TypeError: ``profile`` is not a :class:`BuiltAgentProfile` of a known kind.
    """
    if not isinstance(profile, BuiltAgentProfile) or profile.kind not in AGENT_PROFILE_KINDS:
        raise ProfileDefinitionError("inspectProfile requires a built agent profile.")
    return profile.config


def inspect_profile(profile: BuiltAgentProfile) -> AgentProfileInspection:
    """The frozen inspection ``{schemaVersion: 1, kind, spec, config}`` of ``profile``.

    Raises:
        ProfileDefinitionError: ``profile`` is not a built profile (a ``TypeError``).
    """
    config = profile_config_of(profile)
    return AgentProfileInspection(kind=profile.kind, spec=profile.spec, config=config)
