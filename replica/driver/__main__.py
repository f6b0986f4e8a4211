"""``python -m replica.driver``: the ``trio-reconcile`` command (how ``run
--spawn`` starts its ``serve`` processes with the same Python)."""

import sys

from _trio_reconcile_cli import main

sys.exit(main())
