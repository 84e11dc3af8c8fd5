from __future__ import annotations

import copy
import dataclasses
import enum
import json
import re
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, cast

import pytest

from actoviq.core import RunError, TextItem
from actoviq.events import (
    DEFAULT_REPLACEMENT,
    EventValidationError,
    RedactionError,
    RedactionPolicy,
    RedactionProcessor,
    Redactor,
    RunEvent,
    normalize_key,
    redact_text,
    redact_value,
)

R = DEFAULT_REPLACEMENT


@pytest.mark.parametrize(
    "key",
    [
        "authorization",
        "Authorization",
        "proxy-authorization",
        "token",
        "apiToken",
        "access_token",
        "refresh-token",
        "idToken",
        "session_token",
        "x-auth-token",
        "api_key",
        "apiKey",
        "API-KEY",
        "apikey",
        "x-api-key",
        "X-Api-Key",
        "openai_api_key",
        "OPENAI_API_KEY",
        "private_key",
        "secret_key",
        "aws_secret_access_key",
        "secret",
        "clientSecret",
        "client_secret",
        "shared-secret",
        "password",
        "db_password",
        "passwd",
        "passphrase",
        "cookie",
        "Set-Cookie",
        "credentials",
        "signature",
        "encrypted_content",
    ],
)
def test_sensitive_keys(key: str) -> None:
    redactor = Redactor()
    assert redactor.is_sensitive_key(key)
    assert redactor.redact({key: {"nested": "value"}}) == {key: R}


@pytest.mark.parametrize(
    "key",
    [
        "inputTokens",
        "outputTokens",
        "maxTokens",
        "total_tokens",
        "key",
        "monkey",
        "turn",
        "agentId",
        "callId",
        "tokenizer",
        "author",
        "model",
        "usage",
        "name",
        "secretary",
    ],
)
def test_ordinary_keys(key: str) -> None:
    assert not Redactor().is_sensitive_key(key)


def test_normalize_key() -> None:
    assert normalize_key("X-API-Key") == "x_api_key"
    assert normalize_key("clientSecret") == "client_secret"
    assert normalize_key("HTTPAuthorization") == "http_authorization"
    assert normalize_key("set cookie") == "set_cookie"


def test_default_processor_case_from_the_reference() -> None:
    source: dict[str, Any] = {
        "headers": {"authorization": "Bearer x", "harmless": "ok"},
        "apiKey": "k",
        "nested": [{"password": "p", "n": 1}],
        "text": "my key is sk-abcdefgh",
    }
    before = copy.deepcopy(source)
    event = RunEvent(
        event_id="e",
        sequence=1,
        run_id="r",
        trace_id="a" * 32,
        span_id="b" * 16,
        type="tool.completed",
        timestamp="2026-01-01T00:00:00.000Z",
        data=source,
    )
    processed = RedactionProcessor().process(event)
    assert processed.data == {
        "headers": {"authorization": R, "harmless": "ok"},
        "apiKey": R,
        "nested": [{"password": R, "n": 1}],
        "text": "my key is sk-abcdefgh",  # no content scanning by default
    }
    assert source == before
    assert event.data is source
    assert processed.event_id == event.event_id
    assert processed.sequence == event.sequence


