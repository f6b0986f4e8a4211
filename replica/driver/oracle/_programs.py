"""Random replica programs, written as spec files, for the simulation.

A program is a list of directives: writes, index definitions (the same or
another as_of and key), query dataflows (a transient count over an index),
re-exports of an index, materialized views of a shard, dataflows of two
indexes (one compacted or dropped on its own, then replayed), reconnects that
replay, change or leave out indexes,
connections abandoned mid-reconciliation, holds and releases of either
runtime around a reconnect (with compactions, drops and creates in flight on
the connection being lost, so that the runtimes may apply different
commands), compactions (one racing the create of a one-shot read dropped at
once, the real team's counterexample, maybe across a reconnect), drops and
reads. The expected output
of every directive comes from the plain reference model, so a program is a
complete spec: a failing one replays with ``trio-reconcile run``.

Every choice goes through a :class:`Chooser`: ``trio-reconcile simulate``
uses a seeded ``random.Random``; the property tests use Hypothesis, whose
draws let it shrink a failing program.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Protocol, TypeVar

import attrs

from ..lang._spec import parse_spec
from ._model import ReferenceModel

T = TypeVar("T")

IDS = (1001, 2001)
SHARDS = ("a", "b")
SHARD_OF = dict(zip(IDS, SHARDS, strict=True))  # each source reads one shard
READ_TIMEOUT = "5"
GENERATED = "generated.spec"
"""The name a generated program goes by in its messages."""


class Chooser(Protocol):
    """Makes a program's choices."""

    def integer(self, low: int, high: int) -> int: ...

    def boolean(self) -> bool: ...

    def choice(self, options: Sequence[T]) -> T: ...


@attrs.define
class RandomChooser:
    """Choices from a seeded ``random.Random``."""

    random: random.Random

    def integer(self, low: int, high: int) -> int:
        return self.random.randint(low, high)

    def boolean(self) -> bool:
        return self.random.random() < 0.5

    def choice(self, options: Sequence[T]) -> T:
        return options[self.random.randrange(len(options))]


@attrs.frozen
class Program:
    directives: tuple[str, ...]

    def spec_text(self) -> str:
        """The program as a spec file, expected blocks from the reference model."""
        bare = "\n\n".join(f"{directive}\n----" for directive in self.directives) + "\n"
        model = ReferenceModel()
        blocks = []
        for stanza, directive in zip(
            parse_spec(bare, GENERATED).stanzas, self.directives, strict=True
        ):
            expected = model.expect(stanza)
            blocks.append("\n".join([directive, "----", *expected]))
        return "\n\n".join(blocks) + "\n"


