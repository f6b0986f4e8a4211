"""The reconcile barrier between a replica's two runtimes (docs/protocol.md).

A worker of each runtime reconciles a reconnecting controller on its own. Its
drop phase waits on no other worker. Before its create phase, it arrives at
the barrier it shares with the worker of the same local ordinal, in the same
process, on the other runtime, with the connection's position, and waits
until the other side has arrived at that position *or a later one*. Solo
replicas have no barrier.

Why a later arrival counts. The barrier keeps only each side's latest
arrival, so a waiter can only ever compare against that:

1. The other side may overwrite its arrival before the waiter rechecks. If it
   arrived at this connection and then, reconnecting again, at the next one,
   the waiter sees only the later position; requiring an exact match would
   make it wait forever for an arrival that is gone.
2. The other side may never reconcile this connection at all. Once a response
   send to a connection fails, a runtime's channel adapter leaves it and drops
   the commands still queued for it, so that runtime can skip a connection the
   other one finished, and arrive next at a later one.

A later arrival is enough because both runtimes drop before they create: the
other side arriving anywhere at or after this connection means it has run the
drops of a connection at least as new, so the incarnations this side is about
to bind are no longer the ones the other side is about to drop.

Reason 2 has a consequence the barrier alone does not cover: the runtimes
may have applied different commands of the lost connection, and so reconcile
the next one from different states. The replica's reconciliation aligns their
incarnations past the barrier (the argument is in ``replica.compute._state``).

A waiter parks on an event of its side's generation, which the other side's
arrival sets; woken, it rechecks the other side's latest arrival (never
polls). If the barrier actor ends, every waiter gets
:class:`BarrierBrokenError` instead of hanging.
"""

import logging as _logging

from ._barrier import Inspect as Inspect
from ._barrier import ReconcileBarrier as ReconcileBarrier
from ._state import ArrivalRegressionError as ArrivalRegressionError
from ._state import BarrierBrokenError as BarrierBrokenError
from ._state import BarrierError as BarrierError
from ._state import BarrierState as BarrierState
from ._state import BarrierStatistics as BarrierStatistics
from ._state import Side as Side

_logging.getLogger("barrier").addHandler(_logging.NullHandler())
