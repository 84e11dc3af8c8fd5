"""Registry, capabilities, preflight and the scripted provider (02 §5.4, §5.5)."""

from __future__ import annotations

import attrs
import pytest

from actoviq.core import (
    UNSET,
    AbortController,
    ArtifactRefItem,
    AudioItem,
    Base64Source,
    CapabilityError,
    DocumentItem,
    ErrorItem,
    ImageItem,
    ModelRefError,
    ModelRefParts,
    ModelRegistryError,
    ProviderResponseError,
    ProviderTransportError,
    RawItem,
    ReasoningItem,
    RefusalItem,
    StructuredItem,
    TextItem,
    ToolCallItem,
    ToolResultItem,
    UrlSource,
    Usage,
    from_json,
    to_json,
)
from actoviq.providers import (
    ALL_CAPABILITIES,
    MINIMAL_CAPABILITIES,
    ModelCallContext,
    ModelCapabilities,
    ModelOutputSchema,
    ModelOwnershipError,
    ModelReasoningRequest,
    ModelRegistry,
    ModelRequest,
    ModelResponse,
    ModelToolDefinition,
    ResolvedModel,
    ToolChoice,
    assert_request_capabilities,
    has_capability,
    merge_capabilities,
    required_capabilities_for_request,
    resolve_model_capabilities,
    stream_event_from_json,
    unsupported_capabilities,
)
from actoviq.providers.testing import ScriptedProvider, ScriptedTurn

USER = TextItem(role="user", text="hi")


def req(model: str = "test-model", **kwargs: object) -> ModelRequest:
    return ModelRequest(model=model, input=[USER], **kwargs)  # type: ignore[arg-type]


def resolved(provider: str, model: str = "m") -> ResolvedModel:
    return ResolvedModel(
        provider_id=provider, model_id=model, ref=ModelRefParts(provider=provider, model=model)
    )


async def test_single_provider_routing_prepare_and_generate() -> None:
    provider = ScriptedProvider(["ok"], id="openai-responses")
    registry = ModelRegistry([provider])
    assert registry.provider_for(ModelRefParts(provider="openai-responses", model="x")) is provider
    prepared = await registry.prepare(req())
    assert (prepared.model.provider_id, prepared.model.model_id) == (
        "openai-responses",
        "test-model",
    )
    assert prepared.request.model is prepared.model
    response = await registry.generate(req())
    assert response.output[0] == TextItem(role="assistant", text="ok")
    assert len(provider.calls) == 1
    assert (await registry.resolve("test-model")).provider_id == "openai-responses"
    assert registry.unregister("openai-responses") is True
    with pytest.raises(ModelRegistryError):
        registry.provider_for(ModelRefParts(provider="openai-responses", model="x"))


async def test_registry_errors() -> None:
    provider = ScriptedProvider(id="openai-responses")
    registry = ModelRegistry([provider])
    with pytest.raises(ModelRegistryError, match="already registered"):
        registry.register(provider)
    registry.register(provider, replace=True)
    with pytest.raises(ModelRegistryError, match="Registered providers: openai-responses"):
        registry.get("missing")
    with pytest.raises(ModelRegistryError, match=r"\(none\)"):
        ModelRegistry().get("missing")
    with pytest.raises(ModelRegistryError, match="is not registered"):
        ModelRegistry([provider], default_provider_id="other")
    two = ModelRegistry([ScriptedProvider(id="a"), ScriptedProvider(id="b")])
    assert two.default_provider_id() is None
    with pytest.raises(ModelRefError, match="provider:model"):
        await two.resolve("model")
    assert two.provider_for("b:x").id == "b"
    assert two.provider_for({"provider": "a", "model": "x"}).id == "a"


async def test_default_provider_and_capability_shorthand() -> None:
    provider = ScriptedProvider(["s"], id="custom")
    registry = ModelRegistry(
        [provider, ScriptedProvider(id="other")],
        default_provider_id="custom",
        default_model="custom:m",
    )
    assert registry.has("custom")
    assert registry.list()[0] is provider
    assert registry.default_model == "custom:m"
    assert (await registry.capabilities("m")).streaming
    assert (await registry.capabilities(resolved("custom"))).streaming
    assert registry.provider_for(resolved("custom")) is provider
    async with registry.stream(req("m")) as stream:
        assert (await stream.final_response()).text == "s"
    assert registry.unregister("missing") is False


