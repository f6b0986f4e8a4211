"""Tracing: every delivery and lifecycle event, on Trio time.

A tracer is anything with ``record(event)``; :class:`Trace` keeps the events in
memory and writes them as JSON lines. Recording is synchronous and never
checkpoints, so tracing does not change the schedule it observes.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable, Iterator
from typing import IO, Protocol

import attrs


class EventKind(enum.StrEnum):
    """What happened to an actor."""

    SPAWNED = "spawned"
    """The actor's mailbox exists and its task runs: it accepts messages."""
    DELIVERED = "delivered"
    """The actor took a message from its mailbox."""
    STOPPING = "stopping"
    """The actor's mailbox was closed: it drains what it accepted, then stops."""
    STOPPED = "stopped"
    """The actor's behaviour returned."""
    FAILED = "failed"
    """The actor's behaviour raised."""
    RESTARTED = "restarted"
    """A supervisor started the behaviour again, on the same mailbox."""
    ESCALATED = "escalated"
    """A supervisor's restart budget ran out; the failure goes up."""
    DROPPED = "dropped"
    """An accepted message was never delivered, because the actor ended first;
    or, with message latency on, a message arrived after the actor stopped
    accepting (``seq`` None: it was never stamped)."""
    DISCARDED = "discarded"
    """A late ``send`` or ``fail`` on a reply the framework had already failed
    (see :class:`~actors.Reply`) was discarded."""
    JOINED = "joined"
    """An actor joined a sequencer's group: ``seq`` is the first stamp it
    receives, ``detail`` the sequencer's name."""
    LEFT = "left"
    """A sequencer's member left its group, ended, or was found with its
    mailbox closed: ``seq`` is the first stamp it does not receive,
    ``detail`` the sequencer's name."""
    MARK = "mark"
    """An event the actor's behaviour recorded itself (``Inbox.mark``); ``detail`` says what."""


@attrs.frozen
class TraceEvent:
    """One traced event. For deliveries and drops, ``seq`` is the envelope's stamp
    and ``detail`` its sender's name; for a discarded reply, ``seq`` is the
    stamp of the ask's message and ``detail`` the late sender's name; for
    failures, the error's repr."""

    time: float
    actor: str
    kind: EventKind
    seq: int | None = None
    detail: str | None = None

    def to_json(self) -> str:
        return json.dumps(
            {
                "time": self.time,
                "actor": self.actor,
                "kind": self.kind.value,
                "seq": self.seq,
                "detail": self.detail,
            },
            ensure_ascii=False,
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, line: str) -> TraceEvent:
        data = json.loads(line)
        return cls(
            time=float(data["time"]),
            actor=str(data["actor"]),
            kind=EventKind(data["kind"]),
            seq=None if data["seq"] is None else int(data["seq"]),
            detail=None if data["detail"] is None else str(data["detail"]),
        )


class Tracer(Protocol):
    """Receives every event of a system, in the order they happen."""

    def record(self, event: TraceEvent) -> None: ...


@attrs.define(eq=False)
class Trace:
    """A tracer that keeps every event in memory, in order."""

    events: list[TraceEvent] = attrs.field(factory=list)

    def record(self, event: TraceEvent) -> None:
        self.events.append(event)

    def __iter__(self) -> Iterator[TraceEvent]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)

    def for_actor(self, name: str) -> list[TraceEvent]:
        return [event for event in self.events if event.actor == name]

    def write_jsonl(self, file: IO[str]) -> None:
        for event in self.events:
            file.write(event.to_json())
            file.write("\n")

    @classmethod
    def read_jsonl(cls, lines: Iterable[str]) -> Trace:
        return cls([TraceEvent.from_json(line) for line in lines if line.strip()])
