"""``explore(jobs=)``: a dfs shared between forked
processes (docs/actors.md, "Both cores"). Each worker reports what its runs
add up to; together they reach every trace and final state one process
does, and a failure found in a worker's share is replayed, minimised and
confirmed in the caller's process. (Real processes: each exploration here
ends by itself, and the test of a worker that never does bounds every wait
on the processes it starts.)"""

from __future__ import annotations

import os
import select
import signal
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
import trio

from actors.testing import (
    Exploration,
    ExplorationFailedError,
    NondeterminismError,
    WorkerError,
    explore,
)

from .test_delays import tellers

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="jobs need os.fork")


def three_tasks(
    log: Path | None = None,
    sequence: tuple[str, ...] | None = None,
    raising: BaseException | None = None,
    orders: list[tuple[str, ...]] | None = None,
) -> Callable[[], Awaitable[None]]:
    """Three tasks of two steps each, appending to one list: its final order
    is the run's final state, appended to ``orders`` and written to ``log``
    with the process's id; where it is ``sequence``, the run raises
    ``raising``, or fails."""

    async def main() -> None:
        seen: list[str] = []

        async def task(name: str) -> None:
            for step in range(2):
                seen.append(f"{name}{step}")
                await trio.lowlevel.checkpoint()

        async with trio.open_nursery() as nursery:
            for name in "abc":
                nursery.start_soon(task, name)
        if orders is not None:
            orders.append(tuple(seen))
        if log is not None:
            with log.open("a") as out:
                out.write(f"{os.getpid()} {' '.join(seen)}\n")
        if raising is not None and tuple(seen) == sequence:
            raise raising
        assert tuple(seen) != sequence, "the sequence looked for"

    return main


def finals(log: Path) -> tuple[set[str], set[int]]:
    """The final states ``log`` has, and the processes that wrote them."""
    lines = [line.split(" ", 1) for line in log.read_text().splitlines()]
    return {state for _, state in lines}, {int(pid) for pid, _ in lines}


@pytest.mark.parametrize(("bound", "delays"), [(1, 0), (2, 0), (1, 1), (0, 2)])
@pytest.mark.parametrize("reduction", [True, False])
def test_two_jobs_reach_every_trace_and_final_state_one_does(
    tmp_path: Path, bound: int, delays: int, reduction: bool
) -> None:
    found: dict[int, tuple[Exploration, set[str], set[int]]] = {}
    for jobs in (1, 2):
        log = tmp_path / f"finals-{jobs}"
        exploration = explore(
            three_tasks(log),
            strategy="dfs",
            bound=bound,
            delays=delays,
            budget=100_000,
            reduction=reduction,
            count_traces=True,
            jobs=jobs,
        )
        assert exploration.complete
        assert exploration.failure is None
        found[jobs] = (exploration, *finals(log))
    (alone, alone_finals, alone_pids), (shared, shared_finals, shared_pids) = found[1], found[2]
    assert shared_finals == alone_finals
    assert shared.traces == alone.traces
    assert shared.interleavings >= alone.interleavings if reduction else shared.runs == alone.runs
    assert alone_pids == {os.getpid()}
    # The worker ran schedules of its own, and its runs are counted.
    assert len(shared_pids) == 2
    assert os.getpid() in shared_pids
    assert shared.runs == len((tmp_path / "finals-2").read_text().splitlines())


def test_a_shared_exploration_counts_the_same_each_time() -> None:
    def shared() -> Exploration:
        return explore(
            three_tasks(),
            strategy="dfs",
            bound=1,
            delays=1,
            budget=100_000,
            count_traces=True,
            jobs=2,
        )

    first, second = shared(), shared()
    assert first == second
    assert first.complete
    assert first.merged + first.skipped > 0


