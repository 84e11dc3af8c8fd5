"""``check_draft`` refuses, at import, a frozen class a mutable draft can no longer stand for."""

from __future__ import annotations

import attrs
import pytest

from actoviq.orchestration._drafts import check_draft


@attrs.frozen(slots=True, weakref_slot=False)
class _Frozen:
    a: int
    b: str


class _Draft:
    __slots__ = ("a", "b")


@attrs.frozen(slots=True, weakref_slot=False)
class _Validated:
    a: int = attrs.field(validator=attrs.validators.instance_of(int))
    b: str = ""


@attrs.frozen(slots=True, weakref_slot=False)
class _PostInit:
    a: int
    b: str

    def __attrs_post_init__(self) -> None:
        pass


@attrs.frozen(slots=True)  # a weakref slot: another layout than the draft's
class _OtherLayout:
    a: int
    b: str


def test_a_matching_draft_is_accepted_and_becomes_the_frozen_class() -> None:
    check_draft(_Frozen, _Draft)
    draft = _Draft()
    draft.a, draft.b = 1, "x"
    draft.__class__ = _Frozen  # pyright: ignore[reportAttributeAccessIssue]
    assert draft == _Frozen(1, "x")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        draft.a = 2


@pytest.mark.parametrize("frozen", [_Validated, _PostInit, _OtherLayout])
def test_a_class_the_draft_would_bypass_is_refused(frozen: type[object]) -> None:
    with pytest.raises(TypeError):
        check_draft(frozen, _Draft)
