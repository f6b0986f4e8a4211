"""What a run of a spec prints: its mismatches and its verdict; and the spec
text ``--rewrite`` writes. The spec's name and a mismatch's directive line
are :func:`escaped`; its expected block is printed as the spec wrote it and
its actual block as the stanza printed it (rows rendered by
:func:`~replica.driver.lang._data.render_rows`: datums joined by single
spaces, the lines sorted as text)."""

from __future__ import annotations

import sys
from typing import TextIO

from ..lang._escape import escaped
from ..lang._spec import Spec
from ._runner import Outcome, SpecRun, Topology


def report(spec: Spec, outcomes: list[Outcome], topology: Topology, out: TextIO) -> bool:
    """Print mismatches (and a summary line); return whether any stanza differed."""
    mismatches = [outcome for outcome in outcomes if not outcome.matched]
    name = escaped(spec.path)
    for outcome in mismatches:
        stanza = outcome.stanza
        print(f"{name}:{stanza.line}: {escaped(spec.lines[stanza.line - 1])}", file=out)
        print("  expected:", file=out)
        for line in stanza.expected or ("(nothing)",):
            print(f"    {line}", file=out)
        print("  actual:", file=out)
        for line in outcome.actual or ("(nothing)",):
            print(f"    {line}", file=out)
    stopped = len(outcomes) < len(spec.stanzas)
    verdict = "FAIL" if mismatches or stopped else "ok"
    detail = f"{len(mismatches)} of {len(outcomes)} stanzas differ" if mismatches else ""
    if stopped:
        # The replica aborted: the stanzas after it never ran.
        ran = f"stopped after {len(outcomes)} of {len(spec.stanzas)} stanzas"
        detail = f"{detail}, {ran}" if detail else ran
    print(f"{verdict} {name}: {detail or f'{len(outcomes)} stanzas'} ({topology})", file=out)
    return bool(mismatches) or stopped


def report_violations(spec: Spec, run: SpecRun, out: TextIO) -> bool:
    """Print the invariants ``run`` broke; return whether it broke any. What
    the driver sent as the script said but a controller must not send (a
    one-shot read of the wrong shape, a command for an unknown id) is a
    warning on stderr: loud, and the run's verdict stays the script's."""
    name = escaped(spec.path)
    for violation in run.violations:
        print(f"{name}: invariant broken: {violation}", file=out)
    for misfit in run.misfits:
        print(f"{name}: warning: {escaped(misfit)}", file=sys.stderr)
    for refusal in run.unknown_ids():
        print(f"{name}: warning: a command for an unknown id: {escaped(refusal)}", file=sys.stderr)
    return bool(run.violations)


def rewritten(spec: Spec, outcomes: list[Outcome]) -> str:
    """The spec's text with every expected block replaced by what ran."""
    lines = list(spec.lines)
    for outcome in reversed(outcomes):
        stanza = outcome.stanza
        lines[stanza.divider_line : stanza.end_line - 1] = list(outcome.actual)
    return spec.join(lines)
