"""Two nodes in one process, over loopback TCP: an actor on one asks and
monitors an actor on the other, and learns when the connection goes.

    .venv/bin/python examples/two_nodes.py

Node ``bank`` runs an ``accounts`` actor, offered under a service key. Node
``shop`` connects to it (the shared-secret handshake), finds the service,
and spawns a ``cashier`` that monitors the remote accounts actor, tells it
deposits and asks for balances, over the connection, with the typed API of
a local reference. Then the bank closes the connection: the cashier's
monitor delivers ``Down`` with the reason ``NodeDown``, and a late ask
fails with a named error. Both nodes live in one ``trio.run`` on the real
clock (they talk over real sockets); in production each would be its own
process, on its own machine.
"""

from __future__ import annotations

import sys

import attrs
import trio

import actors
from actors import ActorRef, Down, Inbox, Reply, ServiceKey
from actors.net import Codec, Peer, open_node

SECRET = b"two nodes share this secret, 32b"


@attrs.frozen
class Deposit:
    account: str
    amount: int


@attrs.frozen
class Balance:
    account: str
    reply: Reply[int]


@attrs.frozen
class Shop:
    """What the cashier is told to do next."""

    step: str
    done: Reply[None]


AccountsMessage = Deposit | Balance
ACCOUNTS = ServiceKey[AccountsMessage]("accounts")


def codec() -> Codec:
    """The messages that travel between the two nodes, by stable name."""
    codec = Codec()
    codec.register(Deposit, name="bank.Deposit")
    codec.register(Balance, name="bank.Balance")
    return codec


async def accounts(inbox: Inbox[AccountsMessage]) -> None:
    balances: dict[str, int] = {}
    async for envelope in inbox:
        match envelope.message:
            case Deposit(account, amount):
                balances[account] = balances.get(account, 0) + amount
            case Balance(account, reply):
                reply.send(balances.get(account, 0))


async def cashier(inbox: Inbox[Shop | Down], bank: ActorRef[AccountsMessage]) -> None:
    inbox.monitor(bank)
    print(f"cashier: monitoring {bank.name}")
    async for envelope in inbox:
        match envelope.message:
            case Shop("sell", done):
                await bank.tell(Deposit("ann", 30))
                await bank.tell(Deposit("ann", 12))
                balance = await bank.ask(Balance, "ann", timeout=5)
                print(f"cashier: ann's balance at the bank is {balance}")
                done.send(None)
            case Shop("late", done):
                try:
                    await bank.ask(Balance, "ann", timeout=5)
                except actors.ActorStoppedError as error:
                    print(f"cashier: a late ask fails: {type(error).__name__}: {error}")
                done.send(None)
            case Down(address, reason):
                print(f"cashier: Down from {address.name}: {reason!r} ({reason})")
            case _:
                pass


async def main() -> None:
    with trio.fail_after(30):
        async with actors.open_system() as bank_system, actors.open_system() as shop_system:
            bank_accounts = await bank_system.spawn(accounts, name="accounts")
            bank_system.register(ACCOUNTS, bank_accounts)
            async with (
                open_node(bank_system, name="bank", secret=SECRET, codec=codec()) as bank,
                open_node(
                    shop_system, name="shop", secret=SECRET, codec=codec(), listen=None
                ) as shop,
            ):
                assert bank.address is not None
                print(f"bank: listening on {bank.address[0]} (loopback)")
                peer: Peer = await shop.connect(bank.address)
                print(f"shop: connected to node {peer.node!r}, handshake done")
                (remote,) = await peer.find(ACCOUNTS)
                print(f"shop: found {ACCOUNTS.name!r}: {remote.name}")
                till = await shop_system.spawn(cashier, remote, name="cashier")
                await till.ask(Shop, "sell", timeout=10)
                (to_shop,) = bank.peers
                print("bank: closing the connection")
                await to_shop.close("closing time")
                await peer.closed.wait()
                # The Down is in the cashier's mailbox already: it comes first.
                await till.ask(Shop, "late", timeout=10)
                print(f"shop: why the connection went down: {peer.reason}")
    print("both nodes stopped")


if __name__ == "__main__":
    trio.run(main)
    sys.exit(0)