def test_the_budget_left_at_the_fork_is_split_between_the_jobs(tmp_path: Path) -> None:
    whole = explore(three_tasks(), strategy="dfs", bound=2, budget=100_000)
    assert whole.complete
    log = tmp_path / "finals"
    cut = explore(three_tasks(log), strategy="dfs", bound=2, budget=whole.runs - 1, jobs=2)
    assert not cut.complete
    assert cut.runs <= whole.runs - 1
    assert cut.runs == len(log.read_text().splitlines())


def test_the_levels_before_the_last_are_shared_too(tmp_path: Path) -> None:
    # A budget of the runs of levels 0 and 1 alone: were only the last level
    # (2) shared, one process would spend it before any fork.
    first_levels = len(sequences(1))
    log = tmp_path / "finals"
    explore(three_tasks(log), strategy="dfs", bound=2, budget=first_levels, reduction=False, jobs=2)
    processes = {line.split()[0] for line in log.read_text().splitlines()}
    assert len(processes) == 2


def sequences(bound: int) -> list[tuple[str, ...]]:
    """The final orders of three_tasks's runs, in the order one process's
    dfs without reduction runs them."""
    seen: list[tuple[str, ...]] = []
    explore(three_tasks(orders=seen), strategy="dfs", bound=bound, budget=100_000, reduction=False)
    return seen


def only_in(share: int) -> tuple[str, ...]:
    """A final order of three_tasks that one schedule alone reaches at bound
    1, in the first process's share (0) or the worker's (1) of two jobs."""
    runs = sequences(1)
    return next(
        order
        for index, order in enumerate(runs)
        if index and (index - 1) % 2 == share and runs.count(order) == 1
    )


@pytest.mark.parametrize("share", [0, 1])
@pytest.mark.parametrize("raising", [SystemExit(7), KeyboardInterrupt("seven")])
def test_what_passes_on_from_either_share_is_raised_as_itself(
    share: int, raising: BaseException
) -> None:
    program = three_tasks(sequence=only_in(share), raising=raising)
    with pytest.raises(type(raising)) as raised:
        explore(program, strategy="dfs", bound=1, reduction=False, jobs=2)
    assert raised.value.args == raising.args
    assert type(raised.value) is type(raising)


class Unsendable:
    """An exception's argument that neither pickles nor converts to text."""

    def __reduce__(self) -> str:
        raise TypeError("does not pickle")

    def __str__(self) -> str:
        raise ValueError("has no text")

    __repr__ = __str__


class Leaving(SystemExit):
    pass


class Untupled(KeyboardInterrupt):
    @property
    def args(self) -> int:  # type: ignore[override]
        return 5


def awkward(name: str) -> tuple[BaseException, type[BaseException], tuple[object, ...] | None]:
    """An exception a program raises, the kind the exploration raises for
    it (in either share) and that one's arguments (None: not compared)."""
    if name == "argument without text":
        return KeyboardInterrupt(Unsendable()), KeyboardInterrupt, None
    if name == "subclass of SystemExit":
        return Leaving(5), SystemExit, (5,)
    if name == "exit code set after":
        error = SystemExit(1)
        error.code = 2
        return error, SystemExit, (1,)
    if name == "arguments that are not a tuple":
        return Untupled(), KeyboardInterrupt, None
    return GeneratorExit(lambda: 1), GeneratorExit, None  # (a lambda does not pickle)


@pytest.mark.parametrize("share", [0, 1])
@pytest.mark.parametrize(
    "name",
    [
        "argument without text",
        "subclass of SystemExit",
        "argument that does not pickle",
        "exit code set after",
        "arguments that are not a tuple",
    ],
)
def test_what_passes_on_awkwardly_still_ends_the_exploration_in_the_caller(
    share: int, name: str
) -> None:
    # Built here, not as a parameter: pytest shows its parameters, and one of
    # these has no text.
    raising, kind, arguments = awkward(name)
    caller = os.getpid()
    try:
        explore(
            three_tasks(sequence=only_in(share), raising=raising),
            strategy="dfs",
            bound=1,
            reduction=False,
            jobs=2,
        )
    except BaseException as error:
        raised: BaseException | None = error
    else:
        raised = None
    if os.getpid() != caller:  # a worker that got out into the caller's code
        os._exit(9)
    assert isinstance(raised, kind)
    if share == 1:
        assert type(raised) is kind  # made again, as the built-in kind
    if arguments is not None:
        assert raised.args == arguments
    if isinstance(raised, SystemExit):
        assert raised.code == raising.code  # type: ignore[attr-defined]


