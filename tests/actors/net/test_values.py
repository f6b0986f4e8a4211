"""The codec's values (``Values``, ``Codec.register_value``): registered
attrs classes, enums and tuple subclasses travel and come back equal,
decoding calls the class (its validators run), and an unknown class or a
refused value is the codec's error, named."""

from __future__ import annotations

import enum

import attrs
import pytest

from actors.net import Codec, CodecError, Values


class Colour(enum.Enum):
    RED = 1
    BLUE = 2


class Pair(tuple[str, int]):
    def __new__(cls, name: str, number: int) -> Pair:
        return super().__new__(cls, (name, number))


@attrs.frozen
class Point:
    x: int = attrs.field(validator=attrs.validators.ge(0))
    label: object = None


class Refused(CodecError):
    """The error a test's values raise."""


def test_registered_values_come_back_equal_and_of_their_class() -> None:
    values = Values([Colour, Pair, Point])
    for value in [
        Point(1, (Colour.RED, [Pair("a", 2), {"k": 2**70}])),
        [Point(0), (None, 1.5, b"x")],
        Pair("b", -1),
    ]:
        back = values.decode(values.encode(value))
        assert back == value
        assert type(back) is type(value)


def test_an_unknown_class_is_refused_named_on_both_sides() -> None:
    sender, receiver = Values([Point]), Values()
    with pytest.raises(CodecError, match="a Pair cannot travel between nodes"):
        sender.encode(Pair("a", 1))
    with pytest.raises(CodecError, match="a malformed value on the wire: KeyError"):
        receiver.decode(sender.encode(Point(1)))


def test_decoding_calls_the_class_so_its_validators_run() -> None:
    values = Values([Point], error=Refused)
    data = Values([Point]).encode(Point(1))
    assert values.decode(data) == Point(1)
    forged = data.replace(b"\x01", b"\xff")  # x = -1
    with pytest.raises(Refused, match="a malformed value on the wire"):
        values.decode(forged)


def test_register_refuses_what_cannot_travel_and_names_taken_twice() -> None:
    values = Values()
    with pytest.raises(TypeError, match="attrs classes, enums and tuple subclasses"):
        values.register(dict)
    values.register(Point, name="point")
    values.register(Point, name="point")  # the same again: nothing changes
    with pytest.raises(ValueError, match="already registered for Point"):
        values.register(Colour, name="point")
    with pytest.raises(ValueError, match="under another name"):
        values.register(Point)
    assert values.classes == (Point,)


def test_a_codec_carries_the_values_registered_on_it() -> None:
    codec = Codec()
    codec.register_value(Point)
    assert codec.values.decode(codec.values.encode([Point(3)])) == [Point(3)]
    shared = Values([Colour])
    assert Codec(values=shared).values is shared
