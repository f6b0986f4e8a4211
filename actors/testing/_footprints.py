"""The reduction's footprints: which objects each step touches, and the
state key they give (docs/actors.md, "Reduction").

A **step** is one task's run from one checkpoint to the next. Its
**footprint** is the set of objects it touched:

- the actor it runs in (every task of one actor shares that actor's state),
  or, for a task outside every actor (the program's main task, system
  tasks), one object that all of those share;
- every actor whose mailbox or cell it used (``ActorRef`` calls, framework
  posts), every reply it completed or waited on, the library's timekeeper,
  sequencers, receptionist and transit (reported through
  :mod:`actors._core._footprint`);
- every task it woke (a wake-up touches the woken task's actor), the nursery
  it spawned into (a refused spawn too), left, reached the end of or
  listed, the tasks of a cancel scope it cancelled (Trio's own cancels too:
  a child's error, a deadline; setting a deadline or a shield likewise),
  the scope's properties it read, the set of living tasks (an exit, the
  run's statistics) and of the deadlines open (one registered or removed,
  the run's statistics), both nurseries of a ``started()``;
- every Trio memory channel, ``Event``, ``Lock``, ``StrictFIFOLock``,
  ``Semaphore``, ``CapacityLimiter``, ``Condition`` and ``ParkingLot`` it
  called (their methods are wrapped for the run);
- everything it declared with :func:`touch`, and, every step, what the task
  declared with :func:`share`; reading a method of the class or an
  attribute holding a :class:`~actors._core._footprint.Table` touches only
  that attribute (and what binding it, or the instance's class or dict,
  changes);
- the entries it used of a :class:`~actors._core._footprint.Table` (see
  there for the kinds of setting and removing them).

Two steps are **dependent** when their footprints meet, unless both touched
the object in one commuting kind (:data:`EXIT`, a child leaving its nursery
with a value; :data:`READ`, reading a scope or such an attribute; a table's
kinds); any other access
is a write. Two runs are equivalent (the same Mazurkiewicz trace)
when, for every object, the steps that touched it did so in the same order,
a run of accesses of one commuting kind counting as a set. The **key** of a
state summarises exactly that: for each object, the sequence of (task, step
number) that touched it (a commuting run: their sum), combined over objects
in an order-free way, with the virtual time, the order of creation of the
tasks alive (Trio runs a batch in that order) and the tasks held until no
other can run. Equal keys (up to hash collisions, 2^-64 per pair) mean
equivalent runs, hence the same state, provided tasks share mutable state
only through what is recorded here.

Tasks are named canonically, by who spawned them and in which order (the
k-th task spawned by a task), not by creation order, which two equivalent
runs need not share; objects by the step that touched them first.
"""

from __future__ import annotations

import array
import collections
import functools
import inspect
import types
import weakref
from collections.abc import Callable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from typing import Any

import trio
from trio._core._run import GLOBAL_RUN_CONTEXT, Deadlines, Runner, _TaskStatus

from .._core import _footprint
from .._core._envelope import Address, current_address
from .._core._footprint import REWRITE, Table
from .._spawning import Spawner
from ._heap import interrupts_held

_MASK = (1 << 64) - 1
# The pseudo-task of Trio's run loop (deadlines, the first spawns).
_LOOP = 0x5EED
_CREATION = 0xC4EA7E
"""The name of Trio's creation order: every spawning step reads and writes
it (which task is spawned first sets the default order of later batches)."""
# The object that all tasks outside every actor share.
_OUTSIDE = 0x0B5E
# The set of tasks living (every exit touches it in the kind EXIT).
_LIVING = 0x11F3
# The deadlines of the scopes open (their changes touch it in the kind
# READ, which commutes; the run's statistics, whose next deadline is theirs
# least, write it).
_DEADLINES = 0xDEAD
EXIT = 1
"""The kind of access of a child that leaves its nursery with a value (see
:meth:`Recorder.child_finished`), and of an exit to the set of living
tasks: two of them commute."""
READ = 2
"""The kind of access that only reads (a cancel of a scope cancelled
already, a scope's property read, an attribute read that touches only the
attribute), or that changes a set whose members a write reads (the
deadlines open): two of them commute."""
ENTRIES = 4
"""The kind of access of a :class:`~actors._core._footprint.Table` entry's
use to the table's entries as a whole: two of them commute (each touches
its key's entry too); an operation on the whole table writes them."""
_SET = 16
"""Where the kinds of setting a table's entry to a plain value start (see
Recorder.set_item): one for each canonical form (_FORMS)."""
_FORMS: dict[object, int] = {}
"""Canonical form (``_footprint.canon``, tagged) -> its kind: kept for the
process, so that one value has one kind in every run of an exploration,
and two values one kind only if they are the same (not a hash)."""
_NONE: frozenset[int] = frozenset()


def _conflict(
    writes: AbstractSet[int],
    kinds: dict[int, int] | None,
    other: AbstractSet[int],
    other_kinds: dict[int, int] | None,
) -> bool:
    """Whether two steps that share no written name conflict: one writes
    what the other touched in a commuting kind, or both touched a name in
    two different kinds."""
    if kinds and not other.isdisjoint(kinds):
        return True
    if other_kinds and not writes.isdisjoint(other_kinds):
        return True
    if kinds and other_kinds:
        return any(other_kinds.get(name, kind) != kind for name, kind in kinds.items())
    return False


