"""Kept connections and discovery: a node keeps the connection to each of its
seeds up (dialling again, after a back-off, when it goes), waits for a peer
by name, and looks a service up on every node it is connected to."""

from __future__ import annotations

import itertools
from typing import cast

import pytest
import trio
import trio.testing

import actors
from actors import ActorRef, ServiceKey
from actors.net import Dialer, Node, open_node

from ..messages import SECRET, Add, Total, codec
from .nodes import CounterMessage, counter

COUNTERS = ServiceKey[CounterMessage]("counters")


def dialling(node_b: Node, nursery: trio.Nursery, dials: list[float]) -> Dialer:
    """A dialer that opens a memory stream to ``node_b`` (which accepts it in
    ``nursery``), noting the time of each dial."""

    async def dial() -> trio.abc.Stream:
        dials.append(trio.current_time())
        ours, theirs = trio.testing.memory_stream_pair()

        async def accept() -> None:
            await node_b.accept(theirs)

        nursery.start_soon(accept)
        return ours

    return dial


async def test_a_kept_connection_comes_back_after_it_goes() -> None:
    dials: list[float] = []
    async with (
        actors.open_system() as system_a,
        actors.open_system() as system_b,
        open_node(system_b, name="b", secret=SECRET, codec=codec(), listen=None) as b,
        trio.open_nursery() as nursery,
    ):
        await system_b.spawn(counter, name="counter")
        async with open_node(
            system_a,
            name="a",
            secret=SECRET,
            codec=codec(),
            listen=None,
            seeds=[dialling(b, nursery, dials)],
        ) as a:
            first = await a.wait_peer("b")
            ref = await first.lookup("counter")
            assert ref is not None
            await cast("ActorRef[CounterMessage]", ref).tell(Add(2))
            assert await cast("ActorRef[CounterMessage]", ref).ask(Total, timeout=5) == 2
            (to_a,) = b.peers
            await to_a.close("restarting")  # the connection goes
            assert await ref.wait_stopped() == actors.NodeDown("b")
            second = await a.wait_peer("b")  # dialled again, after the back-off
            assert second is not first
            again = cast("ActorRef[CounterMessage]", await second.lookup("counter"))
            assert await again.ask(Total, timeout=5) == 2  # the same actor, a new reference
            assert len(dials) == 2
            assert 0 < dials[1] - dials[0] <= 0.1 + 1e-9  # the first back-off: 0.1 s at most
        nursery.cancel_scope.cancel()
    assert len(dials) == 2  # the node's block ended the keeping


async def test_a_seed_that_cannot_be_reached_is_dialled_again_with_a_growing_back_off(
    caplog: pytest.LogCaptureFixture,
) -> None:
    dials: list[float] = []

    async def unreachable() -> trio.abc.Stream:
        dials.append(trio.current_time())
        raise ConnectionRefusedError("refused")

    async with (
        actors.open_system() as system,
        open_node(system, name="a", secret=SECRET, codec=codec(), listen=None) as node,
    ):
        node.keep(unreachable, redial=actors.Backoff(minimum=1, maximum=8, jitter=0))
        await trio.sleep(30)
    gaps = [later - earlier for earlier, later in itertools.pairwise(dials)]
    assert gaps[:5] == [1, 2, 4, 8, 8]  # doubling, up to the maximum
    assert "node 'a' could not reach a node it keeps" in caplog.text


async def test_wait_peer_waits_for_the_node_by_name() -> None:
    async with (
        actors.open_system() as system_a,
        actors.open_system() as system_b,
        open_node(system_a, name="a", secret=SECRET, codec=codec(), listen=None) as a,
        open_node(system_b, name="b", secret=SECRET, codec=codec(), listen=None) as b,
        trio.open_nursery() as nursery,
    ):
        found: list[str] = []

        async def waiter() -> None:
            found.append((await a.wait_peer("b")).node)

        nursery.start_soon(waiter)
        await trio.sleep(5)
        assert found == []
        a.keep(dialling(b, nursery, []))
        await trio.testing.wait_all_tasks_blocked()
        assert found == ["b"]
        nursery.cancel_scope.cancel()


async def test_find_looks_a_service_up_on_every_connected_node() -> None:
    async with (
        actors.open_system() as system_a,
        actors.open_system() as system_b,
        actors.open_system() as system_c,
        open_node(system_b, name="b", secret=SECRET, codec=codec(), listen=None) as b,
        open_node(system_c, name="c", secret=SECRET, codec=codec(), listen=None) as c,
        trio.open_nursery() as nursery,
    ):
        for system, name in [(system_a, "here"), (system_b, "there"), (system_c, "yonder")]:
            spawned: ActorRef[CounterMessage] = await system.spawn(counter, name=name)
            system.register(COUNTERS, spawned)
        async with open_node(
            system_a,
            name="a",
            secret=SECRET,
            codec=codec(),
            listen=None,
            seeds=[dialling(b, nursery, []), dialling(c, nursery, [])],
        ) as a:
            await a.wait_peer("b")
            await a.wait_peer("c")
            refs = await a.find(COUNTERS)
            assert sorted(ref.name for ref in refs) == ["here", "there@b", "yonder@c"]
            for ref in refs:
                await ref.tell(Add(1))
            assert [await ref.ask(Total, timeout=5) for ref in refs] == [1, 1, 1]
        nursery.cancel_scope.cancel()


async def test_keep_refuses_a_redial_that_is_no_backoff() -> None:
    async with (
        actors.open_system() as system,
        open_node(system, name="a", secret=SECRET, codec=codec(), listen=None) as node,
    ):
        with pytest.raises(TypeError, match=r"^redial must be an actors.Backoff, not 5$"):
            node.keep(("127.0.0.1", 1), redial=5)  # type: ignore[arg-type]