def generate(choose: Chooser, max_steps: int = 10) -> Program:
    """A random program, every choice made by ``choose``."""
    # The instance, the same on every connection; now and then with the
    # interactive runtime's dataflows off (one-shot reads then run as
    # maintained work: placement changes, no result does).
    instance = (
        "create-instance"
        if choose.integer(0, 3) > 0
        else "create-instance\nenable_compute_interactive_dataflows bool false"
    )
    out: list[str] = [instance, "initialization-complete"]
    uppers = dict.fromkeys(SHARDS, 0)
    defined: dict[int, tuple[str, int]] = {}  # id -> (key, as_of) as the program defined it
    # Per index, the least as_of a dataflow importing it may have: the last
    # compaction the program allowed, or its definition's as_of. A controller
    # never builds below it (the replica would panic: shared fate).
    floor: dict[int, int] = {}
    # Ids dropped on the current connection: a controller never reuses one
    # there (the replica refuses the create, then every command naming it).
    retired: set[int] = set()
    schemas: list[str] = []

    def write(shard: str) -> None:
        ts = uppers[shard] + choose.integer(0, 1)
        values = [choose.integer(0, 9) for _ in range(choose.integer(1, 3))]
        out.append(
            f"write-rows shard={shard} ts={ts}\n" + "\n".join(f"  {v} {v * 7}" for v in values)
        )
        uppers[shard] = ts + 1

    def define(id: int, like: tuple[str, int] | None = None) -> None:
        """Define and schedule ``id``; ``like`` (key, as_of) of its last
        definition makes a compatible replay, at that as_of or one later,
        the likelier choice."""
        shard = SHARD_OF[id]
        if like is not None and choose.integer(0, 3) > 0:
            key, as_of = like[0], like[1] + choose.integer(0, 1)
        else:
            key, as_of = choose.choice(["[0]", "[1]"]), choose.integer(0, 1)
        out.append(f"define-index source={id - 1} index={id} shard={shard} key={key} as-of={as_of}")
        out.append(f"schedule id={id}")
        defined[id] = (key, as_of)
        floor[id] = as_of

    def read() -> None:
        id = choose.choice(sorted(defined) or IDS)
        shard = SHARD_OF[id]
        newest = max(uppers[shard] - 1, 0)
        ts = choose.choice([newest, newest, uppers[shard], 0])
        verb = choose.choice(["peek", "count"])
        out.append(f"{verb} id={id} ts={ts} timeout-secs={READ_TIMEOUT}")

    made = [0]

    def fresh() -> int:
        made[0] += 1
        return made[0]

    def query() -> None:
        """A query dataflow (transient ids): count(*) over an index, read
        once; a one-shot read (``until`` one past ``as_of``: the interactive
        runtime renders it, a single-time read) or, without ``until``,
        maintained work. Then, maybe, compacted or dropped: on the runtime
        that does not render it, a peer's."""
        id = choose.choice(sorted(defined))
        n = fresh()
        shard = SHARD_OF[id]
        as_of = max(choose.choice([0, max(uppers[shard] - 1, 0)]), floor[id])
        one_shot = choose.boolean()
        until = f" until={as_of + 1}" if one_shot else ""
        out.append(
            f"create-dataflow name=query{n} as-of={as_of}{until}\n"
            f"  import index={id}\n"
            f"  build id=t{5000 + n}\n"
            f"    Reduce aggregates=[count(*)]\n"
            f"      Get u{id - 1}\n"
            f"  export index=t{4000 + n} on=t{5000 + n} key=[0]"
        )
        out.append(f"schedule id=t{4000 + n}")
        # A one-shot read answers at its as_of only.
        ts = as_of if one_shot else max(uppers[shard] - 1, as_of)
        out.append(f"peek id=t{4000 + n} ts={ts} timeout-secs={READ_TIMEOUT}")
        match choose.integer(0, 3):
            case 0:
                out.append(f"allow-compaction id=t{4000 + n} since={ts}")
            case 1:
                out.append(f"drop id=t{4000 + n}")
            case _:
                pass

    def race() -> None:
        """The real team's counterexample (docs/protocol.md, "Read holds"): a
        one-shot read created and dropped at once (as a cancelled peek drops
        it), and the index it reads compacted past its ``as_of`` right
        after, maybe across a reconnect: maintenance may apply the compaction
        before the interactive runtime has reached the read's create."""
        id = choose.choice(sorted(defined))
        n = fresh()
        as_of = floor[id]
        out.append(
            f"create-dataflow name=race{n} as-of={as_of} until={as_of + 1}\n"
            f"  import index={id}\n"
            f"  build id=t{5000 + n}\n"
            f"    Reduce aggregates=[count(*)]\n"
            f"      Get u{id - 1}\n"
            f"  export index=t{4000 + n} on=t{5000 + n} key=[0]"
        )
        out.append(f"drop id=t{4000 + n}")
        since = as_of + choose.integer(1, 2)
        out.append(f"allow-compaction id={id} since={since}")
        floor[id] = max(floor[id], since)
        if choose.boolean():
            reconnect()

    def reexport() -> None:
        """An index that re-exports another's arrangement, read once."""
        id = choose.choice(sorted(defined))
        n = fresh()
        shard = SHARD_OF[id]
        out.append(
            f"create-dataflow name=reexport{n} as-of={floor[id]}\n"
            f"  import index={id}\n"
            f"  export index={3000 + n} on={id - 1} key={defined[id][0]}"
        )
        out.append(f"schedule id={3000 + n}")
        ts = max(uppers[shard] - 1, floor[id])
        out.append(f"peek id={3000 + n} ts={ts} timeout-secs={READ_TIMEOUT}")

    def pair() -> None:
        """A dataflow of two indexes of one shard; one may be compacted past
        what a replay asks for, or dropped on its own, before a read."""
        shard = choose.choice(SHARDS)
        source = 1000 if shard == SHARDS[0] else 2000
        n = fresh()
        as_of = choose.integer(0, 1)
        text = (
            f"create-dataflow name=pair{n} as-of={as_of}\n"
            f"  import source={source} shard={shard} upper={uppers[shard]}\n"
            f"  export index={8000 + 2 * n} on={source} key=[0]\n"
            f"  export index={8001 + 2 * n} on={source} key=[1]"
        )
        out.extend([text, f"schedule id={8000 + 2 * n}"])
        if choose.boolean():
            out.append(f"allow-compaction id={8000 + 2 * n} since={as_of + choose.integer(0, 2)}")
        if choose.boolean():
            # A reconnect that replays the pair (maybe at a later as_of).
            out.extend(["reconnect", instance])
            out.append(text.replace(f"as-of={as_of}", f"as-of={as_of + choose.integer(0, 1)}"))
            out.append(f"schedule id={8000 + 2 * n}")
            for id in sorted(defined):
                out.append(
                    f"define-index source={id - 1} index={id} shard={SHARD_OF[id]} "
                    f"key={defined[id][0]} as-of={defined[id][1]}"
                )
                out.append(f"schedule id={id}")
            out.extend(["initialization-complete", "settle"])
        ts = max(uppers[shard] - 1, as_of + 1)
        out.append(
            f"peek id={choose.choice([8000, 8001]) + 2 * n} ts={ts} timeout-secs={READ_TIMEOUT}"
        )

    def sink() -> None:
        """A materialized view of a shard, made writable and read once."""
        shard = choose.choice(SHARDS)
        source = 1000 if shard == SHARDS[0] else 2000
        n = fresh()
        out.append(
            f"create-dataflow name=view{n} as-of=0\n"
            f"  import source={source} shard={shard} upper={uppers[shard]}\n"
            f"  build id={7000 + n}\n"
            f"    Project (#0, #1)\n"
            f"      Get u{source}\n"
            f"  export kind=materialized-view sink={6000 + n} on={7000 + n} shard=view{n}"
        )
        out.extend([f"schedule id={6000 + n}", f"allow-writes id={6000 + n}"])
        ts = max(uppers[shard] - 1, 0)
        out.append(f"peek id={6000 + n} ts={ts} timeout-secs={READ_TIMEOUT}")

    def subscribe() -> None:
        """A transient subscribe of a shard (maintained work: the real
        controller never makes one a one-shot read), awaited up to the
        shard's upper, then dropped: a subscribe ends with its connection."""
        shard = choose.choice(SHARDS)
        source = 1000 if shard == SHARDS[0] else 2000
        n = fresh()
        if not schemas:
            out.append("define-schema name=pairs\n  id bigint\n  payload text")
            schemas.append("pairs")
        end = choose.choice(["", f" up-to={uppers[shard] + choose.integer(0, 2)}"])
        out.append(
            f"create-dataflow name=watch{n} as-of=0\n"
            f"  import source={source} shard={shard} upper={uppers[shard]}\n"
            f"  build id=t{7500 + n}\n"
            f"    Project (#0, #1)\n"
            f"      Get u{source}\n"
            f"  export kind=subscribe sink=t{6500 + n} on=t{7500 + n} schema=pairs{end}"
        )
        out.append(f"schedule id=t{6500 + n}")
        out.append(
            f"await-subscribe id=t{6500 + n} up-to={uppers[shard]} timeout-secs={READ_TIMEOUT}"
        )
        out.append(f"drop id=t{6500 + n}")

    def in_flight() -> None:
        """A command sent to the connection about to be lost: it may reach
        only one runtime (the other's adapter drops it with its queue)."""
        step = choose.choice(["compact", "drop", "define"])
        free = [id for id in IDS if id not in defined and id not in retired]
        if step == "define" and free:
            define(choose.choice(free))
        elif step == "compact" and defined:
            # Past the as_of a replay may choose: one runtime then keeps the
            # index and the other rebuilds it.
            id = choose.choice(sorted(defined))
            since = defined[id][1] + choose.integer(1, 2)
            out.append(f"allow-compaction id={id} since={since}")
            floor[id] = max(floor[id], since)
        elif step == "drop" and defined:
            id = choose.choice(sorted(defined))
            out.append(f"drop id={id}")
            del defined[id]
            retired.add(id)

    def reconnect() -> None:
        """A new connection, possibly while one runtime lags: held with
        commands in flight, both held while the old connection's response
        sends fail (so a runtime drops the commands queued for it), released
        in either order before or after the new connection's commands."""
        held: list[str] = []
        first = choose.choice([None, "maintenance", "interactive"])
        if first is not None:
            out.append(f"hold runtime={first}")
            held.append(first)
        lost = first is not None and choose.boolean()
        if lost:
            for _ in range(choose.integer(1, 2)):
                in_flight()
            out.append("settle")
            if choose.integer(0, 3) > 0:
                second = "interactive" if first == "maintenance" else "maintenance"
                out.append(f"hold runtime={second}")
                held.append(second)
        if choose.boolean():  # a connection abandoned mid-reconciliation
            out.extend(["reconnect", instance])
        out.append("reconnect")
        if lost:
            # Frontiers move while the runtimes still serve the lost
            # connection: its response sends fail, its adapters leave it.
            for _ in range(2):
                shard = SHARD_OF[choose.choice(sorted(defined) or IDS)]
                uppers[shard] += 1
                out.extend([f"advance shard={shard} upper={uppers[shard]}", "settle"])
            if choose.boolean():
                release(held)
        out.append(instance)
        before = dict(defined)
        defined.clear()
        retired.clear()
        for id in IDS:
            if choose.integer(0, 3 if id in before else 1) > 0:
                define(id, before.get(id))
        out.append("initialization-complete")
        if held:
            out.append("settle")
            release(held)
        if lost:
            out.append("settle")
        if defined and choose.integer(0, 3) > 0:  # new data, then read it
            write(SHARD_OF[choose.choice(sorted(defined))])
            read()

    def release(held: list[str]) -> None:
        if len(held) == 2 and choose.boolean():
            held.reverse()
        out.extend(f"release runtime={runtime}" for runtime in held)
        out.append("settle")
        held.clear()

    if choose.boolean():
        write(SHARDS[0])
        define(IDS[0])
    for _ in range(choose.integer(1, max_steps)):
        step = choose.choice(
            [
                "write",
                "define",
                "read",
                "compact",
                "drop",
                "reconnect",
                "advance",
                "query",
                "reexport",
                "sink",
                "pair",
                "setting",
                "subscribe",
                "race",
            ]
        )
        if step == "write":
            write(choose.choice(SHARDS))
        elif step == "advance":
            shard = choose.choice(SHARDS)
            uppers[shard] += choose.integer(0, 2)
            out.append(f"advance shard={shard} upper={uppers[shard]}")
        elif step == "define":
            free = [id for id in IDS if id not in defined and id not in retired]
            if free:
                define(choose.choice(free))
        elif step == "read":
            read()
        elif step == "compact" and defined:
            id = choose.choice(sorted(defined))
            since = choose.integer(0, 3)
            out.append(f"allow-compaction id={id} since={since}")
            floor[id] = max(floor[id], since)
        elif step == "drop" and defined:
            id = choose.choice(sorted(defined))
            out.append(f"drop id={id}")
            del defined[id]
            retired.add(id)
        elif step == "reconnect":
            reconnect()
        elif step == "query" and defined:
            query()
        elif step == "reexport" and defined:
            reexport()
        elif step == "sink":
            sink()
        elif step == "subscribe":
            subscribe()
        elif step == "setting":
            # Placement is decided when a dataflow is created: turning the
            # setting on or off moves nothing already there.
            value = choose.choice(["true", "false"])
            out.append(f"update-configuration\nenable_compute_interactive_dataflows bool {value}")
        elif step == "pair":
            pair()
        elif step == "race" and defined:
            race()
    read()
    return Program(tuple(out))