async def test_registry_stream_preflights_before_provider_call() -> None:
    provider = ScriptedProvider(["never"], default_capabilities=MINIMAL_CAPABILITIES)
    registry = ModelRegistry([provider])
    stream = registry.stream(req())  # lazy: never raises here
    with pytest.raises(CapabilityError) as info:
        await stream.final_response()
    assert "streaming" in info.value.capabilities
    assert provider.calls == []
    with pytest.raises(CapabilityError):
        await registry.generate(req(output_schema=ModelOutputSchema(name="a", schema={})))
    assert provider.calls == []


async def test_ownership_errors() -> None:
    provider = ScriptedProvider(id="custom")
    with pytest.raises(ModelOwnershipError, match="cannot resolve"):
        await provider.resolve(ModelRefParts(provider="other", model="m"))
    with pytest.raises(ModelOwnershipError, match="belongs to"):
        await provider.capabilities(resolved("other"))
    with pytest.raises(ModelOwnershipError, match="belongs to") as info:
        await provider.generate(ModelRequest(model=resolved("other"), input=[USER]))
    assert isinstance(info.value, TypeError)


async def test_capability_resolution_order() -> None:
    model = resolved("p", "exact")
    defaults = MINIMAL_CAPABILITIES
    assert await resolve_model_capabilities(None, defaults, model) is defaults
    full = merge_capabilities(defaults, {"input.image": True})
    assert await resolve_model_capabilities(full, defaults, model) is full
    star = merge_capabilities(defaults, {"streaming": True})
    exact = merge_capabilities(defaults, {"input": {"audio": True}})
    assert await resolve_model_capabilities({"exact": exact, "*": star}, defaults, model) is exact
    assert await resolve_model_capabilities({"*": star}, defaults, model) is star
    assert await resolve_model_capabilities({}, defaults, model) is defaults

    async def resolver(m: ResolvedModel) -> ModelCapabilities:
        return merge_capabilities(ALL_CAPABILITIES, {"streaming": False})

    resolved_caps = await resolve_model_capabilities({"*": star}, defaults, model, resolver)
    assert resolved_caps.streaming is False
    assert resolved_caps.input.audio is True
    provider = ScriptedProvider(id="p", capabilities={"*": star}, default_capabilities=defaults)
    assert (await provider.capabilities(model)).streaming is True
    with pytest.raises(ValueError, match="Unknown capability"):
        merge_capabilities(defaults, {"input.smell": True})


def test_required_capabilities_rich_request() -> None:
    src = Base64Source(media_type="x/y", data="AA==")
    request = ModelRequest(
        model="p:m",
        input=[
            USER,
            ImageItem(source=UrlSource(url="https://x")),
            AudioItem(source=src),
            DocumentItem(source=src),
            ArtifactRefItem(artifact_id="a"),
            ToolCallItem(id="c", name="t", input={}),
            ToolResultItem(call_id="c", status="success", output=None),
            ReasoningItem(opaque=None),
            StructuredItem(value=1),
            RefusalItem(message="no"),
            ErrorItem(source="tool", code="E", message="m", retryable=False),
            RawItem(provider="p", value=1),
        ],
        output_schema=ModelOutputSchema(name="o", schema={}),
        reasoning=ModelReasoningRequest(),
        prompt_cache_key="k",
        stop_sequences=["s"],
        tools=[ModelToolDefinition(name="web", hosted=True)],
        parallel_tool_calls=True,
        output_modalities=["text", "image", "audio"],
    )
    needed = required_capabilities_for_request(request, streaming=True)
    assert needed[0] == "output.text"
    for name in (
        "streaming", "output.structured", "reasoning.request", "promptCaching", "stopSequences",
        "tools.function", "tools.hosted", "tools.parallel", "input.image", "input.audio",
        "input.document", "input.artifact", "reasoning.opaqueRoundTrip", "providerRawRoundTrip",
        "output.image", "output.audio",
    ):  # fmt: skip
        assert name in needed
    assert "streaming" in unsupported_capabilities(MINIMAL_CAPABILITIES, needed)
    with pytest.raises(CapabilityError, match="does not support required capabilities"):
        assert_request_capabilities("p", resolved("p"), MINIMAL_CAPABILITIES, request)
    assert_request_capabilities("p", resolved("p"), ALL_CAPABILITIES, request)
    assert has_capability(ALL_CAPABILITIES, "input.image")
    assert not has_capability(ALL_CAPABILITIES, "missing.value")


