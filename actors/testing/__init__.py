"""Testing tools for actor programs (and any Trio program): schedule
exploration. Import it explicitly (``from actors.testing import explore``);
``import actors`` does not load it.

.. not run: a fragment: main is the program under test

::

    def test_no_lost_update() -> None:
        explore(main, strategy="pct", budget=2000)

fails with the minimised failing schedule and the line that replays it,
``explore(main, replay="1:12=1")``. See ``docs/actors.md``, "Exploring
schedules".
"""

from .._declare import Table as Table
from .._declare import belong as belong
from .._declare import share as share
from .._declare import touch as touch
from ._explore import explore as explore
from ._explore import failure_report as failure_report
from ._schedule import STRATEGIES as STRATEGIES
from ._schedule import Exploration as Exploration
from ._schedule import ExplorationError as ExplorationError
from ._schedule import ExplorationFailedError as ExplorationFailedError
from ._schedule import Failure as Failure
from ._schedule import NondeterminismError as NondeterminismError
from ._schedule import Schedule as Schedule
from ._schedule import ScheduleError as ScheduleError
from ._schedule import StepLimitError as StepLimitError
from ._schedule import StrategyName as StrategyName
from ._split import WorkerError as WorkerError

for _value in (
    Exploration,
    ExplorationError,
    ExplorationFailedError,
    Failure,
    NondeterminismError,
    Schedule,
    ScheduleError,
    StepLimitError,
    WorkerError,
):
    _value.__module__ = "actors.testing"
del _value
explore.__module__ = "actors.testing"
belong.__module__ = "actors.testing"
share.__module__ = "actors.testing"
Table.__module__ = "actors.testing"
touch.__module__ = "actors.testing"
failure_report.__module__ = "actors.testing"
