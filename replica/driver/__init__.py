"""The ``trio-reconcile`` command: spec files in the real test driver's
language run against the replica (README.md, The ``trio-reconcile`` command).

Its layers, each importing only those before it: ``lang`` (the language, read
before anything runs), ``oracle`` (the reference model that judges the
replica, and random programs), ``pictures`` (a run's trace drawn), ``run``
(specs run against the replica, in this process or on OS processes) and
``cli`` (the command line). The spec files shipped with it are in ``specs/``.
"""

from .cli import main as main