@pytest.mark.parametrize("share", [0, 1])
def test_a_failure_in_either_share_is_reported_replayable_and_minimised(share: int) -> None:
    # Bound 1: the last level is the first, each of its schedules one
    # deviation of the default run, the first process's (share 0) and the
    # worker's in turn. The run fails at the final order only one schedule
    # reaches, in the share chosen.
    target = only_in(share)
    failing = three_tasks(sequence=target)
    alone = explore(failing, strategy="dfs", bound=1, raise_on_failure=False, reduction=False)
    assert alone.failure is not None
    with pytest.raises(ExplorationFailedError) as raised:
        explore(failing, strategy="dfs", bound=1, reduction=False, jobs=2)
    failure = raised.value.exploration.failure
    assert failure is not None
    assert str(failure.schedule) == str(alone.failure.schedule)
    assert failure.trace_hash == alone.failure.trace_hash
    assert f'replay="{failure.schedule}"' in str(raised.value)
    with pytest.raises(ExplorationFailedError):
        explore(failing, replay=str(failure.schedule))


def test_the_teller_race_is_found_with_two_jobs() -> None:
    exploration = explore(
        tellers(3),
        strategy="dfs",
        bound=0,
        delays=2,
        budget=1000,
        raise_on_failure=False,
        jobs=2,
    )
    assert exploration.failure is not None
    assert exploration.failure.schedule.holds == 1


def test_a_caller_with_many_descriptors_open_can_share() -> None:
    # The workers' pipes numbered past 1023, where select() refuses them.
    import resource

    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < 1200:
        pytest.skip("needs 1200 descriptors")
    opened = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        shared = explore(three_tasks(), strategy="dfs", bound=1, jobs=2)
    finally:
        for fd in opened:
            os.close(fd)
    assert shared.complete


def test_a_worker_that_runs_differently_is_nondeterminism() -> None:
    parent = os.getpid()

    async def main() -> None:
        async def task() -> None:
            await trio.lowlevel.checkpoint()

        async with trio.open_nursery() as nursery:
            # One more task in a worker: its first batch has more options.
            for _ in range(2 if os.getpid() == parent else 3):
                nursery.start_soon(task)

    with pytest.raises(NondeterminismError, match="choice point"):
        explore(main, strategy="dfs", bound=1, jobs=2)


def test_a_worker_that_dies_without_its_report_is_an_error() -> None:
    parent = os.getpid()

    async def main() -> None:
        async def task() -> None:
            await trio.lowlevel.checkpoint()
            if os.getpid() != parent:
                os._exit(3)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(task)
            nursery.start_soon(task)

    with pytest.raises(WorkerError, match="ended without a report"):
        explore(main, strategy="dfs", bound=1, jobs=2)