def test_foreign_raw_and_reasoning_items_are_refused() -> None:
    raw = ModelRequest(model="p:m", input=[RawItem(provider="other", value={})])
    with pytest.raises(CapabilityError, match="cannot be sent") as info:
        assert_request_capabilities("p", resolved("p"), ALL_CAPABILITIES, raw)
    assert info.value.capability == "providerRawRoundTrip"
    foreign = ModelRequest(model="p:m", input=[ReasoningItem(provider="other", opaque={})])
    with pytest.raises(CapabilityError, match="Reasoning item"):
        assert_request_capabilities("p", resolved("p"), ALL_CAPABILITIES, foreign)


def test_a_long_transcript_is_checked_by_item_type_in_first_appearance_order() -> None:
    history = [TextItem(role="user", text=f"m{n}") for n in range(500)]
    own = ReasoningItem(provider="p", opaque={})
    request = ModelRequest(
        model="p:m",
        input=[*history, ToolCallItem(id="c", name="t", input={}), own, *history],
    )
    assert required_capabilities_for_request(request)[1:] == [
        "input.text",
        "tools.function",
        "reasoning.opaqueRoundTrip",
    ]
    assert_request_capabilities("p", resolved("p"), ALL_CAPABILITIES, request)
    # one foreign item deep in a long transcript is still found, raw or reasoning
    for foreign in (RawItem(provider="other", value=1), ReasoningItem(provider="o", opaque=1)):
        mixed = ModelRequest(model="p:m", input=[*history, own, *history, foreign, *history])
        with pytest.raises(CapabilityError, match="cannot be sent"):
            assert_request_capabilities("p", resolved("p"), ALL_CAPABILITIES, mixed)
    # a subclass of a provider-bound item type is checked like the type itself
    sub = attrs.make_class("ForeignRaw", {}, bases=(RawItem,), frozen=True, slots=True)
    wrapped = ModelRequest(model="p:m", input=[*history, sub(provider="other", value=1)])
    with pytest.raises(CapabilityError, match="Raw item"):
        assert_request_capabilities("p", resolved("p"), ALL_CAPABILITIES, wrapped)


def test_wire_round_trip_of_request_response_and_events() -> None:
    request = ModelRequest(
        model=resolved("p"),
        input=[USER],
        tools=[ModelToolDefinition(name="t", input_schema={"type": "object"}, strict=True)],
        tool_policy=ToolChoice(name="t"),
        reasoning=ModelReasoningRequest(effort="high", budget_tokens=10),
        stop_sequences=["x"],
        provider_options={"p": {"a": 1}},
    )
    data = to_json(request)
    assert data["toolPolicy"] == {"type": "tool", "name": "t"}
    assert data["reasoning"] == {"effort": "high", "budgetTokens": 10}
    assert data["model"]["providerId"] == "p"
    assert from_json(ModelRequest, data) == request
    response = ModelResponse(id="r", model=resolved("p"), output=[], structured_output=None)
    wire = to_json(response)
    assert wire["structuredOutput"] is None and "rawResponse" not in wire
    assert from_json(ModelResponse, wire) == response
    assert response.has_structured_output
    absent = ModelResponse(id="r", model=resolved("p"), output=[])
    assert absent.structured_output is UNSET and "structuredOutput" not in to_json(absent)
    event = stream_event_from_json(
        {"type": "tool_call.delta", "callId": "c", "argumentsDelta": "{"}
    )
    assert to_json(event) == {"type": "tool_call.delta", "callId": "c", "argumentsDelta": "{"}
    controller = AbortController()
    assert to_json(ModelCallContext(run_id="r", signal=controller.signal)) == {"runId": "r"}


