"""StoredItems: columns that read as a sequence of StoredSessionItem records."""

from __future__ import annotations

import gc

import pytest

from actoviq.runtime.stores import StoredItems, StoredSessionItem

T0 = "2026-01-01T00:00:00.000Z"


def _columns() -> StoredItems:
    return StoredItems(
        first_sequence=4,
        item_ids=["a", "b", "c"],
        kinds=["text", "tool_call", "text"],
        payloads=[{"n": 1}, {"n": 2}, {"n": 3}],
        created_at=[T0, T0, "2026-01-02T00:00:00.000Z"],
    )


def _records() -> tuple[StoredSessionItem, ...]:
    return (
        StoredSessionItem(sequence=4, item_id="a", kind="text", payload={"n": 1}, created_at=T0),
        StoredSessionItem(
            sequence=5, item_id="b", kind="tool_call", payload={"n": 2}, created_at=T0
        ),
        StoredSessionItem(
            sequence=6,
            item_id="c",
            kind="text",
            payload={"n": 3},
            created_at="2026-01-02T00:00:00.000Z",
        ),
    )


def test_reads_as_the_records() -> None:
    items = _columns()
    expected = _records()
    assert len(items) == 3
    assert tuple(items) == expected
    assert [items[i] for i in range(3)] == list(expected)
    assert items[-1] == expected[-1]
    assert items[1:] == expected[1:]
    assert items == expected and items == list(expected)
    assert items != expected[:2]
    assert items == _columns()
    assert expected[1] in items
    assert items.index(expected[2]) == 2
    assert list(reversed(items)) == list(reversed(expected))
    assert repr(items) == f"StoredItems({expected!r})"


def test_columns_are_exposed_read_only() -> None:
    items = _columns()
    assert items.sequences == range(4, 7)
    assert items.item_ids == ("a", "b", "c")
    assert items.kinds == ("text", "tool_call", "text")
    assert items.payloads == ({"n": 1}, {"n": 2}, {"n": 3})
    assert items.created_at[2] == "2026-01-02T00:00:00.000Z"
    with pytest.raises(AttributeError):
        items.item_ids = ()  # type: ignore[misc]


def test_out_of_range_and_mismatched_columns_are_errors() -> None:
    items = _columns()
    with pytest.raises(IndexError):
        items[3]
    with pytest.raises(ValueError, match="same length"):
        StoredItems(first_sequence=1, item_ids=["a"], kinds=[], payloads=[{}], created_at=[T0])
    with pytest.raises(TypeError):
        hash(items)


def test_holding_a_load_leaves_no_record_for_the_collector() -> None:
    # The point of the columns: nothing per item is tracked until a record is read.
    def tracked() -> int:
        return sum(1 for o in gc.get_objects() if type(o) is StoredSessionItem)

    gc.collect()  # garbage of earlier tests (records held by tracebacks) must not be counted
    before = tracked()
    items = StoredItems(
        first_sequence=1,
        item_ids=[f"i{n}" for n in range(1000)],
        kinds=["text"] * 1000,
        payloads=[{"n": n} for n in range(1000)],
        created_at=[T0] * 1000,
    )
    assert tracked() == before
    records = list(items)
    assert tracked() == before + 1000  # records are real tuples once read
    del records
    assert sum(1 for _ in items) == 1000