def children() -> set[int]:
    """The processes whose parent is this one (Linux's /proc)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == os.getpid():
                found.add(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="blocks SIGINT")
@pytest.mark.usefixtures("default_sigint")
def test_a_ctrl_c_as_a_worker_is_forked_leaves_no_worker_behind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = children()
    fork = os.fork

    def interrupted_fork() -> int:
        pid = fork()
        if pid:
            # As the child is made (to this thread: another may take a signal to the process).
            signal.pthread_kill(threading.get_ident(), signal.SIGINT)
        return pid

    monkeypatch.setattr(os, "fork", interrupted_fork)
    with pytest.raises(KeyboardInterrupt):
        explore(three_tasks(), strategy="dfs", bound=1, jobs=2)
    assert children() == before


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="waits on a pidfd")
def test_what_a_worker_passes_on_is_not_lost_to_a_failure_here() -> None:
    # The worker raises SystemExit in its first run; the first process's
    # first run after the fork waits (bounded) until the worker has ended,
    # its report sent, and fails: with no poll between, the report arrives
    # while this process is failing.
    caller = os.getpid()
    waited: list[bool] = []

    async def main() -> None:
        await trio.lowlevel.checkpoint()
        await trio.lowlevel.checkpoint()
        if os.getpid() != caller:
            raise SystemExit(4)
        workers = children()
        if workers:  # (and in the replays that minimise and confirm the failure)
            if not waited:
                (worker,) = workers
                fd = os.pidfd_open(worker)
                try:
                    ended, _, _ = select.select([fd], [], [], 30)
                finally:
                    os.close(fd)
                waited.append(bool(ended))
            raise AssertionError("the failure here")

    async def program() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(main)
            nursery.start_soon(trio.lowlevel.checkpoint)

    with pytest.raises(SystemExit) as raised:
        explore(program, strategy="dfs", bound=1, reduction=False, jobs=2)
    assert waited == [True]
    assert raised.value.args == (4,)


class Stop(Exception):
    pass


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_an_exploration_that_ends_early_ends_its_workers() -> None:
    before = children()
    seen = []

    def progress(runs: int, so_far: Exploration) -> None:
        seen.append(runs)
        if runs == 3:  # past the fork: bound 1's last level follows the default run
            raise Stop

    with pytest.raises(Stop):
        explore(three_tasks(), strategy="dfs", bound=1, budget=100_000, progress=progress, jobs=2)
    assert seen == [1, 2, 3]
    assert children() == before


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"jobs": 0}, "jobs must be an integer of at least 1"),
        ({"jobs": 65}, "jobs must be at most 64, not 65"),
        ({"jobs": 10**6}, "jobs must be at most 64"),
        ({"jobs": True}, "jobs must be an integer"),
        ({"jobs": 2.0}, "jobs must be an integer"),
        ({"jobs": 2, "strategy": "pct"}, "for strategy 'dfs' without replay, not 'pct'"),
        ({"jobs": 2, "strategy": "dfs", "replay": "1:"}, "not a replay"),
    ],
)
def test_jobs_that_are_not_a_share_of_dfs_are_refused(
    options: dict[str, object], message: str
) -> None:
    ran = []

    async def main() -> None:
        ran.append(1)

    with pytest.raises(ValueError, match=message):
        explore(main, **options)  # type: ignore[arg-type]
    assert not ran


HANGS = """
import os, sys, time
import trio
from actors.testing import explore

parent = os.getpid()


async def main():
    async def task(name):
        for _ in range(2):
            await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as nursery:
        for name in "abc":
            nursery.start_soon(task, name)
    if os.getpid() != parent:
        with open(sys.argv[1], "w") as out:
            out.write(str(os.getpid()))
        time.sleep(600)  # a worker's program that never returns


explore(main, strategy="dfs", bound=1, jobs=2)
"""


def alive(pid: int) -> bool:
    """Whether ``pid`` is a process that has not ended (a zombie has)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="Linux: PR_SET_PDEATHSIG")
def test_a_hung_worker_dies_with_the_process_that_forked_it(tmp_path: Path) -> None:
    import subprocess
    import sys
    import time

    script, written = tmp_path / "hangs.py", tmp_path / "worker"
    script.write_text(HANGS)
    explorer = subprocess.Popen([sys.executable, str(script), str(written)])
    try:
        deadline = time.monotonic() + 120
        while not written.exists() or not written.read_text():
            assert explorer.poll() is None, "the exploration ended"
            assert time.monotonic() < deadline, "no worker wrote its pid"
            time.sleep(0.05)
        worker = int(written.read_text())
        assert alive(worker)
    finally:
        explorer.kill()
        explorer.wait(timeout=60)
    deadline = time.monotonic() + 60
    while alive(worker):
        assert time.monotonic() < deadline, f"worker {worker} outlived its parent"
        time.sleep(0.05)
