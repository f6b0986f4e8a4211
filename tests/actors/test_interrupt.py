"""actors.run(restrict_keyboard_interrupt_to_checkpoints=True): a Ctrl-C is
raised in the main task at a checkpoint, never in the code running when it
came (where, inside trio's start of a task, it would break trio's task sets)."""

from __future__ import annotations

import signal

import pytest
import trio

import actors

pytestmark = pytest.mark.usefixtures("default_sigint")


def _interrupted_in_a_child(restrict: bool) -> list[str]:
    seen: list[str] = []

    async def child() -> None:
        try:
            signal.raise_signal(signal.SIGINT)
            seen.append("past the signal")
            await trio.sleep(1)
            seen.append("slept")  # never: the main task is interrupted
        except BaseException as error:
            seen.append(f"child: {type(error).__name__}")
            raise

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(child)

    # Out of the nursery in its group: the interrupt, and nothing else.
    with pytest.raises(BaseExceptionGroup) as caught:
        actors.run(main, restrict_keyboard_interrupt_to_checkpoints=restrict)
    assert caught.value.split(KeyboardInterrupt)[1] is None
    return seen


def test_restricted_the_interrupt_waits_for_the_main_tasks_checkpoint() -> None:
    # The child runs on past the signal; the main task, parked in its
    # nursery, takes the interrupt, and the child is cancelled.
    assert _interrupted_in_a_child(restrict=True) == [
        "past the signal",
        "child: Cancelled",
    ]


def test_by_default_the_interrupt_lands_where_the_code_runs() -> None:
    # The same program, unrestricted: the child itself is interrupted.
    assert _interrupted_in_a_child(restrict=False) == [
        "child: KeyboardInterrupt",
    ]
