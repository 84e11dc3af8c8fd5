"""The item scan behind the capability check: remembered across turns, always exact.

``scan_items`` remembers long transcripts so that the next request extending one scans only the
new items (a session's per-turn cost must not grow with its history). These tests pin that the
result is always what a full scan gives, whatever sequence of requests arrives, and that the
remembered scan is really used (each test fails if the memo is removed or wrong).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actoviq.core import (
    CanonicalItem,
    CapabilityError,
    ImageItem,
    ModelRefParts,
    RawItem,
    ReasoningItem,
    TextItem,
    ToolCallItem,
    UrlSource,
)
from actoviq.providers import (
    ALL_CAPABILITIES,
    ModelRequest,
    ResolvedModel,
    _item_scan,
    assert_request_capabilities,
    required_capabilities_for_request,
)
from actoviq.providers._item_scan import MEMO_FROM_ITEMS, scan_items

MODEL = ResolvedModel(provider_id="p", model_id="m", ref=ModelRefParts(provider="p", model="m"))


def _full(items: tuple[object, ...]) -> tuple[list[type[Any]], list[int]]:
    """What a scan must give: the types in first-appearance order, the bound items' ids."""
    types = list(dict.fromkeys(map(type, items)))
    bound = [id(item) for item in items if isinstance(item, RawItem | ReasoningItem)]
    return types, bound


def _as_full(scan: _item_scan.ItemScan) -> tuple[list[type[Any]], list[int]]:
    return list(scan[0]), [id(item) for item in scan[1]]


@pytest.fixture(autouse=True)
def _fresh_memo() -> Iterator[None]:
    _item_scan._memo.clear()  # pyright: ignore[reportPrivateUsage]
    yield
    _item_scan._memo.clear()  # pyright: ignore[reportPrivateUsage]


def _texts(count: int, prefix: str = "m") -> list[CanonicalItem]:
    return [TextItem(role="user", text=f"{prefix}{index}") for index in range(count)]


def test_an_extended_transcript_scans_only_its_new_items(monkeypatch: pytest.MonkeyPatch) -> None:
    scanned: list[int] = []
    full_scan = _item_scan._scan  # pyright: ignore[reportPrivateUsage]

    def counting(items: tuple[object, ...]) -> _item_scan.ItemScan:
        scanned.append(len(items))
        return full_scan(items)

    monkeypatch.setattr(_item_scan, "_scan", counting)
    history = tuple(_texts(200))
    first = scan_items(history)
    call = ToolCallItem(id="c", name="t", input={})
    second = scan_items((*history, call))
    assert scanned == [200, 1]
    assert list(first[0]) == [TextItem]
    assert list(second[0]) == [TextItem, ToolCallItem]
    # The next run of a session re-decodes the last turn: equal, not identical, items still
    # count as the remembered prefix.
    redecoded = TextItem(role="user", text="m199")
    third = (*history[:-1], redecoded, call, TextItem(role="user", text="next"))
    assert _as_full(scan_items(third)) == _full(third)
    assert scanned[-1] == 1  # only the new message: the prefix of 201 items was remembered


def test_a_changed_prefix_is_scanned_again_and_finds_the_new_type() -> None:
    history = _texts(100)
    scan_items(tuple(history))
    changed = list(history)
    changed[50] = ImageItem(source=UrlSource(url="https://example.test/a.png"))
    items = tuple(changed)
    assert _as_full(scan_items(items)) == _full(items)
    request = ModelRequest(model="p:m", input=items)
    assert "input.image" in required_capabilities_for_request(request)


