"""The bank-teller race: two tellers each read a bank actor's balance and
write back the balance plus their deposit, in two asks. The bank keeps its
state and handles one message at a time, yet the read and the write of a
teller are two messages: a read of the other teller's that comes between
them loses an update.

The second teller starts a few checkpoints after the first (``head_start``:
the first one's write is sent at its third step, so three would do; two
lose an update for about half the seeds), so on Trio's scheduler alone the
first one's write is always in the mailbox before the second one's read:
the final balance is right for every seed. With message
latency on (``actors.run(tellers, latency=0.001)``) the read can overtake the
write, and does for most seeds. Schedule exploration reuses it.
"""

from __future__ import annotations

import attrs
import trio

import actors
from actors import ActorRef, Inbox, Reply


@attrs.frozen
class Get:
    reply: Reply[int]


@attrs.frozen
class Set:
    balance: int
    reply: Reply[None]


BankMessage = Get | Set


async def bank(inbox: Inbox[BankMessage]) -> None:
    balance = 0
    async for envelope in inbox:
        match envelope.message:
            case Get(reply):
                reply.send(balance)
            case Set(new, reply):
                balance = new
                reply.send(None)


async def teller(bank: ActorRef[BankMessage], amount: int, head_start: int) -> None:
    """Deposit ``amount``, after ``head_start`` checkpoints: read, then write."""
    for _ in range(head_start):
        await trio.lowlevel.checkpoint()
    balance = await bank.ask(Get)
    await bank.ask(Set, balance + amount)


async def tellers(amounts: tuple[int, int] = (10, 20), *, head_start: int = 4) -> tuple[int, int]:
    """Run both tellers against a fresh bank (in a system of its own, with
    the run's seed and latency); return the final balance and the right one."""
    async with actors.open_system() as system:
        ref = await system.spawn(bank, name="bank")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(teller, ref, amounts[0], 0, name="teller-0")
            nursery.start_soon(teller, ref, amounts[1], head_start, name="teller-1")
        final = await ref.ask(Get)
    return final, sum(amounts)