def test_additional_keys_strings_and_patterns() -> None:
    redactor = Redactor(
        RedactionPolicy(additional_keys=("SSN", re.compile(r"x-internal-.*", re.I)))
    )
    assert redactor.redact({"ssn": 1, "X-Internal-Trace": "t", "other": 2}) == {
        "ssn": R,
        "X-Internal-Trace": R,
        "other": 2,
    }
    only_extra = Redactor(RedactionPolicy(additional_keys=("mine",), default_keys=False))
    assert only_extra.redact({"password": "p", "mine": "m"}) == {"password": "p", "mine": R}
    with pytest.raises(EventValidationError):
        RedactionPolicy(additional_keys=(" ",))
    with pytest.raises(EventValidationError):
        RedactionPolicy(additional_keys=(3,))  # type: ignore[arg-type]
    with pytest.raises(EventValidationError):
        RedactionPolicy(max_depth=0)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("Authorization: Bearer abc.def-ghi", "abc.def-ghi"),
        ("auth basic dXNlcjpwYXNz", "dXNlcjpwYXNz"),
        ("api_key=supersecretvalue1 next", "supersecretvalue1"),
        ('{"password": "hunter2"}', "hunter2"),
        ("client-secret: s3cr3t;", "s3cr3t"),
        ("GET /v1?api_key=abc123&x=1", "abc123"),
        ("https://example.com/cb?token=tok999#frag", "tok999"),
        ("key sk-proj-abcdEFGH1234 here", "sk-proj-abcdEFGH1234"),
        ("(ghp_abcdefghijklmnop)", "ghp_abcdefghijklmnop"),
        ("github_pat_11ABCDEFG_xyz", "github_pat_11ABCDEFG_xyz"),
        ("slack xoxb-1234-5678", "xoxb-1234-5678"),
        ("aws AKIAABCDEFGHIJKLMNOP.", "AKIAABCDEFGHIJKLMNOP"),
        ("gcp AIzaSyA1234567890abcdefghij", "AIzaSyA1234567890abcdefghij"),
        ("db postgres://admin:pw123@db:5432/app", "pw123"),
        ("https://user:pass@example.com/x", "user:pass"),
    ],
)
def test_text_scanning_removes_secret_shapes(text: str, secret: str) -> None:
    redacted = redact_text(text)
    assert secret not in redacted
    assert R in redacted
    scanning = Redactor(RedactionPolicy(scan_text=True))
    assert secret not in str(scanning.redact({"note": text, "list": [text]}))


@pytest.mark.parametrize(
    "text",
    [
        "task-based planning is basic",
        "the token count was 12",
        "see https://example.com/path?q=1",
        "AKIA is a prefix",
        "ask-me anything",
    ],
)
def test_text_scanning_keeps_ordinary_text(text: str) -> None:
    assert redact_text(text) == text