def _meeting(
    writes: AbstractSet[int],
    kinds: dict[int, int] | None,
    other: AbstractSet[int],
    other_kinds: dict[int, int] | None,
) -> set[int]:
    """The names over which two steps conflict (see _conflict): written by
    both, written by one and touched in a commuting kind by the other, or
    touched by both in two different kinds."""
    meeting = set(writes & other)
    if kinds:
        meeting.update(name for name in kinds if name in other)
        if other_kinds:
            meeting.update(
                name for name, kind in kinds.items() if other_kinds.get(name, kind) != kind
            )
    if other_kinds:
        meeting.update(name for name in other_kinds if name in writes)
    return meeting


def _label(obj: object) -> str:
    """What an object is, for a person: its type."""
    return type(obj).__qualname__


_LAYOUT_LABEL = " layout (its __dict__ and __class__)"
_LABELS = {
    _OUTSIDE: "the tasks outside actors",
    _CREATION: "Trio's creation order",
    _LIVING: "the living tasks",
    _DEADLINES: "the deadlines open",
}
"""The labels of the names that are no object's (see count_dependence)."""


def _kind(form: object) -> int:
    """The commuting kind of a setting's canonical ``form`` (_FORMS)."""
    kind = _FORMS.get(form)
    if kind is None:
        kind = _FORMS[form] = _SET + len(_FORMS)
    return kind


# The attributes whose change (or whose read: the dict) changes what every
# other attribute of an instance resolves to.
_LAYOUT = frozenset({"__dict__", "__class__"})


class _Task:
    __slots__ = ("canon", "spawned", "steps")

    def __init__(self, canon: int) -> None:
        self.canon = canon
        self.steps = 0
        self.spawned = 0


def _keeping_errors(hook: Callable[[Recorder, Any], None]) -> Callable[[Recorder, Any], None]:
    """A hook of the recorder that keeps its first error: Trio disables an
    instrument that raises, and a key that stops following the run would
    merge states that differ, so the run that had one is refused (see
    _run_once)."""

    @functools.wraps(hook)
    def kept(self: Recorder, task: Any) -> None:
        try:
            hook(self, task)
        except BaseException as error:  # pragma: no cover (a bug here)
            self.error = self.error or error
            raise

    return kept


