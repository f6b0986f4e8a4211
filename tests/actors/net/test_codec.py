"""The codec's registry: what it accepts, and what it refuses by name."""

from __future__ import annotations

from typing import cast

import attrs
import msgspec
import pytest

from actors import ActorRef, Reply
from actors.net import Codec, CodecError

from ..messages import Add, Echo, Tagged


@attrs.frozen
class TwoReplies:
    first: Reply[int]
    second: Reply[int]


@attrs.frozen
class CarriesRefs:
    refs: list[ActorRef[Add]]  # a reference travels as a field of its own, not in a list


@attrs.frozen
class KeywordOnly:
    amount: int = attrs.field(kw_only=True)


def test_a_class_registers_under_its_qualified_name_by_default() -> None:
    codec = Codec([Add])
    assert codec.names == ("tests.actors.messages.Add",)


def test_registering_again_under_the_same_name_changes_nothing() -> None:
    codec = Codec()
    codec.register(Add, name="add")
    codec.register(Add, name="add")
    assert codec.names == ("add",)


def test_a_name_is_one_class_and_a_class_one_name() -> None:
    codec = Codec()
    codec.register(Add, name="add")
    with pytest.raises(ValueError, match=r"^the name 'add' is already registered for Add$"):
        codec.register(Tagged, name="add")
    with pytest.raises(ValueError, match=r"^Add is already registered as 'add'$"):
        codec.register(Add, name="other")
    assert codec.names == ("add",)


@pytest.mark.parametrize(
    ("cls", "error"),
    [
        (int, r"^a codec registers attrs classes, not <class 'int'>$"),
        (TwoReplies, r"^TwoReplies has more than one Reply field$"),
        (CarriesRefs, r"^CarriesRefs.refs: a value of type ActorRef cannot travel between nodes$"),
        (KeywordOnly, r"^KeywordOnly.amount: a message's fields must all be positional"),
    ],
)
def test_what_cannot_travel_is_refused_at_registration(cls: type, error: str) -> None:
    codec = Codec()
    with pytest.raises(TypeError, match=error):
        codec.register(cls)
    assert codec.names == ()


def test_a_reply_travels_as_nothing_and_an_ask_of_a_tell_class_is_refused() -> None:
    codec = Codec([Add, Echo])
    reply = cast("Reply[str]", Reply._create("echo", 0, None, None))
    name, data, ask = codec.encode(Echo("hi", reply))
    assert ask
    assert codec.decode(name, data, ask=True) == Echo("hi", None)  # type: ignore[arg-type]
    name, data, ask = codec.encode(Add(1))
    assert not ask
    with pytest.raises(CodecError, match=r"^message type '.*Add' has no reply field, so it"):
        codec.decode(name, data, ask=True)


def test_reply_values_travel_as_builtins_or_registered_classes() -> None:
    codec = Codec([Add])
    assert codec.decode_value(*codec.encode_value(Add(3))) == Add(3)
    assert codec.decode_value(*codec.encode_value({"a": [1, 2]})) == {"a": [1, 2]}
    with pytest.raises(CodecError, match=r"^cannot encode a reply's value: "):
        codec.encode_value(object())


@attrs.frozen
class Asserting:
    value: int = attrs.field()

    @value.validator
    def _check(self, attribute: attrs.Attribute[int], value: int) -> None:
        assert value > 0, "not positive"


def test_a_class_refusing_values_with_any_exception_is_a_codec_error() -> None:
    codec = Codec([Asserting])
    name, _, _ = codec.encode(Asserting(1))
    with pytest.raises(
        CodecError, match=r"^message '.*Asserting' refused by its class: AssertionError: not"
    ):
        codec.decode(name, msgspec.msgpack.encode([-1]), ask=False)


def test_values_too_deep_to_encode_or_decode_are_codec_errors() -> None:
    codec = Codec([Tagged])
    endless: list[object] = []
    endless.append(endless)
    with pytest.raises(CodecError, match=r"^cannot encode a reply's value: maximum recursion"):
        codec.encode_value(endless)
    with pytest.raises(CodecError, match=r"^cannot encode message '.*Tagged': maximum recursion"):
        codec.encode(Tagged(endless))  # type: ignore[arg-type]
    deep = b"\x91" * 100_000 + b"\xc0"
    with pytest.raises(CodecError, match=r"^a reply's value: maximum recursion depth exceeded"):
        codec.decode_value(None, deep)


def test_a_class_with_a_reply_field_travels_only_as_an_ask() -> None:
    codec = Codec([Echo])
    with pytest.raises(
        CodecError,
        match=r"^message '.*Echo' has a reply field, so it must be asked "
        r"\(its reply field holds None, not a Reply\)$",
    ):
        codec.encode(Echo("hi", None))  # type: ignore[arg-type]
    reply = cast("Reply[str]", Reply._create("echo", 0, None, None))
    name, data, _ = codec.encode(Echo("hi", reply))
    with pytest.raises(CodecError, match=r"^message type '.*Echo' has a reply field, so it must"):
        codec.decode(name, data, ask=False)  # a tell of it, as a hostile peer would send