def test_a_foreign_reasoning_item_in_the_new_turn_is_refused_after_a_remembered_prefix() -> None:
    history = (*_texts(80), ReasoningItem(opaque={"k": 1}, provider="p"))
    request = ModelRequest(model="p:m", input=history)
    assert_request_capabilities("p", MODEL, ALL_CAPABILITIES, request)  # its own: accepted
    foreign = ReasoningItem(opaque={"k": 2}, provider="other")
    extended = ModelRequest(model="p:m", input=(*history, foreign))
    with pytest.raises(CapabilityError) as caught:
        assert_request_capabilities("p", MODEL, ALL_CAPABILITIES, extended)
    assert caught.value.capability == "reasoning.opaqueRoundTrip"
    raw = ModelRequest(model="p:m", input=(*history, RawItem(provider="other", value=1)))
    with pytest.raises(CapabilityError) as raw_caught:
        assert_request_capabilities("p", MODEL, ALL_CAPABILITIES, raw)
    assert raw_caught.value.capability == "providerRawRoundTrip"


def test_a_foreign_item_in_the_remembered_prefix_is_still_refused() -> None:
    history = (*_texts(80), RawItem(provider="other", value=1))
    scan_items(history)
    extended = ModelRequest(model="p:m", input=(*history, TextItem(role="user", text="x")))
    with pytest.raises(CapabilityError) as caught:
        assert_request_capabilities("p", MODEL, ALL_CAPABILITIES, extended)
    assert caught.value.capability == "providerRawRoundTrip"


class _Unequal:
    """An input entry whose comparison raises (never a canonical item)."""

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("cannot compare")

    __hash__ = object.__hash__


def test_an_item_whose_comparison_raises_falls_back_to_a_full_scan() -> None:
    history = _texts(100)
    odd = _Unequal()
    first = (*history[:2], odd, *history[2:])
    scan_items(first)
    second = (*history[:2], _Unequal(), *history[2:], TextItem(role="user", text="x"))
    assert _as_full(scan_items(second)) == _full(second)


def test_the_memo_is_bounded() -> None:
    for session in range(100):
        scan_items(tuple(_texts(MEMO_FROM_ITEMS, prefix=f"s{session}-")))
    assert 0 < len(_item_scan._memo) <= _item_scan._MEMO_LIMIT  # pyright: ignore[reportPrivateUsage]


def test_short_transcripts_are_not_remembered() -> None:
    scan_items(tuple(_texts(MEMO_FROM_ITEMS - 1)))
    assert not _item_scan._memo  # pyright: ignore[reportPrivateUsage]


_POOL: list[object] = [
    *_texts(6, prefix="p"),
    ToolCallItem(id="c", name="t", input={}),
    ImageItem(source=UrlSource(url="https://example.test/i.png")),
    ReasoningItem(opaque=None, provider="p"),
    ReasoningItem(opaque=None, provider="q"),
    RawItem(provider="p", value=1),
]


@st.composite
def _requests(draw: st.DrawFn) -> list[tuple[object, ...]]:
    """A sequence of transcripts: extensions, edits, re-decoded copies and unrelated ones."""
    base = draw(st.lists(st.sampled_from(_POOL), min_size=MEMO_FROM_ITEMS, max_size=90))
    current = list(base)
    out = [tuple(current)]
    for step in draw(st.lists(st.integers(0, 4), min_size=1, max_size=8)):
        if step == 0:  # a turn appends items
            current = current + draw(st.lists(st.sampled_from(_POOL), max_size=4))
        elif step == 1:  # an item replaced in place
            index = draw(st.integers(0, len(current) - 1))
            current = list(current)
            current[index] = draw(st.sampled_from(_POOL))
        elif step == 2:  # the last items decoded again: equal values, new objects
            current = current[:-2] + [
                TextItem(role="user", text=item.text) if isinstance(item, TextItem) else item
                for item in current[-2:]
            ]
        elif step == 3:  # the history shortened (compaction, another session)
            current = current[: draw(st.integers(2, len(current)))]
        else:  # the same tuple again
            out.append(out[-1])
            continue
        out.append(tuple(current))
    return out


@settings(max_examples=60, deadline=None)
@given(_requests())
def test_any_sequence_of_requests_scans_as_a_full_scan(requests: list[tuple[object, ...]]) -> None:
    _item_scan._memo.clear()  # pyright: ignore[reportPrivateUsage]
    for items in requests:
        assert _as_full(scan_items(items)) == _full(items)