class Recorder(trio.abc.Instrument):
    """Records the footprint of every step of one run (a Trio instrument
    and the library's footprint sink) and keeps the state key current."""

    def __init__(self) -> None:
        self._tasks: dict[Any, _Task] = {}
        # (Id of a watched instance, name) for each of its attributes read
        # alone so far in this run. Binding another attribute to anything
        # but a table changes no read alone: such a read of it, before,
        # would have put it here; after, it reads what the binding gave,
        # which is not read alone (or is the class's method again), so it
        # touches the instance. By instance: by class, whether a binding
        # recorded the attribute hung on whether another instance's was
        # read first, which independent steps may do in either order. (The
        # run's own: kept for the process, what a binding recorded hung on
        # which runs and programs came before, and so did the key.)
        self.alone: set[tuple[int, str]] = set()
        # The classes whose instances' attributes are recorded in this run.
        self.watched: frozenset[type] = frozenset()
        # (Class, name) -> whether binding it goes through a data
        # descriptor (see _through_descriptor).
        self.descriptors: dict[tuple[type, str], bool] = {}
        # Spawn order is creation order: the live tasks, in it.
        self._live: dict[Any, int] = {}
        self._live_hash: int | None = 0
        self._loop_spawned = 0
        self._current = _LOOP
        self._step = 0
        self._fresh = 0
        # Id of an object -> (a weak reference to it, or the object where it
        # cannot be referred to weakly, and its canonical name). Held
        # weakly, the object dies when the program lets it (its __del__ runs
        # as in a plain run), and what was kept by its id is forgotten then,
        # before another object can have it (see _forget); else kept alive,
        # so that ids stay unique.
        self._names: dict[int, tuple[object, int]] = {}
        # Canonical name -> (hash of its accesses, the last access).
        self._seq: dict[int, tuple[int, ...]] = {}
        self.total = 0
        self.accesses = 0
        self.error: BaseException | None = None
        # The footprint of each task's step in the batch running (names),
        # collected by the chooser at the next batch's start.
        self.batch: dict[Any, set[int]] = {}
        self._prints: set[int] = set()
        # The names each task's step in the batch running touched only in a
        # commuting kind (name -> kind), where it did; and the running task.
        self.commuting: dict[Any, dict[int, int]] = {}
        self._task: Any = None
        # A nursery whose child is leaving it in a commuting kind (see
        # child_finished), and the tasks it woke, whose next step touches it.
        self._finishing: Any = None
        self._resumed: dict[Any, object] = {}
        # The ids of the objects touched in the running step (id -> kind:
        # 0, a write), and the names of the actors.
        self._touched: dict[int, int] = {}
        # The attributes of watched instances touched alone in the running
        # step: (id, name, kind).
        self._attributes: set[tuple[int, str, int]] = set()
        self._actors: dict[Address, int] = {}
        # The tasks whose steps in the batch running made a task runnable,
        # and whether Trio's run loop did since the batch began (see quiet).
        self.loud: set[Any] = set()
        self.loop_woke = False
        # With the dependence counted (explore's count_dependence): what
        # each name is, for a person (the type of an object, an actor's
        # name, a table's entry...), and the dependent pairs of steps by it.
        self.labels: dict[int, str] | None = None
        self.dependence: collections.Counter[str] | None = None

    def count_dependence(self, into: collections.Counter[str]) -> None:
        """Count in ``into``, from now on, the dependent pairs of every
        batch's steps by what made them dependent (see dependent)."""
        self.labels = dict(_LABELS)
        self.dependence = into

    # The key ----------------------------------------------------------------

    def key(self, waiting: list[Any]) -> bytes:
        """The state key at a batch's start (``waiting``: the tasks held
        until no other can run)."""
        if self._live_hash is None:
            self._live_hash = hash(tuple(self._live.values()))
        held = tuple(sorted(self._tasks[task].canon for task in waiting if task in self._tasks))
        value = hash((self.total, self._live_hash, trio.current_time(), held))
        return (value & _MASK).to_bytes(8, "little") + self.total.to_bytes(8, "little")

    # Accesses ---------------------------------------------------------------

    def _access(self, name: int, kind: int = 0) -> None:
        """Record that the running step touches ``name``: a write (``kind``
        0) or an access of a commuting ``kind`` (see :data:`EXIT`).

        ``_seq[name]`` is the name's history so far: its hash, the task and
        step that last touched it, the hash's part of the key's sum (kept,
        not hashed again when the next access replaces it) and, after an
        access of a commuting kind, that kind and the segment's base and
        sum."""
        current, step = self._current, self._step
        known = self._seq.get(name)
        if kind:
            self._commute(name, kind, known)
            return
        if known is None:
            hashed = hash((name, current, step))
            mixed = hash((name, hashed)) & _MASK
        else:
            if known[1] == current and known[2] == step and len(known) == 4:
                return
            hashed = hash((known[0], current, step))
            mixed = hash((name, hashed)) & _MASK
            self.total -= known[3]
        self.accesses += 1
        self._prints.add(name)
        self._seq[name] = (hashed, current, step, mixed)
        self.total = (self.total + mixed) & _MASK

    def _commute(self, name: int, kind: int, known: tuple[int, ...] | None) -> None:
        """An access of a commuting ``kind``: consecutive ones of one kind
        form a segment of the name's history that is a set, not a sequence
        (its hash is their sum), so their order does not change the key."""
        current, step = self._current, self._step
        if known is not None and known[1] == current and known[2] == step:
            if len(known) == 7 and known[4] != kind:
                self._access(name)  # two kinds in one step: a write
            return  # this step touched it already: its write stands, or its segment has it
        if known is not None and len(known) == 7 and known[4] == kind:
            base, segment = known[5], known[6]
        else:
            base, segment = (0 if known is None else known[0]), 0
        segment = (segment + (hash((current, step)) & _MASK)) & _MASK
        hashed = hash((base, kind, segment))
        self.accesses += 1
        self.commuting.setdefault(self._task, {})[name] = kind
        mixed = hash((name, hashed)) & _MASK
        self._seq[name] = (hashed, current, step, mixed, kind, base, segment)
        if known is not None:
            self.total -= known[3]
        self.total = (self.total + mixed) & _MASK

    def touch(self, obj: object, kind: int = 0) -> None:
        key = id(obj)
        touched = self._touched
        had = touched.get(key)
        if had is not None:
            if had == 0 or had == kind:  # already in this step's footprint
                return
            kind = 0  # two kinds in one step: a write
        touched[key] = kind
        self._access(self._name(obj), kind)

    def _name(self, obj: object) -> int:
        """``obj``'s canonical name (given by the step touching it first)."""
        known = self._names.get(id(obj))
        if known is not None:
            return known[1]
        self._fresh += 1
        name = hash((self._current, self._step, self._fresh, "object"))
        key = id(obj)
        self._names[key] = (self._held(obj, key), name)
        if self.labels is not None:
            self.labels[name] = _label(obj)
        return name

    def _held(self, obj: object, key: int) -> object:
        """A weak reference to ``obj`` (whose id is ``key``) that forgets
        it when it dies, or ``obj`` itself if it cannot be referred to
        weakly."""
        cls = type(obj)
        finalized = cls in self.watched and getattr(cls, "__del__", None) is not None
        try:
            return weakref.ref(obj, lambda _: self._forget(key, finalized))
        except TypeError:
            return obj

    def _forget(self, key: int, finalized: bool) -> None:
        """The object whose id was ``key`` died: if ``finalized`` (an
        instance of a watched class with a ``__del__``), the step that
        dropped its last reference writes it (the finalizer ran there, and
        may have read or written anything of it; other objects' deaths,
        Trio's among them, change nothing a step can see, and which step
        is last to drop one may differ between equivalent orders); and
        nothing kept by its id may be taken for another object's, which may
        get the id next. (Run from inside whatever step dropped it: each
        container is replaced, not changed, where a caller may be
        iterating it.)"""
        known = self._names.pop(key, None)
        if finalized and known is not None:
            self._access(known[1])
        self._touched.pop(key, None)
        if any(entry[0] == key for entry in self._attributes):
            self._attributes = {entry for entry in self._attributes if entry[0] != key}
        if any(entry[0] == key for entry in self.alone):
            self.alone = {entry for entry in self.alone if entry[0] != key}

    def _labelled(self, name: int, obj: object, part: str, detail: str = "") -> int:
        """``name``, a part of ``obj`` (its name given), labelled when the
        dependence is counted."""
        if self.labels is not None and name not in self.labels:
            self.labels[name] = _label(obj) + part + detail
        return name

    def touch_item(self, table: object, key: object) -> None:
        """The running step touches the entry ``key`` of ``table`` (a
        :class:`~actors._core._footprint.Table`), and nothing else of it."""
        name = self._name(table)
        self._access(self._labelled(hash((name, "item", key)), table, " entry"))
        self._access(self._labelled(hash((name, "entries")), table, " entries"), ENTRIES)

    def touch_whole(self, table: object) -> None:
        """The running step touches all of ``table``: its order of keys and
        every entry."""
        name = self._name(table)
        self.touch(table)
        self._access(self._labelled(hash((name, "entries")), table, " entries"))

    def set_item(self, table: object, key: object, value: object, held: object) -> None:
        """The running step sets the entry ``key`` of ``table``, which held
        ``held`` (``MISSING``: none), to ``value`` (see Table for the
        kinds). Whichever of two settings of one key to one plain value
        runs first, each records the same: the order does not change the
        key. An object (not plain) is named by the step that first touches
        it, which two such settings would leave to the order they ran in:
        setting one is a write."""
        table_name = self._name(table)
        item = self._labelled(hash((table_name, "item", key)), table, " entry")
        form = _footprint.canon(value)
        if form is not _footprint.NOT_PLAIN:
            self._access(item, _kind(("value", form)))
            if held is _footprint.MISSING or _footprint.same(held, value):
                key_form = _footprint.canon(key)
                if key_form is _footprint.NOT_PLAIN:
                    self._access(table_name)  # a key told apart by more than equality
                else:
                    self._access(table_name, _kind(("key", key_form, form)))
            else:
                self._access(table_name, REWRITE)
            return
        self._access(item)
        if held is _footprint.MISSING:
            self._access(table_name)
        elif held is not value:
            self._access(table_name, REWRITE)

    def touch_attribute(self, obj: object, name: str) -> None:
        """The running step reads attribute ``name`` of ``obj`` (a watched
        instance) and nothing else of it: an attribute whose value records
        its own uses (see _apart), which only binding that attribute again,
        or changing the instance's class or dict, changes (each of which
        writes ``obj`` too: a step that wrote it has nothing to add)."""
        key = id(obj)
        if self._touched.get(key) == 0:
            return
        read = (key, name, READ)
        attributes = self._attributes
        if read in attributes:
            return
        attributes.add(read)
        known = self._name(obj)
        self._access(self._labelled(hash((known, "attr", name)), obj, ".", name), READ)
        layout = (key, "", READ)
        if layout not in attributes:
            attributes.add(layout)
            self._access(self._labelled(hash((known, "layout")), obj, _LAYOUT_LABEL), READ)

    def rebind(self, obj: object, name: str, alone: bool = True) -> None:
        """The running step binds attribute ``name`` of ``obj`` (a watched
        instance) again or deletes it, or reads its dict: it writes ``obj``
        and, if ``alone`` (it may have been read alone), what
        touch_attribute reads of it."""
        self.touch(obj)
        if not alone:
            return
        written = (id(obj), name, 0)
        if written in self._attributes:
            return
        self._attributes.add(written)
        known = self._name(obj)
        self._access(self._labelled(hash((known, "attr", name)), obj, ".", name))
        if name in _LAYOUT:
            self._access(self._labelled(hash((known, "layout")), obj, _LAYOUT_LABEL))

    def created(self, obj: object) -> None:
        """``obj`` (a Table) is made in the running step, which names it."""
        self._name(obj)

    def touch_actor(self, address: Address) -> None:
        name = self._actors.get(address)
        if name is None:
            name = self._actors[address] = hash(("actor", address))
            if self.labels is not None:
                self.labels[name] = f"actor {address.name}"
        self._access(name)

    def _touch_owner(self, task: Any) -> None:
        address = task.context.get(current_address)
        if address is not None:
            self.touch_actor(address)
            return
        owner = task.context.get(_footprint.owner)
        if owner is None:
            self._access(_OUTSIDE)
        else:
            self.touch(owner)

    # The instrument (its hooks keep their errors: _keeping_errors) ---------

    @_keeping_errors
    def before_task_step(self, task: Any) -> None:
        info = self._tasks.get(task)
        if info is None:  # spawned before the recorder was installed
            info = self._tasks[task] = _Task(hash(("early", task.name)))
        info.steps += 1
        self._current = info.canon
        self._step = info.steps
        self._fresh = 0
        self._touched = {}
        self._attributes = set()
        self._task = task
        self._prints = self.batch.setdefault(task, set())
        self._touch_owner(task)
        for obj in task.context.get(_footprint.standing, ()):
            self.touch(obj)
        if self._resumed:
            nursery = self._resumed.pop(task, None)
            if nursery is not None:
                self.touch(nursery)

    @_keeping_errors
    def after_task_step(self, task: Any) -> None:
        # A deadline passed when a step ends (set in the past, or the clock
        # moved on by the step) has the run loop cancel its scope before
        # the next batch, whether or not that wakes a task: the step is not
        # quiet. (An entry of the heap left behind by a deadline changed
        # since counts too: the safe side.)
        runner = GLOBAL_RUN_CONTEXT.runner
        heap = runner.deadlines._heap
        if heap and heap[0][0] <= runner.clock.current_time():
            self.loud.add(task)
        self._current = _LOOP
        self._step = 0
        self._prints = set()
        self._touched = {}
        self._attributes = set()
        self._task = None

    @_keeping_errors
    def task_spawned(self, task: Any) -> None:
        spawner = GLOBAL_RUN_CONTEXT.task if self._current != _LOOP else None
        info = self._tasks.get(spawner) if spawner is not None else None
        if info is None:
            self._loop_spawned += 1
            canon = hash((_LOOP, self._loop_spawned))
        else:
            info.spawned += 1
            canon = hash((info.canon, info.spawned))
        self._tasks[task] = _Task(canon)
        self._live[task] = canon
        self._live_hash = None
        self._access(_CREATION)
        if task.parent_nursery is not None:
            self.touch(task.parent_nursery)

    @_keeping_errors
    def task_scheduled(self, task: Any) -> None:
        if self._task is None:
            self.loop_woke = True
        else:
            self.loud.add(self._task)
        finishing = self._finishing
        if finishing is not None and task is finishing.parent_task:
            # The last child out of a nursery wakes its parent: which of the
            # children leaving in one kind was last does not matter, so the
            # wake is the nursery's, and the parent's next step touches it.
            self._resumed[task] = finishing
            return
        self._touch_owner(task)

    @_keeping_errors
    def task_exited(self, task: Any) -> None:
        # In the exiting task's step (it left its nursery: child_finished).
        self._access(_LIVING, EXIT)
        self._live.pop(task, None)
        self._live_hash = None

    def child_finished(self, nursery: Any, outcome: Any) -> None:
        """``nursery``'s child is leaving it with ``outcome``, in the
        child's last step. Leaving with a value only takes the child out of
        the nursery's set, which commutes with any other child's doing the
        same (:data:`EXIT`). Leaving with an error, ``Cancelled`` too, puts
        it in the nursery's list, in the order they left, which whoever
        catches the group can see (even a scope that would swallow the
        ``Cancelled`` may not: a cancel of an enclosing one, coming later,
        lets the group escape): a write."""
        error = getattr(outcome, "error", None)
        if error is None:
            self._finishing = nursery
            self.touch(nursery, EXIT)
        else:
            self.touch(nursery)

    def finished(self) -> None:
        self._finishing = None

    def dependent(self, ran: tuple[Any, ...]) -> list[tuple[int, int]]:
        """The pairs (i, j), i < j, of the steps of ``ran`` (the batch just
        run, one step each, in order) that touched a common object, not both
        in one commuting kind."""
        writes = [self.batch.get(task, _NONE) for task in ran]
        kinds = [self.commuting.get(task) for task in ran]
        pairs = []
        for i in range(len(ran)):
            for j in range(i + 1, len(ran)):
                if not writes[i].isdisjoint(writes[j]) or (
                    (kinds[i] or kinds[j]) and _conflict(writes[i], kinds[i], writes[j], kinds[j])
                ):
                    pairs.append((i, j))
        if self.dependence is not None:
            self._count(pairs, writes, kinds)
        return pairs

    def _count(
        self,
        pairs: list[tuple[int, int]],
        writes: Sequence[AbstractSet[int]],
        kinds: Sequence[dict[int, int] | None],
    ) -> None:
        """Count each dependent pair under every name that made it so (a
        pair that met on several counts under each)."""
        assert self.dependence is not None
        assert self.labels is not None
        for i, j in pairs:
            for name in _meeting(writes[i], kinds[i], writes[j], kinds[j]):
                self.dependence[self.labels.get(name, "other")] += 1

    def quiet(self, ran: tuple[Any, ...]) -> list[int]:
        """The indices of the steps of ``ran`` (the batch just run) that
        made no task runnable (not even their own, as a checkpoint does)
        and left no deadline passed (see after_task_step); none if Trio's
        run loop made a task runnable after the batch (a deadline's
        cancel, for one)."""
        if self.loop_woke:
            return []
        return [i for i, task in enumerate(ran) if task not in self.loud]

    def end_batch(self) -> None:
        self.batch = {}
        self.commuting = {}
        self.loud = set()
        self.loop_woke = False


