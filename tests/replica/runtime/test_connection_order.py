"""A process's ``ConnectionOrder``: hellos numbered as they arrive."""

from __future__ import annotations

import pytest

from replica import (
    ConnectionOrder,
    ProtocolError,
)


def test_a_connection_order_numbers_hellos_as_they_arrive() -> None:
    order = ConnectionOrder()
    assert [order.record(nonce) for nonce in (50, 7, 99)] == [0, 1, 2]
    assert order.position(7) == 1
    assert 99 in order
    assert 3 not in order
    with pytest.raises(ProtocolError, match=r"^connection 3 never said hello here$"):
        order.position(3)
    with pytest.raises(ProtocolError, match=r"^connection 7 said hello twice$"):
        order.record(7)
    assert len(order) == 3