async def test_scripted_provider_turns_records_and_errors() -> None:
    call = ToolCallItem(id="c1", name="lookup", input={"q": 1})
    provider = ScriptedProvider(
        [
            ScriptedTurn(tool_calls=[call], reasoning="think", usage={"inputTokens": 3}),
            ScriptedTurn(text="done", stream_deltas=["do", "ne"]),
            ProviderTransportError("busy", status=503, retryable=True),
            ScriptedTurn(text="x", error=ValueError("mid"), error_after_events=1),
        ],
        id="scripted",
    )
    first = await provider.generate(req("scripted:m"))
    assert first.finish_reason == "tool_calls"
    assert [item.type for item in first.output] == ["reasoning", "tool_call"]
    assert isinstance(first.usage, Usage)
    assert first.usage.input_tokens == 3 and first.usage.requests == 1
    async with provider.stream(req("scripted:m")) as stream:
        deltas = [e.delta async for e in stream if e.type == "text.delta"]
    assert deltas == ["do", "ne"]
    with pytest.raises(ProviderTransportError):
        await provider.generate(req("scripted:m"))
    seen: list[str] = []

    async def consume() -> None:
        async with provider.stream(req("scripted:m")) as stream:
            async for event in stream:
                seen.append(event.type)

    with pytest.raises(ValueError, match="mid"):
        await consume()
    assert seen == ["text.delta"]
    with pytest.raises(ProviderResponseError, match="no scripted turn"):
        await provider.generate(req("scripted:m"))
    assert [c.streaming for c in provider.calls] == [False, True, False, True, False]
    assert all(isinstance(r.model, ResolvedModel) for r in provider.requests)


async def test_scripted_delay_is_abortable() -> None:
    controller = AbortController()
    provider = ScriptedProvider([ScriptedTurn(text="slow", delay=30)])
    controller.abort(RuntimeError("stop now"))
    with pytest.raises(RuntimeError, match="stop now"):
        await provider.generate(req("scripted:m"), ModelCallContext(signal=controller.signal))
    assert provider.calls == []  # aborted before the call was made


def test_string_routes_follow_registration_changes() -> None:
    first, second = ScriptedProvider(id="a"), ScriptedProvider(id="a")
    registry = ModelRegistry([first])
    assert registry.provider_for("m") is first  # bare name: the only provider
    assert registry.provider_for("a:m") is first
    registry.register(second, replace=True)
    assert registry.provider_for("a:m") is second and registry.provider_for("m") is second
    other = ScriptedProvider(id="b")
    registry.register(other)
    with pytest.raises(ModelRefError, match="provider:model"):
        registry.provider_for("m")  # two providers: a bare name has no default any more
    assert registry.unregister("a")
    with pytest.raises(ModelRegistryError, match="Unknown model provider a"):
        registry.provider_for("a:m")
    assert registry.provider_for("m") is other


def test_the_verdict_for_one_capabilities_object_never_leaks_to_another() -> None:
    model = resolved("p")
    for _ in range(3):  # the first call computes, the next ones are remembered
        assert_request_capabilities("p", model, ALL_CAPABILITIES, req(), streaming=True)
    no_streaming = attrs.evolve(ALL_CAPABILITIES, streaming=False)
    with pytest.raises(CapabilityError, match="streaming"):
        assert_request_capabilities("p", model, no_streaming, req(), streaming=True)
    assert_request_capabilities("p", model, no_streaming, req(), streaming=False)
    for _ in range(600):  # more distinct objects than the memo keeps: it starts over, still right
        fresh = attrs.evolve(ALL_CAPABILITIES, streaming=False)
        with pytest.raises(CapabilityError, match="streaming"):
            assert_request_capabilities("p", model, fresh, req(), streaming=True)
