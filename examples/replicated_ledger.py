"""A replicated ledger: the actor framework's tour, with nothing about compute.

* A **sequencer** gives three ledger replicas the same transfers in the same
  order, so they agree on every balance without talking to each other.
* Clients read balances with **ask** (with a timeout), from any replica.
* An **auditor** that crashes on suspicious transfers runs under a
  **one-for-one supervisor**: it is restarted on the same mailbox, and its
  siblings never notice. A budget of 2 restarts per 10 s bounds the restarts.
* Everything runs on Trio's mock clock with a seed, so the output (and the
  trace, with ``--trace FILE``) is the same on every run.

Run it: ``./run main`` (seed 1: two crashes, two restarts, exit 0). With
``--seed 2`` a third crash lands within 10 s of the first two: the supervisor
escalates, the whole system is cancelled, and the program exits 1.
"""

from __future__ import annotations

import argparse
import collections
import functools
import sys

import attrs
import trio

import actors
from actors import Inbox, OneForOne, Reply


@attrs.frozen
class Transfer:
    source: str
    target: str
    amount: int


@attrs.frozen
class Balance:
    account: str
    reply: Reply[int]


LedgerMessage = Transfer | Balance


class SuspiciousTransferError(Exception):
    """The auditor refuses to look at transfers this large."""


async def ledger(inbox: Inbox[LedgerMessage]) -> None:
    """A replica: applies transfers in the order the sequencer stamped them."""
    balances: collections.Counter[str] = collections.Counter(alice=100, bob=100, carol=100)
    async for envelope in inbox:
        match envelope.message:
            case Transfer(source, target, amount):
                balances[source] -= amount
                balances[target] += amount
            case Balance(account, reply):
                reply.send(balances[account])


async def auditor(inbox: Inbox[Transfer], flagged: list[str]) -> None:
    """Crashes on a transfer over 50 (its supervisor restarts it)."""
    async for envelope in inbox:
        transfer = envelope.message
        if transfer.amount > 50:
            raise SuspiciousTransferError(f"transfer {envelope.seq} moves {transfer.amount}")
        flagged.append(f"{transfer.source}->{transfer.target}")
        await trio.sleep(2)  # auditing takes two virtual seconds


async def main() -> actors.Trace:
    trace = actors.Trace()
    flagged: list[str] = []
    async with actors.open_system(tracer=trace) as system:
        replicas = [await system.spawn(ledger, name=f"replica-{i}") for i in range(3)]
        leader = system.sequencer(replicas, name="leader")
        async with system.open_supervisor(
            OneForOne(intensity=2, period=10), name="audit-supervisor"
        ) as audit:
            checker = await audit.spawn(auditor, flagged, name="auditor")
            people = ["alice", "bob", "carol"]
            transfers = [
                Transfer(people[i % 3], people[(i + 1) % 3], system.random.randrange(1, 60))
                for i in range(12)
            ]
            stamps = await leader.broadcast_many(transfers)
            for transfer in transfers:
                await checker.tell(transfer)
            print(f"leader stamped transfers {stamps.start}..{stamps.stop - 1}")
            for person in people:
                answers = [
                    await replica.ask(functools.partial(Balance, person), timeout=5)
                    for replica in replicas
                ]
                agree = "agree" if len(set(answers)) == 1 else "DISAGREE"
                print(f"{person:>6}: {answers} ({agree})")
            total = sum(
                [await replicas[0].ask(functools.partial(Balance, p), timeout=5) for p in people]
            )
            print(f" total: {total} (money is conserved)")
        restarts = checker.statistics().restarts
        print(f"auditor: checked {len(flagged)} transfers, restarted {restarts} times")
    kinds = collections.Counter(event.kind.value for event in trace)
    print("trace:", ", ".join(f"{kind} {count}" for kind, count in sorted(kinds.items())))
    print(f"virtual time elapsed: {trio.current_time():g}s")
    return trace


def cli(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1, help="seed for the run (default 1)")
    parser.add_argument("--trace", metavar="FILE", help="write the trace as JSON lines")
    args = parser.parse_args(argv)
    status = 0
    try:
        trace = actors.run(main, seed=args.seed)
        if args.trace is not None:
            with open(args.trace, "w", encoding="utf-8") as file:
                trace.write_jsonl(file)
            print(f"wrote {len(trace)} events to {args.trace}")
    except* actors.RestartIntensityError as group:
        error: BaseException = group
        while isinstance(error, BaseExceptionGroup):
            error = error.exceptions[0]
        print(f"the auditor's restart budget ran out: {error}", file=sys.stderr)
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(cli())
