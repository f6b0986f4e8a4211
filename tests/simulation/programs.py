"""Hypothesis strategies for whole replica programs, written as spec files.

A program is a list of directives: writes, index definitions (the same or
another as_of and key), reconnects that replay, change or leave out indexes,
connections abandoned mid-reconciliation, holds and releases of either
runtime around a reconnect, compactions, drops and reads. The expected output
of every directive comes from the plain reference model, so a program is a
complete spec: a failing one replays with ``trio-reconcile run``.
"""

from __future__ import annotations

import attrs
from hypothesis import strategies as st

from actors.driver._model import ReferenceModel
from actors.driver._runner import Topology
from actors.driver._spec import parse_spec

IDS = (1001, 2001)
SHARDS = ("a", "b")
SHARD_OF = dict(zip(IDS, SHARDS, strict=True))  # each source reads one shard
READ_TIMEOUT = "5"


@attrs.frozen
class Program:
    directives: tuple[str, ...]

    def spec_text(self) -> str:
        """The program as a spec file, expected blocks from the reference model."""
        bare = "\n\n".join(f"{directive}\n----" for directive in self.directives) + "\n"
        model = ReferenceModel()
        blocks = []
        for stanza, directive in zip(
            parse_spec(bare, "generated.spec").stanzas, self.directives, strict=True
        ):
            expected = model.expect(stanza)
            blocks.append("\n".join([directive, "----", *expected]))
        return "\n\n".join(blocks) + "\n"


@st.composite
def programs(draw: st.DrawFn, max_steps: int = 10) -> Program:
    out: list[str] = ["create-instance", "initialization-complete"]
    uppers = dict.fromkeys(SHARDS, 0)
    defined: dict[int, tuple[str, int]] = {}  # id -> (shard, as_of) as the program defined it

    def write(shard: str) -> None:
        ts = uppers[shard] + draw(st.integers(0, 1))
        values = draw(st.lists(st.integers(0, 9), min_size=1, max_size=3))
        out.append(
            f"write-rows shard={shard} ts={ts}\n" + "\n".join(f"  {v} {v * 7}" for v in values)
        )
        uppers[shard] = ts + 1

    def define(id: int) -> None:
        shard = SHARD_OF[id]
        key = draw(st.sampled_from(["[0]", "[1]"]))
        as_of = draw(st.integers(0, 1))
        out.append(f"define-index source={id - 1} index={id} shard={shard} key={key} as-of={as_of}")
        out.append(f"schedule id={id}")
        defined[id] = (shard, as_of)

    def read() -> None:
        id = draw(st.sampled_from(sorted(defined) or IDS))
        shard = SHARD_OF[id]
        newest = max(uppers[shard] - 1, 0)
        ts = draw(st.sampled_from([newest, newest, uppers[shard], 0]))
        verb = draw(st.sampled_from(["peek", "count"]))
        out.append(f"{verb} id={id} ts={ts} timeout-secs={READ_TIMEOUT}")

    if draw(st.booleans()):
        write(SHARDS[0])
        define(IDS[0])
    for _ in range(draw(st.integers(1, max_steps))):
        step = draw(
            st.sampled_from(["write", "define", "read", "compact", "drop", "reconnect", "advance"])
        )
        if step == "write":
            write(draw(st.sampled_from(SHARDS)))
        elif step == "advance":
            shard = draw(st.sampled_from(SHARDS))
            uppers[shard] += draw(st.integers(0, 2))
            out.append(f"advance shard={shard} upper={uppers[shard]}")
        elif step == "define":
            free = [id for id in IDS if id not in defined]
            if free:
                define(draw(st.sampled_from(free)))
        elif step == "read":
            read()
        elif step == "compact" and defined:
            id = draw(st.sampled_from(sorted(defined)))
            out.append(f"allow-compaction id={id} since={draw(st.integers(0, 3))}")
        elif step == "drop" and defined:
            id = draw(st.sampled_from(sorted(defined)))
            out.append(f"drop id={id}")
            del defined[id]
        elif step == "reconnect":
            hold = draw(st.sampled_from([None, "maintenance", "interactive"]))
            if hold is not None:
                out.append(f"hold runtime={hold}")
            if draw(st.booleans()):  # a connection abandoned mid-reconciliation
                out += ["reconnect", "create-instance"]
            out += ["reconnect", "create-instance"]
            defined_before = dict(defined)
            defined.clear()
            for id in IDS:
                if draw(st.booleans()):
                    define(id)
            out.append("initialization-complete")
            if hold is not None:
                out += ["settle", f"release runtime={hold}", "settle"]
            if defined and draw(st.integers(0, 3)) > 0:  # new data, then read it
                write(SHARD_OF[draw(st.sampled_from(sorted(defined)))])
                read()
            del defined_before
    read()
    return Program(tuple(out))


faulty_topologies = st.builds(
    Topology,
    processes=st.integers(1, 2),
    workers=st.integers(1, 3),
    interactive=st.just(True),
    barrier=st.just(True),
    faults=st.sampled_from([0.1, 0.3]),
)

topologies = st.builds(
    Topology,
    processes=st.integers(1, 2),
    workers=st.integers(1, 4),
    interactive=st.just(True),
    barrier=st.just(True),
)
