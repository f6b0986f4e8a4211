"""Python function calls per ask round trip, counted by cProfile.

    .venv/bin/python bench/ask_calls.py [N] [--opcodes]

Deterministic where wall-clock time on a shared machine is not: prints the
calls (Python functions, builtins, and each resumption of a suspended
coroutine frame, as cProfile counts them) per round trip of ``net ask
(loopback tcp)``, ``tcp ping-pong raw``, ``tcp ping-pong 4 hops``
(``bench/net_bench.py``) and a local ``actors ask`` of the same echo actor,
over N round trips (default 2,000) after a warm-up. Both nodes of the net
row run in the one profiled ``trio.run``, so its count is both ends' work.

With ``--opcodes``, counts instead the bytecode instructions Python frames
execute (``sys.settrace`` with ``f_trace_opcodes``; builtins and C code
count nothing): also deterministic, and closer to the time a round trip
takes, since a call counts as one whatever its body does.
"""

from __future__ import annotations

import cProfile
import pstats
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any, cast

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

import net_bench as nb

import actors
from actors import ActorRef
from actors.net import open_node

WARM_UP = 200


def _count(profile: Any, n: int) -> float:
    if isinstance(profile, OpcodeCounter):
        return profile.opcodes / n
    return pstats.Stats(profile).total_calls / n  # type: ignore[attr-defined, no-any-return]


class OpcodeCounter:
    """A stand-in for ``cProfile.Profile`` (``enable``, ``disable``) that
    counts the bytecode instructions executed while enabled."""

    def __init__(self) -> None:
        self.opcodes = 0

    def _trace(self, frame: FrameType, event: str, arg: object) -> Any:
        frame.f_trace_opcodes = True
        frame.f_trace_lines = False
        if event == "opcode":
            self.opcodes += 1
        return self._trace

    def enable(self) -> None:
        sys.settrace(self._trace)

    def disable(self) -> None:
        sys.settrace(None)


Profile: Callable[[], Any] = cProfile.Profile


def net_ask_calls(n: int) -> float:
    profile = Profile()

    async def main() -> None:
        async with actors.open_system() as system_a, actors.open_system() as system_b:
            await system_b.spawn(nb.echo, name="echo")
            secret, codec = nb.SECRET, nb._codec()
            async with (
                open_node(system_a, name="a", secret=secret, codec=codec, listen=None) as a,
                open_node(system_b, name="b", secret=secret, codec=codec) as b,
            ):
                assert b.address is not None
                peer = await a.connect(b.address)
                ref = cast("ActorRef[nb.Echo]", await peer.lookup("echo"))
                for _ in range(WARM_UP):
                    await ref.ask(nb.Echo, nb.PAYLOAD)
                profile.enable()
                for _ in range(n):
                    await ref.ask(nb.Echo, nb.PAYLOAD)
                profile.disable()
                await peer.close()

    trio.run(main)
    return _count(profile, n)


def local_ask_calls(n: int) -> float:
    profile = Profile()

    async def main() -> None:
        async with actors.open_system() as system:
            ref = await system.spawn(nb.echo, name="echo")
            for _ in range(WARM_UP):
                await ref.ask(nb.Echo, nb.PAYLOAD)
            profile.enable()
            for _ in range(n):
                await ref.ask(nb.Echo, nb.PAYLOAD)
            profile.disable()

    trio.run(main)
    return _count(profile, n)


def row_calls(row: Callable[[int], tuple[int, float]], n: int) -> float:
    """The calls per op of a net_bench row, profiled over its timed loop
    only (from its first ``time.perf_counter`` call to its second)."""
    profile = Profile()
    calls = 0
    real = time.perf_counter

    def perf_counter() -> float:
        nonlocal calls
        calls += 1
        if calls == 1:
            profile.enable()
        elif calls == 2:
            profile.disable()
        return real()

    clock: Any = time  # the module net_bench reads its clock from
    clock.perf_counter = perf_counter
    try:
        row(n)
    finally:
        clock.perf_counter = real
    return _count(profile, n)


def main(argv: list[str]) -> int:
    global Profile
    what = "calls per round trip (cProfile"
    if "--opcodes" in argv:
        argv = [arg for arg in argv if arg != "--opcodes"]
        Profile = OpcodeCounter
        what = "bytecode instructions per round trip (sys.settrace"
    n = int(argv[0]) if argv else 2_000
    print(f"{what}, {n:,} round trips)")
    print(f"  net ask (loopback tcp)   {net_ask_calls(n):7.1f}")
    print(f"  tcp ping-pong raw        {row_calls(nb.raw_ping_pong, n):7.1f}")
    print(f"  tcp ping-pong 4 hops     {row_calls(nb.ping_pong_4_hops, n):7.1f}")
    print(f"  actors ask (local)       {local_ask_calls(n):7.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
