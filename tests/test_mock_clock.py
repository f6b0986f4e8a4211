import trio


async def test_every_async_test_runs_on_the_autojump_clock() -> None:
    assert isinstance(trio.lowlevel.current_clock(), trio.testing.MockClock)
    before = trio.current_time()
    await trio.sleep(3600)
    assert trio.current_time() - before == 3600
