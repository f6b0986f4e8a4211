"""A structured-concurrency actor framework on Trio.

Actors are tasks in nurseries; their mailboxes are bounded Trio memory
channels; references are typed by the messages they accept. See the README
for a tour.
"""

import logging as _logging

from ._core._cell import DEFAULT_CAPACITY as DEFAULT_CAPACITY
from ._core._cell import RECEIVE_BATCH as RECEIVE_BATCH
from ._core._cell import ActorState as ActorState
from ._core._cell import ActorStatistics as ActorStatistics
from ._core._envelope import Address as Address
from ._core._envelope import Envelope as Envelope
from ._core._errors import ActorError as ActorError
from ._core._errors import ActorFailedError as ActorFailedError
from ._core._errors import ActorNameError as ActorNameError
from ._core._errors import ActorStoppedError as ActorStoppedError
from ._core._errors import AlreadyRepliedError as AlreadyRepliedError
from ._core._errors import AskTimeoutError as AskTimeoutError
from ._core._errors import DeadlockError as DeadlockError
from ._core._errors import MockClockWarning as MockClockWarning
from ._core._errors import RestartIntensityError as RestartIntensityError
from ._core._errors import TimeLimitError as TimeLimitError
from ._core._inbox import Inbox as Inbox
from ._core._mailbox import ActorRef as ActorRef
from ._core._monitors import Down as Down
from ._core._monitors import ExitReason as ExitReason
from ._core._monitors import Failed as Failed
from ._core._monitors import Killed as Killed
from ._core._monitors import Monitor as Monitor
from ._core._monitors import NodeDown as NodeDown
from ._core._monitors import Normal as Normal
from ._core._monitors import Stopped as Stopped
from ._core._reply import Reply as Reply
from ._core._timers import Timers as Timers
from ._core._trace import EventKind as EventKind
from ._core._trace import Trace as Trace
from ._core._trace import TraceEvent as TraceEvent
from ._core._trace import Tracer as Tracer
from ._determinism import RealClock as RealClock
from ._determinism import current_seed as current_seed
from ._determinism import run as run
from ._pool import Pool as Pool
from ._pool import PoolStatistics as PoolStatistics
from ._pool import Routing as Routing
from ._registry import Listing as Listing
from ._registry import ServiceKey as ServiceKey
from ._restarts import Backoff as Backoff
from ._restarts import Escalate as Escalate
from ._restarts import OneForAll as OneForAll
from ._restarts import OneForOne as OneForOne
from ._restarts import Restart as Restart
from ._restarts import RestartBudget as RestartBudget
from ._restarts import RestForOne as RestForOne
from ._restarts import Strategy as Strategy
from ._sequencer import Sequencer as Sequencer
from ._sequencer import SequencerStatistics as SequencerStatistics
from ._supervision import Supervisor as Supervisor
from ._system import ActorSystem as ActorSystem
from ._system import open_system as open_system

__version__ = "0.1.0"


def _report_public_names_as_ours() -> None:
    """Make each public class and function say it is ``actors.X``, where users
    find it, not in the private module that defines it (as trio does): in
    reprs, errors, docs and pickles."""
    for value in list(globals().values()):
        if (isinstance(value, type) or callable(value)) and getattr(
            value, "__module__", ""
        ).startswith("actors._"):
            value.__module__ = "actors"


_report_public_names_as_ours()

# A library logs; the application decides where logs go (nowhere by default).
_logging.getLogger("actors").addHandler(_logging.NullHandler())
