"""RunPersistence tells a claiming checkpoint store from a plain one, class or instance."""

from __future__ import annotations

from typing import Any

from actoviq.runtime.persistence import RunPersistence
from actoviq.runtime.stores import (
    ClaimingRunCheckpointStore,
    InMemoryCheckpointStore,
    StoreRunCheckpointAdapter,
)


def _persistence(store: Any) -> RunPersistence:
    return RunPersistence(store, run_id="r", lease_ms=1000, hook_timeout=5.0)


class _Plain:
    """A checkpoint store without claims (whatever its methods do, they are never called)."""

    async def save(self, state: object) -> None: ...

    async def load(self, run_id: str) -> None: ...

    async def delete(self, run_id: str) -> None: ...


def test_a_claiming_store_gets_a_lease_and_a_plain_one_or_none_does_not() -> None:
    claiming = StoreRunCheckpointAdapter(InMemoryCheckpointStore())
    assert isinstance(claiming, ClaimingRunCheckpointStore)
    for _ in range(2):  # the second answer comes from the per-class memo
        persistence = _persistence(claiming)
        assert persistence.claiming is claiming and persistence.lease is not None
        plain = _persistence(_Plain())
        assert plain.claiming is None and plain.lease is None
        nothing = _persistence(None)
        assert nothing.claiming is None and nothing.lease is None


def test_claim_methods_set_on_an_instance_are_still_seen() -> None:
    inner = StoreRunCheckpointAdapter(InMemoryCheckpointStore())
    store = _Plain()
    assert _persistence(store).claiming is None  # the class is remembered as not claiming
    for name in dir(inner):
        if not name.startswith("_") and callable(getattr(inner, name)):
            setattr(store, name, getattr(inner, name))
    assert isinstance(store, ClaimingRunCheckpointStore)
    assert _persistence(store).claiming is store
