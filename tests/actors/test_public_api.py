from __future__ import annotations

import inspect
import pickle
import subprocess
import sys

import pytest

import actors
import barrier
import sharing

PUBLIC = {
    "ActorError",
    "ActorFailedError",
    "ActorNameError",
    "ActorRef",
    "ActorState",
    "ActorStatistics",
    "ActorStoppedError",
    "ActorSystem",
    "Address",
    "AlreadyRepliedError",
    "AskTimeoutError",
    "Backoff",
    "DEFAULT_CAPACITY",
    "DeadlockError",
    "Down",
    "Envelope",
    "Escalate",
    "EventKind",
    "ExitReason",
    "Failed",
    "Inbox",
    "Killed",
    "Listing",
    "MockClockWarning",
    "Monitor",
    "NodeDown",
    "Normal",
    "OneForAll",
    "OneForOne",
    "Pool",
    "PoolStatistics",
    "RECEIVE_BATCH",
    "RealClock",
    "Reply",
    "RestForOne",
    "Restart",
    "RestartBudget",
    "RestartIntensityError",
    "Routing",
    "Sequencer",
    "SequencerStatistics",
    "ServiceKey",
    "Stopped",
    "Strategy",
    "Supervisor",
    "TimeLimitError",
    "Timers",
    "Trace",
    "TraceEvent",
    "Tracer",
    "current_seed",
    "open_system",
    "run",
}


def test_the_testing_module_names_are_pinned_and_report_it_as_their_module() -> None:
    import actors.testing

    names = {name for name in vars(actors.testing) if not name.startswith("_")}
    assert names == {
        "STRATEGIES",
        "Exploration",
        "ExplorationError",
        "ExplorationFailedError",
        "Failure",
        "NondeterminismError",
        "Schedule",
        "ScheduleError",
        "StepLimitError",
        "StrategyName",
        "WorkerError",
        "explore",
        "failure_report",
        "belong",
        "share",
        "Table",
        "touch",
    }
    for name in names - {"STRATEGIES", "StrategyName"}:
        assert getattr(actors.testing, name).__module__ == "actors.testing", name


def test_the_public_names_are_pinned() -> None:
    names = {name for name in vars(actors) if not name.startswith("_")}
    names -= {"testing", "net", "mypy"}  # the submodules, once imported
    assert names == PUBLIC
    assert {name for name in vars(barrier) if not name.startswith("_")} == {
        "ArrivalRegressionError",
        "BarrierBrokenError",
        "BarrierError",
        "BarrierState",
        "BarrierStatistics",
        "Inspect",
        "ReconcileBarrier",
        "Side",
    }
    assert {name for name in vars(sharing) if not name.startswith("_")} == {
        "Incarnation",
        "Peer",
        "PeerHold",
        "Pin",
        "Publisher",
        "Registry",
        "RegistryStatistics",
        "SharingError",
        "SlotTakenError",
    }


def test_public_classes_and_functions_report_the_package_as_their_module() -> None:
    reported = {
        name: value.__module__
        for name in PUBLIC
        if isinstance(value := getattr(actors, name), type) or inspect.isfunction(value)
    }
    assert len(reported) == len(PUBLIC) - 4  # two ints, ExitReason and Strategy (unions)
    assert set(reported.values()) == {"actors"}
    assert repr(actors.Restart.PERMANENT) == "<Restart.PERMANENT: 'permanent'>"
    assert str(actors.Inbox).startswith("<class 'actors.Inbox'")


def test_framework_messages_pickle_by_their_public_names() -> None:
    down = actors.Down(
        actors.Address("a", 1),
        actors.Normal(),
        actors.Monitor(actors.Address("w", 0), actors.Address("a", 1), 0),
    )
    envelope = actors.Envelope("message", 3, actors.Address("a", 1))
    assert pickle.loads(pickle.dumps(envelope)) == envelope
    assert b"actors._" not in pickle.dumps(down)
    assert pickle.loads(pickle.dumps(down)).address == down.address


@pytest.mark.parametrize(
    "cls",
    [
        actors.ActorRef,
        actors.ActorSystem,
        actors.Inbox,
        actors.Pool,
        actors.Reply,
        actors.Sequencer,
        actors.Supervisor,
        actors.Timers,
    ],
)
def test_classes_only_the_framework_builds_refuse_construction(cls: type) -> None:
    with pytest.raises(TypeError, match=rf"^actors\.{cls.__name__} has no public constructor$"):
        cls()


def test_every_error_derives_from_the_package_base() -> None:
    errors = [value for name, value in vars(actors).items() if name.endswith("Error")]
    assert len(errors) == 9
    assert all(issubclass(error, actors.ActorError) for error in errors)
    warnings = [value for name, value in vars(actors).items() if name.endswith("Warning")]
    assert warnings == [actors.MockClockWarning]
    assert issubclass(actors.MockClockWarning, RuntimeWarning)


def test_importing_actors_loads_neither_pytest_nor_trio_testing() -> None:
    code = (
        "import sys, actors; "
        "print(sorted(m for m in sys.modules "
        "if m.split('.')[0] in ('pytest', '_pytest') or m.startswith('trio.testing')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"
