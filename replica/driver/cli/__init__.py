"""The ``trio-reconcile`` command line: the dispatch (``_main``), the argument
parser and its shared options (``_arguments``), a module per command
(``_run``, with ``run --spawn`` in ``_spawn``; ``_workflow``, ``_simulate``,
``_demo``, ``_explore``, ``_serve``), and how the command ends (``_exits``)."""

from ._main import main as main