# Trio's primitives, wrapped for a run -------------------------------------------


def _wrapped(function: Callable[..., Any], of: Callable[[Any], object]) -> Callable[..., Any]:
    if inspect.iscoroutinefunction(function):

        @functools.wraps(function)
        async def touching_async(self: Any, *args: Any, **kwargs: Any) -> Any:
            _footprint.touch(of(self))
            return await function(self, *args, **kwargs)

        return touching_async

    @functools.wraps(function)
    def touching(self: Any, *args: Any, **kwargs: Any) -> Any:
        _footprint.touch(of(self))
        return function(self, *args, **kwargs)

    return touching


def _itself(obj: object) -> object:
    return obj


def _state(channel: Any) -> object:
    return channel._state


def _owners(scope: Any) -> None:
    """Touch the actor of every task inside ``scope`` (a cancel reaches
    them at their next checkpoint, whether or not they are parked)."""
    sink = _footprint.sink
    if not isinstance(sink, Recorder):
        return
    statuses = [scope._cancel_status]
    while statuses:
        status = statuses.pop()
        if status is None:
            continue
        for task in status._tasks:
            sink._touch_owner(task)
        statuses.extend(status._children)


def _reaching(function: Callable[..., Any]) -> Callable[..., Any]:
    """A setter of a cancel scope (a deadline, a shield) that may change
    which tasks inside it are cancelled: it writes the scope and reaches
    them as a cancel does."""

    @functools.wraps(function)
    def setting(self: Any, value: Any) -> Any:
        sink = _footprint.sink
        if isinstance(sink, Recorder):
            sink.touch(self)
            _owners(self)
        return function(self, value)

    return setting