class Color(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Config:
    name: str
    api_key: str


class Model:
    """Duck-typed pydantic model."""

    def model_dump(self, *, mode: str) -> dict[str, Any]:
        assert mode == "json"
        return {"client_secret": "s", "ok": True}


class Opaque:
    pass


class FrozenMap(Mapping[str, Any]):
    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


def test_non_json_values_become_strict_json() -> None:
    value: dict[Any, Any] = {
        "tuple": (1, 2),
        "set": frozenset({3}),
        "enum": Color.RED,
        "date": datetime(2026, 1, 1, tzinfo=UTC),
        "bytes": b"\x00\x01",
        "nan": float("nan"),
        "dataclass": Config(name="n", api_key="k"),
        "model": Model(),
        "item": TextItem(role="user", text="hi", metadata={"token": "t"}),
        "error": RunError("failed at https://u:p@host", code="X"),
        "object": Opaque(),
        "mapping": FrozenMap({"password": "p", "v": 1}),
        7: "int key",
    }
    assert Redactor().redact(value) == {
        "tuple": [1, 2],
        "set": [3],
        "enum": "red",
        "date": "2026-01-01T00:00:00+00:00",
        "bytes": "[2 bytes]",
        "nan": None,
        "dataclass": {"name": "n", "api_key": R},
        "model": {"client_secret": R, "ok": True},
        "item": {"type": "text", "role": "user", "text": "hi", "metadata": {"token": R}},
        "error": {"name": "RunError", "message": f"failed at https://{R}@host", "code": "X"},
        "object": "[object Opaque]",
        "mapping": {"password": R, "v": 1},
        "7": "int key",
    }


def test_cycles_become_markers_and_shared_values_are_cloned() -> None:
    shared = {"x": 1}
    cyclic: dict[str, Any] = {"shared": [shared, shared]}
    cyclic["self"] = cyclic
    result = redact_value(cyclic)
    assert result == {"shared": [{"x": 1}, {"x": 1}], "self": "[Circular]"}


class _AddressReuser:
    """A model whose ``model_dump`` returns a new dict at the address ``freed`` names, if free.

    CPython hands a freed object's memory to the next objects of its size, so a new dict lands
    on a freed address within a few allocations; up to 2,000 are tried (all kept alive while
    trying, so each try gets a new address).
    """

    def __init__(self, freed: list[int]) -> None:
        self._freed = freed

    def model_dump(self, *, mode: str) -> dict[str, Any]:
        tried: list[dict[str, Any]] = []
        for _ in range(2000):
            candidate: dict[str, Any] = {"reused": True}
            if id(candidate) == self._freed[0]:
                return candidate
            tried.append(candidate)
        return {"reused": True}


class _DumpsToAFreshDict:
    def __init__(self, freed: list[int]) -> None:
        self._freed = freed

    def model_dump(self, *, mode: str) -> dict[str, Any]:
        # "color" is walked first (a stack) and converted to a str, which drops the walk's last
        # reference to this dict while "later" is still to be walked below it.
        dumped: dict[str, Any] = {"later": _AddressReuser(self._freed), "color": Color.RED}
        self._freed.append(id(dumped))
        return dumped


@pytest.mark.parametrize("nested", [False, True])
def test_a_converted_container_freed_mid_walk_is_not_a_cycle(nested: bool) -> None:
    # The walk detects cycles by id(); a container it converted (a model's dump, a tuple's
    # list) must stay alive while its id is recorded, or a later object given the same address
    # would be taken for an ancestor and replaced by "[Circular]".
    freed: list[int] = []
    model = _DumpsToAFreshDict(freed)
    dumped = {"later": {"reused": True}, "color": "red"}
    if nested:  # under a tuple (itself converted) in a dict
        assert Redactor().redact({"p": (model,)}) == {"p": [dumped]}
    else:
        assert Redactor().redact(model) == dumped


def test_nested_tuples_in_a_read_only_mapping_are_never_cycles() -> None:
    # The shape that showed the id reuse without any help: the mapping proxy's converted dict
    # was freed at the first tuple's conversion and a later tuple's list took its address.
    redactor = Redactor()
    for size in range(1, 12):
        proxy = MappingProxyType(
            {f"k{index}": (index, (index,), {"x": (index,)}) for index in range(size)}
        )
        assert redactor.redact({"p": proxy}) == {
            "p": {f"k{index}": [index, [index], {"x": [index]}] for index in range(size)}
        }


def test_iterative_walk_handles_depth_up_to_the_bound() -> None:
    deep: Any = "leaf"
    for _ in range(5000):
        deep = [deep]
    redactor = Redactor(RedactionPolicy(max_depth=6000))
    result: Any = redactor.redact(deep)
    for _ in range(5000):
        result = result[0]
    assert result == "leaf"
    with pytest.raises(RedactionError, match="deeper than 576"):  # MAX_WIRE_DEPTH
        Redactor().redact(deep)


def test_unreadable_values_fail_closed_without_leaking() -> None:
    class Exploding(Mapping[str, Any]):
        def __getitem__(self, key: str) -> Any:
            raise KeyError("sk-test-CANARYSECRET")

        def __iter__(self) -> Iterator[str]:
            return iter(["a"])

        def __len__(self) -> int:
            return 1

    with pytest.raises(RedactionError) as caught:
        Redactor().redact({"value": Exploding()})
    assert "CANARY" not in str(caught.value)
    assert caught.value.__cause__ is None


def test_replacement_is_configurable() -> None:
    redactor = Redactor(RedactionPolicy(replacement="***", scan_text=True))
    assert redactor.redact({"token": "t", "note": "Bearer abc"}) == {
        "token": "***",
        "note": "Bearer ***",
    }
    assert redactor.policy.replacement == "***"


# -- tool-call argument text (issue 11 §5) --------------------------------------------------------


def run_event(type: str, data: object) -> RunEvent:
    return RunEvent(
        event_id="e",
        sequence=1,
        run_id="r",
        trace_id="a" * 32,
        span_id="b" * 16,
        type=type,
        timestamp="2026-01-01T00:00:00.000Z",
        data=cast(Any, data),
    )


def test_whole_argument_json_is_redacted_by_key_and_fragments_are_withheld() -> None:
    redactor = Redactor()
    assert redactor.redact({"arguments": '{"apiKey": "s3cret", "n": 1}'}) == {
        "arguments": '{"apiKey":"[REDACTED]","n":1}'
    }
    assert redactor.redact({"arguments": '{"n": 1}'}) == {"arguments": '{"n": 1}'}  # untouched
    for piece in ('{"apiKey": "s3', '"s3cret"', "3", 'cret"}'):
        assert redactor.redact({"partial_json": piece}) == {"partial_json": "[REDACTED]"}
        assert redactor.redact([{"argumentsDelta": piece}]) == [{"argumentsDelta": "[REDACTED]"}]
    raw = Redactor(RedactionPolicy(raw_argument_deltas=True))
    assert raw.redact({"partial_json": '{"apiKey": "s3'}) == {"partial_json": '{"apiKey": "s3'}
    assert raw.redact({"arguments": '{"apiKey": "s"}'}) == {"arguments": '{"apiKey":"[REDACTED]"}'}


def test_json_held_in_any_string_is_redacted_by_key() -> None:
    nested = json.dumps({"outer": json.dumps({"client-secret": "s3cret", "ok": True})})
    out = json.dumps(Redactor().redact({"note": nested, "list": [nested]}))
    assert "s3cret" not in out and "[REDACTED]" in out
    assert Redactor().redact({"note": "{not json"}) == {"note": "{not json"}


def test_tool_call_deltas_carry_lengths_and_the_whole_arguments_once() -> None:
    processor = RedactionProcessor()
    pieces = ['{"cfg": {"api', '_key": "s3', 'cret"}, "n": [1, 2]', "}"]
    out = [
        processor.process(run_event("model.tool_call.delta", {"callId": "c", "argumentsDelta": p}))
        for p in pieces
    ]
    data = [cast(dict[str, Any], e.data) for e in out]
    assert [d["argumentsLength"] for d in data] == [len(p) for p in pieces]
    assert all("argumentsDelta" not in d for d in data)
    assert [d.get("arguments") for d in data] == [
        None,
        None,
        None,
        {"cfg": {"api_key": "[REDACTED]"}, "n": [1, 2]},
    ]
    assert "s3" not in json.dumps(data)


def test_a_run_end_forgets_unfinished_arguments() -> None:
    processor = RedactionProcessor()

    def delta(piece: str) -> dict[str, Any]:
        event = run_event("model.tool_call.delta", {"callId": "c", "argumentsDelta": piece})
        return cast(dict[str, Any], processor.process(event).data)

    assert "arguments" not in delta('{"a": ')
    processor.process(run_event("run.failed", {"error": {}}))
    assert delta('{"b": 1}')["arguments"] == {"b": 1}  # not glued to the forgotten piece


def test_argument_streams_are_bounded() -> None:
    from actoviq.events.arguments import MAX_ARGUMENT_TEXT, ArgumentStreams

    streams = ArgumentStreams(max_calls=2)
    for call in ("a", "b", "c"):
        assert streams.add("r", call, '{"x": ') is None
    assert len(streams) == 2  # the oldest call was forgotten
    assert streams.add("r", "a", "1}") is None  # its first piece is gone
    assert streams.add("r", "c", "1}") == {"x": 1}
    big = ArgumentStreams()
    assert big.add("r", "x", '{"v": "' + "a" * MAX_ARGUMENT_TEXT) is None
    assert big.add("r", "x", '"}') is None  # too long to assemble: never emitted
    big.forget_run("r")
    assert len(big) == 0
