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


def _held(root: object) -> list[object]:
    """The data ``root`` holds: every list, tuple and dict reachable from it, and their members.

    It follows the referents the garbage collector itself would traverse (``gc.get_referents``),
    but only into containers, never into types or modules, so the answer does not depend on
    when a collection last ran (unlike counting ``gc.get_objects()``).
    """
    seen: dict[int, object] = {}
    stack: list[object] = [ref for ref in gc.get_referents(root) if not isinstance(ref, type)]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen[id(current)] = current
        if isinstance(current, (list, tuple, dict)):
            stack.extend(gc.get_referents(current))
    return list(seen.values())


def _columns_of(count: int) -> StoredItems:
    return StoredItems(
        first_sequence=1,
        item_ids=[f"i{n}" for n in range(count)],
        kinds=["text"] * count,
        payloads=[{"n": n} for n in range(count)],
        created_at=[T0] * count,
    )


def test_holding_a_load_leaves_no_record_for_the_collector() -> None:
    # The point of the columns: nothing per item exists until a record is read, so a held load
    # gives the collector a constant number of containers to walk (the columns), not one per item.
    def containers(items: StoredItems) -> list[object]:
        payloads = {id(payload) for payload in items.payloads}
        return [o for o in _held(items) if type(o) in (list, tuple, dict) and id(o) not in payloads]

    small, large = _columns_of(3), _columns_of(1000)
    assert not any(isinstance(o, StoredSessionItem) for o in _held(large))
    assert len(containers(large)) == len(containers(small)) == 4  # ids, kinds, payloads, times
    records = list(large)
    assert len(records) == 1000
    assert all(type(record) is StoredSessionItem for record in records)
    assert records[999] == StoredSessionItem(999 + 1, "i999", "text", {"n": 999}, T0)
    # Reading built the records on the fly; the load still holds none of them.
    assert not any(isinstance(o, StoredSessionItem) for o in _held(large))
    assert len(containers(large)) == 4
