"""actoviq.providers: the provider-neutral model contract, registry, capabilities and streams.

The OpenAI and Anthropic adapters live in :mod:`actoviq.providers.openai` and
:mod:`actoviq.providers.anthropic` (extras ``[openai]`` / ``[anthropic]``); importing this package
never imports either SDK. :mod:`actoviq.providers.testing` has the scripted provider and
:mod:`actoviq.providers.legacy` the bridges to the legacy ModelApi.

Example:
    >>> from actoviq.core import TextItem
    >>> from actoviq.providers import ModelRegistry, ModelRequest
    >>> from actoviq.providers.testing import ScriptedProvider
    >>> registry = ModelRegistry([ScriptedProvider(["hello"])])
    >>> request = ModelRequest(model="any-model", input=[TextItem(role="user", text="hi")])
"""

from actoviq.providers.base import BaseModelProvider, PreparedCall, namespaced_options
from actoviq.providers.capabilities import (
    ALL_CAPABILITIES,
    ANTHROPIC_MESSAGES_CAPABILITIES,
    CAPABILITY_NAMES,
    LEGACY_CAPABILITIES,
    MINIMAL_CAPABILITIES,
    OPENAI_CHAT_COMPAT_CAPABILITIES,
    OPENAI_RESPONSES_CAPABILITIES,
    CapabilitiesSource,
    CapabilityResolver,
    InputCapabilities,
    ModelCapabilities,
    ModelCapability,
    OutputCapabilities,
    ReasoningCapabilities,
    ToolCapabilities,
    assert_request_capabilities,
    has_capability,
    merge_capabilities,
    required_capabilities_for_request,
    resolve_model_capabilities,
    unsupported_capabilities,
)
from actoviq.providers.environment import (
    DEFAULT_ANTHROPIC_MODEL,
    DEFAULT_OPENAI_MODEL,
    models_from_environment,
)
from actoviq.providers.errors import (
    MissingAPIKeyError,
    MissingExtraError,
    ModelCallAbortedError,
    ModelCallTimeoutError,
    ModelOwnershipError,
    ProviderConfigurationError,
    ProviderOptionsError,
    ProviderStreamError,
    StreamConsumedError,
)
from actoviq.providers.mapping.chat_compat import OpenAICompat
from actoviq.providers.output_limits import (
    ANTHROPIC_FALLBACK_MAX_TOKENS,
    ANTHROPIC_MAX_OUTPUT_TOKENS,
    anthropic_max_tokens,
)
from actoviq.providers.protocol import ModelProvider
from actoviq.providers.registry import ModelRegistry, PreparedModelCall
from actoviq.providers.stream import ModelStream, StreamMapper, abort_reason, check_call_available
from actoviq.providers.tool_names import (
    ANTHROPIC_TOOL_NAMES,
    OPENAI_TOOL_NAMES,
    ToolNameError,
    ToolNameMap,
    ToolNameRule,
)
from actoviq.providers.types import (
    FinishReason,
    ModelCallContext,
    ModelOutputSchema,
    ModelReasoningRequest,
    ModelRefLike,
    ModelRequest,
    ModelResponse,
    ModelStreamEvent,
    ModelToolDefinition,
    ModelToolPolicy,
    OutputModality,
    ProviderEvent,
    ReasoningDelta,
    ReasoningEffort,
    ReasoningSummary,
    RefusalDelta,
    ResolvedModel,
    ResponseCompleted,
    TextDelta,
    ToolCallDelta,
    ToolChoice,
    UsageReport,
    stream_event_from_json,
)

__all__ = [
    "ALL_CAPABILITIES",
    "ANTHROPIC_FALLBACK_MAX_TOKENS",
    "ANTHROPIC_MAX_OUTPUT_TOKENS",
    "ANTHROPIC_MESSAGES_CAPABILITIES",
    "ANTHROPIC_TOOL_NAMES",
    "CAPABILITY_NAMES",
    "DEFAULT_ANTHROPIC_MODEL",
    "DEFAULT_OPENAI_MODEL",
    "LEGACY_CAPABILITIES",
    "MINIMAL_CAPABILITIES",
    "OPENAI_CHAT_COMPAT_CAPABILITIES",
    "OPENAI_RESPONSES_CAPABILITIES",
    "OPENAI_TOOL_NAMES",
    "BaseModelProvider",
    "CapabilitiesSource",
    "CapabilityResolver",
    "FinishReason",
    "InputCapabilities",
    "MissingAPIKeyError",
    "MissingExtraError",
    "ModelCallAbortedError",
    "ModelCallContext",
    "ModelCallTimeoutError",
    "ModelCapabilities",
    "ModelCapability",
    "ModelOutputSchema",
    "ModelOwnershipError",
    "ModelProvider",
    "ModelReasoningRequest",
    "ModelRefLike",
    "ModelRegistry",
    "ModelRequest",
    "ModelResponse",
    "ModelStream",
    "ModelStreamEvent",
    "ModelToolDefinition",
    "ModelToolPolicy",
    "OpenAICompat",
    "OutputCapabilities",
    "OutputModality",
    "PreparedCall",
    "PreparedModelCall",
    "ProviderConfigurationError",
    "ProviderEvent",
    "ProviderOptionsError",
    "ProviderStreamError",
    "ReasoningCapabilities",
    "ReasoningDelta",
    "ReasoningEffort",
    "ReasoningSummary",
    "RefusalDelta",
    "ResolvedModel",
    "ResponseCompleted",
    "StreamConsumedError",
    "StreamMapper",
    "TextDelta",
    "ToolCallDelta",
    "ToolCapabilities",
    "ToolChoice",
    "ToolNameError",
    "ToolNameMap",
    "ToolNameRule",
    "UsageReport",
    "abort_reason",
    "anthropic_max_tokens",
    "assert_request_capabilities",
    "check_call_available",
    "has_capability",
    "merge_capabilities",
    "models_from_environment",
    "namespaced_options",
    "required_capabilities_for_request",
    "resolve_model_capabilities",
    "stream_event_from_json",
    "unsupported_capabilities",
]
