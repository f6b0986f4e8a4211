import pytest
import trio

from .conftest import VIRTUAL_DEADLINE


async def test_every_async_test_runs_on_the_autojump_clock() -> None:
    assert isinstance(trio.lowlevel.current_clock(), trio.testing.MockClock)
    before = trio.current_time()
    await trio.sleep(3600)
    assert trio.current_time() - before == 3600


def test_a_deadlocked_test_fails_fast_at_the_virtual_deadline() -> None:
    from .conftest import run_on_autojump_clock

    async def deadlocked() -> None:
        await trio.Event().wait()

    with pytest.raises(trio.TooSlowError):
        run_on_autojump_clock(deadlocked)
    assert VIRTUAL_DEADLINE == 86400.0