def _deadline(function: Callable[..., Any]) -> Callable[..., Any]:
    """The runner's ``deadlines.add`` or ``remove`` (a scope with a deadline
    entered or left, its deadline set, its cancel): the set of deadlines
    open changes, in a kind that commutes."""

    @functools.wraps(function)
    def changing(self: Any, *args: Any) -> Any:
        sink = _footprint.sink
        if isinstance(sink, Recorder):
            sink._access(_DEADLINES, READ)
        return function(self, *args)

    return changing


def _started(function: Callable[..., Any]) -> Callable[..., Any]:
    """``task_status.started()``: the task moves from the nursery
    ``start`` made for it to the one ``start`` was called on."""

    @functools.wraps(function)
    def started(self: Any, *args: Any) -> Any:
        sink = _footprint.sink
        if isinstance(sink, Recorder):
            sink.touch(self._old_nursery)
            sink.touch(self._new_nursery)
        return function(self, *args)

    return started


def _reading(function: Callable[..., Any]) -> Callable[..., Any]:
    """A getter of a cancel scope: it reads the scope (:data:`READ`)."""

    @functools.wraps(function)
    def getting(self: Any) -> Any:
        sink = _footprint.sink
        if isinstance(sink, Recorder):
            sink.touch(self, READ)
        return function(self)

    return getting


