"""``field_replacer``: a slot-by-slot ``attrs.evolve`` of one field, refused where it differs."""

from __future__ import annotations

import weakref
from typing import Any

import attrs
import pytest

from actoviq.core import ActoviqError, FieldReplacerError, field_replacer


@attrs.frozen(kw_only=True, slots=True)
class Call:
    name: str = attrs.field(validator=attrs.validators.instance_of(str))
    tags: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    signal: object = None
    _secret: str = "s"
    payload: dict[str, Any] = attrs.field(factory=dict[str, Any])


@attrs.frozen(kw_only=True, slots=True)
class LoudCall(Call):
    """A subclass with a field of its own and a check: it must go through attrs.evolve."""

    level: int = 1

    def __attrs_post_init__(self) -> None:
        if self.signal == "refused":
            raise ValueError("refused by the subclass")


with_signal = field_replacer(Call, "signal")
with_secret = field_replacer(Call, "_secret")


def test_an_exact_instance_is_copied_with_the_one_field_swapped() -> None:
    payload = {"k": [1]}
    call = Call(name="lookup", tags=["a"], payload=payload)
    stop = object()
    clone = with_signal(call, stop)
    assert clone == attrs.evolve(call, signal=stop)
    assert clone is not call and type(clone) is Call
    assert clone.signal is stop and call.signal is None  # the original is untouched
    assert clone.payload is payload and clone.tags is call.tags  # other values shared, as evolve
    assert with_secret(call, "t") == attrs.evolve(call, secret="t")
    assert weakref.ref(clone)() is clone  # the __weakref__ slot works on the copy


def test_a_subclass_goes_through_attrs_evolve() -> None:
    loud = LoudCall(name="x", level=3)
    clone = with_signal(loud, "go")
    assert type(clone) is LoudCall
    assert clone == LoudCall(name="x", level=3, signal="go")
    with pytest.raises(ValueError, match="refused by the subclass"):
        with_signal(loud, "refused")  # the subclass's check ran
    assert with_secret(loud, "t") == attrs.evolve(loud, secret="t")


@attrs.frozen(slots=True)
class Plain:
    x: int


@attrs.frozen(slots=False)
class WithDict:
    x: int


class Base:  # no __slots__: instances of slotted subclasses still have a __dict__
    pass


@attrs.frozen(slots=True)
class OverADictBase(Base):
    x: int


@attrs.frozen(slots=True, cache_hash=True)
class CachedHash:
    x: int


@attrs.frozen(slots=True)
class PostInit:
    x: int

    def __attrs_post_init__(self) -> None:
        pass


@attrs.frozen(slots=True)
class CustomAccess:
    x: int

    def __getattribute__(self, name: str) -> Any:
        return object.__getattribute__(self, name)


class NotAttrs:
    __slots__ = ("x",)


@pytest.mark.parametrize(
    ("cls", "name", "why"),
    [
        (NotAttrs, "x", "not an attrs class"),
        (Plain, "y", "no such field"),
        (Call, "name", "converter or validator"),
        (Call, "tags", "converter or validator"),
        (WithDict, "x", "not a slotted class"),
        (OverADictBase, "x", "__dict__"),
        (CachedHash, "x", "slots beyond its fields"),
        (PostInit, "x", "__attrs_post_init__"),
        (CustomAccess, "x", "attribute access"),
    ],
)
def test_what_a_copy_could_get_wrong_is_refused(cls: type[Any], name: str, why: str) -> None:
    with pytest.raises(FieldReplacerError, match=why) as caught:
        field_replacer(cls, name)
    assert isinstance(caught.value, ActoviqError) and isinstance(caught.value, TypeError)
    assert caught.value.code == "FIELD_REPLACER_INVALID"
    assert caught.value.field == name
    assert (caught.value.details or {})["class"] == cls.__qualname__


def test_a_plain_positional_class() -> None:
    assert field_replacer(Plain, "x")(Plain(1), 2) == Plain(2)
