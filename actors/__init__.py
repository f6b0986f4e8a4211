"""A structured-concurrency actor framework on Trio.

Actors are tasks in nurseries; their mailboxes are bounded Trio memory
channels; references are typed by the messages they accept. See the README
for a tour.
"""

import logging as _logging

from ._cell import DEFAULT_CAPACITY as DEFAULT_CAPACITY
from ._cell import RECEIVE_BATCH as RECEIVE_BATCH
from ._cell import ActorState as ActorState
from ._cell import ActorStatistics as ActorStatistics
from ._determinism import RealClock as RealClock
from ._determinism import current_seed as current_seed
from ._determinism import run as run
from ._envelope import Address as Address
from ._envelope import Envelope as Envelope
from ._errors import ActorError as ActorError
from ._errors import ActorFailedError as ActorFailedError
from ._errors import ActorNameError as ActorNameError
from ._errors import ActorStoppedError as ActorStoppedError
from ._errors import AlreadyRepliedError as AlreadyRepliedError
from ._errors import AskTimeoutError as AskTimeoutError
from ._errors import DeadlockError as DeadlockError
from ._errors import RestartIntensityError as RestartIntensityError
from ._inbox import Inbox as Inbox
from ._mailbox import ActorRef as ActorRef
from ._monitors import Down as Down
from ._monitors import ExitReason as ExitReason
from ._monitors import Failed as Failed
from ._monitors import Killed as Killed
from ._monitors import Monitor as Monitor
from ._monitors import NodeDown as NodeDown
from ._monitors import Normal as Normal
from ._monitors import Stopped as Stopped
from ._pool import Pool as Pool
from ._pool import PoolStatistics as PoolStatistics
from ._pool import Routing as Routing
from ._registry import Listing as Listing
from ._registry import ServiceKey as ServiceKey
from ._reply import Reply as Reply
from ._sequencer import Sequencer as Sequencer
from ._sequencer import SequencerStatistics as SequencerStatistics
from ._strategy import Backoff as Backoff
from ._strategy import Escalate as Escalate
from ._strategy import OneForAll as OneForAll
from ._strategy import OneForOne as OneForOne
from ._strategy import Restart as Restart
from ._strategy import RestartBudget as RestartBudget
from ._strategy import RestForOne as RestForOne
from ._strategy import Strategy as Strategy
from ._supervision import Supervisor as Supervisor
from ._system import ActorSystem as ActorSystem
from ._system import open_system as open_system
from ._timers import Timers as Timers
from ._trace import EventKind as EventKind
from ._trace import Trace as Trace
from ._trace import TraceEvent as TraceEvent
from ._trace import Tracer as Tracer

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