def _statistics(function: Callable[..., Any]) -> Callable[..., Any]:
    """Trio's run statistics (the tasks living, the next deadline, among
    others): read what every spawn, exit and deadline's change touches
    (not ``tasks_runnable``, ``run_sync_soon_queue_size`` or
    ``io_statistics``: docs/actors.md says so)."""

    @functools.wraps(function)
    def statistics(self: Any) -> Any:
        sink = _footprint.sink
        if isinstance(sink, Recorder):
            sink._access(_CREATION)
            sink._access(_LIVING)
            sink._access(_DEADLINES)
        return function(self)

    return statistics


def _finishing(function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    def finished(self: Any, task: Any, outcome: Any) -> Any:
        sink = _footprint.sink
        if not isinstance(sink, Recorder):
            return function(self, task, outcome)
        sink.child_finished(self, outcome)
        try:
            return function(self, task, outcome)
        finally:
            sink.finished()

    return finished


def _cancel(function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    def cancelling(self: Any, *args: Any, **kwargs: Any) -> Any:
        # Every cancel, Trio's own too (a child's error cancels its nursery,
        # a deadline passes). One of a scope cancelled already does nothing
        # but read that it is: two such commute (READ). Otherwise it writes
        # the scope (a task that enters it later, which its __enter__
        # records, sees it cancelled) and reaches every task inside it.
        sink = _footprint.sink
        if isinstance(sink, Recorder):
            if self._cancel_called:
                sink.touch(self, READ)
            else:
                sink.touch(self)
                _owners(self)
        return function(self, *args, **kwargs)

    return cancelling


# (class, the methods and properties wrapped, what a call touches)
_PRIMITIVES: tuple[tuple[type, tuple[str, ...], Callable[[Any], object]], ...] = (
    (
        trio.MemorySendChannel,
        ("send_nowait", "send", "clone", "close", "aclose", "statistics"),
        _state,
    ),
    (
        trio.MemoryReceiveChannel,
        ("receive_nowait", "receive", "clone", "close", "aclose", "statistics"),
        _state,
    ),
    (trio.Event, ("set", "is_set", "wait", "statistics"), _itself),
    (
        trio.lowlevel.ParkingLot,
        (
            "park",
            "unpark",
            "unpark_all",
            "repark",
            "repark_all",
            "break_lot",
            "statistics",
            "__len__",
            "__bool__",
        ),
        _itself,
    ),
    (
        trio.Lock,
        ("acquire", "acquire_nowait", "release", "locked", "statistics"),
        _itself,
    ),
    (
        trio.StrictFIFOLock,
        ("acquire", "acquire_nowait", "release", "locked", "statistics"),
        _itself,
    ),
    (
        trio.Semaphore,
        ("acquire", "acquire_nowait", "release", "value", "statistics"),
        _itself,
    ),
    (
        trio.CapacityLimiter,
        (
            "acquire",
            "acquire_nowait",
            "acquire_on_behalf_of",
            "acquire_on_behalf_of_nowait",
            "release",
            "release_on_behalf_of",
            "total_tokens",
            "borrowed_tokens",
            "available_tokens",
            "statistics",
        ),
        _itself,
    ),
    (
        trio.Condition,
        ("acquire", "acquire_nowait", "release", "locked", "wait", "notify", "notify_all"),
        _itself,
    ),
)


def _apart(obj: Any, name: str, value: object) -> bool:
    """Whether reading attribute ``name`` of ``obj`` (a watched instance),
    which gave ``value``, reads only that attribute (Recorder.
    touch_attribute) rather than the whole instance: ``value`` is a
    :class:`~actors._core._footprint.Table` (which records its own uses),
    or a method of ``obj``'s class bound to ``obj`` (what the instance may
    change is not in it). Anything else may be changed in place through
    what the read gave (a list, another object): a write of the instance."""
    kind = type(value)
    if kind is Table:
        return True
    if kind is not types.MethodType or value.__self__ is not obj:  # type: ignore[attr-defined]
        return False
    return getattr(type(obj), name, None) is value.__func__  # type: ignore[attr-defined]


def _touching_getattribute(original: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
    """A ``__getattribute__`` that touches the instance (see _apart for the
    reads that touch only their attribute: none if the class has a
    ``__getattribute__`` of its own, which may choose by what it reads
    unrecorded)."""
    plain = original is object.__getattribute__

    def __getattribute__(self: Any, name: str) -> Any:
        sink = _footprint.sink
        if not isinstance(sink, Recorder):
            return original(self, name)
        try:
            value = original(self, name)
        except BaseException:
            sink.rebind(self, name)  # an attribute found absent was read too
            raise
        if name in _LAYOUT:
            sink.rebind(self, name)  # the dict, which may be changed through
            return value
        touched = sink._touched
        key = id(self)
        if touched.get(key) == 0:
            return value  # written whole in this step already (see touch_attribute)
        kind = type(value)
        if plain and (kind is Table or kind is types.MethodType) and _apart(self, name, value):
            sink.alone.add((key, name))
            sink.touch_attribute(self, name)
        else:
            touched[key] = 0  # sink.touch(self), inline: this wrapper is the hottest caller
            sink._access(sink._name(self))
        return value

    return __getattribute__


def _rebinding(obj: object, name: str, value: object = Table, own: bool = False) -> None:
    """``obj``'s attribute ``name`` is bound again to ``value`` or deleted
    (no value: a deletion may uncover a table of the class, read alone), by
    a ``__setattr__`` of the class's ``own`` or object's."""
    sink = _footprint.sink
    if isinstance(sink, Recorder):
        alone = (
            value is Table
            or type(value) is Table
            or name in _LAYOUT
            or (id(obj), name) in sink.alone
            or (type(value) is types.MethodType and _apart(obj, name, value))
            # A binding that may not bind the attribute in the instance (a
            # __setattr__ of the class's own, a property): a read alone of
            # it after would not read what it gave, so sink.alone may not
            # have it by then (whether it had hung on the order).
            or own
            or _through_descriptor(sink, type(obj), name)
        )
        # Nothing at all where the step wrote the instance whole already
        # and no read alone can see the binding.
        if alone or sink._touched.get(id(obj)) != 0:
            sink.rebind(obj, name, alone)


def _touching_setattr(original: Callable[[Any, str, Any], None]) -> Callable[[Any, str, Any], None]:
    own = original is not object.__setattr__

    def __setattr__(self: Any, name: str, value: Any) -> None:
        _rebinding(self, name, value, own)
        original(self, name, value)

    return __setattr__


def _through_descriptor(sink: Recorder, cls: type, name: str) -> bool:
    """Whether binding ``name`` on an instance of ``cls`` goes through a data
    descriptor of the class other than a slot (a property, say), kept for
    the run."""
    key = (cls, name)
    known = sink.descriptors.get(key)
    if known is None:
        known = False
        for klass in cls.__mro__:
            found = klass.__dict__.get(name, _ABSENT)
            if found is not _ABSENT:
                kind = type(found)
                known = kind is not types.MemberDescriptorType and (
                    hasattr(kind, "__set__") or hasattr(kind, "__delete__")
                )
                break
        sink.descriptors[key] = known
    return known


def _touching_delattr(original: Callable[[Any, str], None]) -> Callable[[Any, str], None]:
    def __delattr__(self: Any, name: str) -> None:
        _rebinding(self, name)
        original(self, name)

    return __delattr__


def check_shared(shared: object) -> tuple[type, ...]:
    """``shared`` as :func:`~actors.testing.explore` takes it: classes."""
    if isinstance(shared, (str, bytes, type)) or not hasattr(shared, "__iter__"):
        raise TypeError(f"shared must be a sequence of classes, not {shared!r}")
    classes = tuple(shared)
    for cls in classes:
        if not isinstance(cls, type):
            raise TypeError(f"shared must be a sequence of classes; {cls!r} is not one")
        if cls.__module__ == "builtins":
            raise TypeError(
                f"shared cannot watch the built-in {cls.__name__!r} (its attributes are not "
                "looked up through the class): wrap it in a class of your own"
            )
        container = next((base for base in _CONTAINERS if issubclass(cls, base)), None)
        if container is not None:
            kind = container.__name__
            article = "an" if kind[0] in "aeiou" else "a"
            raise TypeError(
                f"shared cannot watch {cls.__name__!r}, {article} {kind}: its items are "
                "not attributes (t[k] = v is not recorded); hold the container in an "
                "attribute of a class of your own"
            )
    return classes


_CONTAINERS = (dict, list, set, bytearray, collections.deque, array.array)
"""Built-in containers whose items ``shared`` would not see."""


def _plan(shared: tuple[type, ...]) -> list[tuple[type, str, object, object]]:
    """What recording with ``shared`` replaces: (class, attribute, the
    original or _ABSENT where inherited, the replacement); made once per
    ``shared`` (while nothing is replaced)."""
    plan: list[tuple[type, str, object, object]] = []
    for cls in dict.fromkeys((Spawner, *shared)):
        for name, wrap in (
            ("__getattribute__", _touching_getattribute),
            ("__setattr__", _touching_setattr),
            ("__delattr__", _touching_delattr),
        ):
            plan.append((cls, name, cls.__dict__.get(name, _ABSENT), wrap(getattr(cls, name))))
    for cls, names, of in _PRIMITIVES:
        for name in names:
            # Inherited (StrictFIFOLock's from _LockImpl): wrapped where it
            # is found, put back on this class only.
            here = cls.__dict__.get(name, _ABSENT)
            original = getattr(cls, name) if here is _ABSENT else here
            if isinstance(original, property):
                assert original.fget is not None
                replacement: object = property(
                    _wrapped(original.fget, of),
                    None if original.fset is None else _wrapped(original.fset, of),
                    None if original.fdel is None else _wrapped(original.fdel, of),
                )
            else:
                replacement = _wrapped(original, of)
            plan.append((cls, name, here, replacement))
    finished = trio.Nursery.__dict__["_child_finished"]
    plan.append((trio.Nursery, "_child_finished", finished, _finishing(finished)))
    # The parent, at the nursery's end, sees whether children are left.
    nested = trio.Nursery.__dict__["_nested_child_finished"]
    plan.append((trio.Nursery, "_nested_child_finished", nested, _wrapped(nested, _itself)))
    # (cancel calls it)
    cancel = trio.CancelScope.__dict__["_cancel"]
    plan.append((trio.CancelScope, "_cancel", cancel, _cancel(cancel)))
    # Entering a scope another task cancelled, or leaving one (whether the
    # cancel was caught), depends on the order with that cancel.
    for name in ("__enter__", "__exit__"):
        method = trio.CancelScope.__dict__[name]
        plan.append((trio.CancelScope, name, method, _wrapped(method, _itself)))
    for name in ("add", "remove"):
        method = Deadlines.__dict__[name]
        plan.append((Deadlines, name, method, _deadline(method)))
    started = _TaskStatus.__dict__["started"]
    plan.append((_TaskStatus, "started", started, _started(started)))
    shown = trio.CancelScope.__dict__["__repr__"]
    plan.append((trio.CancelScope, "__repr__", shown, _reading(shown)))
    # What a task reads of a scope, and what changes who is cancelled in it.
    for name in ("deadline", "relative_deadline", "shield", "cancel_called", "is_relative"):
        prop = trio.CancelScope.__dict__[name]
        setter = None if prop.fset is None else _reaching(prop.fset)
        plan.append((trio.CancelScope, name, prop, property(_reading(prop.fget), setter)))
    caught = trio.CancelScope.__dict__["cancelled_caught"]  # a slot
    plan.append(
        (
            trio.CancelScope,
            "cancelled_caught",
            caught,
            property(_reading(caught.__get__), caught.__set__),
        )
    )
    # Who is in a nursery, and whether it takes a new child (a refused
    # spawn makes no task to record).
    children = trio.Nursery.__dict__["child_tasks"]
    plan.append((trio.Nursery, "child_tasks", children, property(_wrapped(children.fget, _itself))))
    for name in ("start_soon", "start"):
        method = trio.Nursery.__dict__[name]
        plan.append((trio.Nursery, name, method, _wrapped(method, _itself)))
    statistics = Runner.__dict__["current_statistics"]
    plan.append((Runner, "current_statistics", statistics, _statistics(statistics)))
    return plan


# ``shared`` -> its plan, and what each (class, name) of it held and found
# when it was made: a plan is made again when any differs (the program
# changed a class between explorations: the old plan would run its old
# code, and put the old code back after).
_PLANS: dict[
    tuple[type, ...],
    tuple[list[tuple[type, str, object, object]], list[tuple[object, object]]],
] = {}


def _lookups(plan: list[tuple[type, str, object, object]]) -> list[tuple[object, object]]:
    return [
        (cls.__dict__.get(name, _ABSENT), getattr(cls, name, _ABSENT)) for cls, name, _, _ in plan
    ]


def _current_plan(shared: tuple[type, ...]) -> list[tuple[type, str, object, object]]:
    kept = _PLANS.get(shared)
    if kept is not None:
        plan, seen = kept
        now = _lookups(plan)
        if len(now) == len(seen) and all(
            held is was_held and found is was_found
            for (held, found), (was_held, was_found) in zip(now, seen, strict=True)
        ):
            return plan
    plan = _plan(shared)
    _PLANS[shared] = (plan, _lookups(plan))
    return plan


@contextmanager
def recording(shared: tuple[type, ...] = ()) -> Iterator[Recorder]:
    """Record the footprints of the run in this block: the recorder is the
    library's sink, Trio's primitives touch what they use, and every
    attribute read or write of an instance of a ``shared`` class (or of the
    library's actor system) touches the instance. The caller adds the
    recorder to the run as an instrument."""
    if _footprint.sink is not None:
        raise RuntimeError("footprints are already being recorded (one run at a time)")
    plan = _current_plan(shared)
    recorder = Recorder()
    recorder.watched = frozenset(cls for cls, name, _, _ in plan if name == "__getattribute__")
    done = 0
    try:
        for cls, name, _, replacement in plan:
            setattr(cls, name, replacement)
            done += 1
        _footprint.sink = recorder
        yield recorder
    finally:
        _footprint.sink = None
        with interrupts_held():
            _restore(plan[:done])


def _restore(plan: list[tuple[type, str, object, object]]) -> None:
    """Put back what ``plan`` replaced, each one whatever the others do (a
    program that deleted a replacement itself leaves it deleted)."""
    for cls, name, original, _ in reversed(plan):
        if original is not _ABSENT:
            setattr(cls, name, original)
        elif name in cls.__dict__:
            delattr(cls, name)


_ABSENT = object()
