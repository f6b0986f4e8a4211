"""``trio-reconcile run --spawn``: the specs against replica processes
started as OS processes (:mod:`replica.driver.run._spawned`), each reported
as a run in this process is; a store that cannot serve the run is exit 2
before any process starts, SIGTERM stops the processes and exits 143, and a
lost process ends the run, named."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from ..lang._escape import print_error
from ..lang._spec import Spec
from ..run._report import report, report_violations
from ..run._runner import DEFAULT_MAX_WAIT, SpecRun, Topology
from ._arguments import PROG
from ._exits import TERMINATED, leaves

if TYPE_CHECKING:
    from replica.procs import TlsFiles


def spawn_command(
    specs: Sequence[Spec],
    topology: Topology,
    seed: int,
    out: TextIO,
    *,
    max_wait: float = DEFAULT_MAX_WAIT,
    persist: str | None = None,
    tls: TlsFiles | None = None,
    peer_timeout: float | None = None,
) -> int:
    """``run --spawn``: each spec against replica processes started as OS
    processes, the shards stored as ``persist`` says (see
    :func:`replica.driver.run._spawned.spec_catalogs`); reported as
    :func:`._run.run_command` reports. A store that cannot serve the run is
    exit 2, before any process starts."""
    from replica.procs import ClusterError, HandlerFailedError, ItemTooLargeError
    from replica.storage.persist import PersistError

    from ..run._spawned import TerminatedError, run_spawned, spec_catalogs

    failed = False

    def done(spec: Spec, run: SpecRun) -> None:
        nonlocal failed
        failed |= report(spec, run.outcomes, topology, out)
        failed |= report_violations(spec, run, out)
        out.flush()

    broken: list[BaseException] = []
    terminated = False
    with contextlib.ExitStack() as stack:
        try:
            catalogs = stack.enter_context(spec_catalogs(persist, len(specs)))
        except (ValueError, PersistError) as refused:
            print_error(f"{PROG}: error: argument --persist: {refused}")
            return 2
        try:
            run_spawned(
                specs,
                topology,
                seed,
                done,
                max_wait=max_wait,
                catalogs=catalogs,
                tls=tls,
                peer_timeout=peer_timeout,
            )
        except* TerminatedError:
            terminated = True
        except* (ClusterError, ItemTooLargeError, HandlerFailedError) as group:
            broken.extend(leaves(group))
    if terminated:
        print_error(f"{PROG}: terminated")
        return TERMINATED
    for error in broken:
        print_error(f"{PROG}: error: {error}")
    return 1 if failed or broken else 0
