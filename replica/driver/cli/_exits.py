"""How the command ends besides 0 (it succeeded), 1 (a stanza or a check
failed) and 2 (bad input, bad arguments, an output it cannot write): the
statuses of an interrupted or terminated run, and the failures an exception
group holds, each said in a line of its own."""

from __future__ import annotations

INTERRUPTED = 130
TERMINATED = 143
"""``run --spawn`` stopped by SIGTERM (its replica processes stopped first)."""


def leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    """The exceptions ``group`` holds, those of its nested groups in their
    place, in order."""
    found: list[BaseException] = []
    for error in group.exceptions:
        found += leaves(error) if isinstance(error, BaseExceptionGroup) else [error]
    return found
