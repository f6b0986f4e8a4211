"""Physical compaction of an arrangement: ``since`` is the meet of its holds,
never goes back, never rewinds to a hold registered below it; updates before
it are advanced and consolidated in slices of bounded work; importers (by
cursor) and reads in progress see exactly what they would have without it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from replica.engine._arrangement import MIN_COMPACTION, Arrangement
from replica.model._rows import Row, Update, accumulate


def churn(arrangement: Arrangement, keys: int, times: int, per_time: int) -> list[Update]:
    """Each time, ``per_time`` keys change value (a retraction and an
    insertion); the controller's hold follows the upper. Returns everything."""
    history: list[Update] = []
    value = dict.fromkeys(range(keys), 0)
    initial = [((key, 0), 0, 1) for key in range(keys)]
    arrangement.update(initial, 1)
    history += initial
    hold = arrangement.hold(0)
    for time in range(1, times):
        batch: list[Update] = []
        for step in range(per_time):
            key = (time * per_time + step) % keys
            batch.append(((key, value[key]), time, -1))
            value[key] += 1
            batch.append(((key, value[key]), time, 1))
        arrangement.update(batch, time + 1)
        history += batch
        hold.downgrade(time)
        while arrangement.maintain():
            pass
    return history


def collection(updates: Sequence[Update], ts: int) -> Counter[Row]:
    return +accumulate(updates, ts)


def test_under_churn_an_arrangement_keeps_its_contents_not_its_history() -> None:
    arrangement = Arrangement((0,))
    history = churn(arrangement, keys=200, times=300, per_time=20)
    distinct = len(collection(history, 10**9))
    assert len(history) == 200 + 299 * 40
    assert len(arrangement.log) <= 2 * distinct
    assert arrangement.since == 299
    # Reads at since and after answer as the whole history does.
    assert collection(arrangement.log, 299) == collection(history, 299)
    assert collection(arrangement.log, 10**9) == collection(history, 10**9)
    # And by key.
    scan = arrangement.scan(299, ((7,),))
    scan.run()
    assert sorted(scan.rows()) == sorted(
        row for row, count in collection(history, 299).items() for _ in range(count) if row[0] == 7
    )


def test_since_is_the_meet_of_the_holds_and_never_goes_back() -> None:
    arrangement = Arrangement((0,), since=0)
    controller = arrangement.hold(0)
    reader = arrangement.hold(0)
    controller.downgrade(5)
    assert arrangement.since == 0
    reader.downgrade(3)
    assert arrangement.since == 3
    # A hold registered below since does not rewind it.
    late = arrangement.hold(1)
    assert arrangement.since == 3
    assert arrangement.allowed() == 1
    reader.release()
    late.release()
    assert arrangement.since == 5
    controller.downgrade(4)  # never back
    assert controller.time == 5
    controller.release()
    assert arrangement.allowed() is None
    assert arrangement.since == 5


def test_compaction_is_done_in_slices_of_bounded_work() -> None:
    arrangement = Arrangement((0,))
    updates: list[Update] = [((key % 10, key), key, 1) for key in range(1000)]
    arrangement.update(updates, 1000)
    hold = arrangement.hold(0)
    hold.downgrade(1000)
    slices = 0
    while arrangement.maintain(work=100):
        slices += 1
    # 1000 updates looked at 100 a step, then 1000 consolidated indexed the same.
    assert slices >= 19
    assert collection(arrangement.log, 1000) == collection(updates, 1000)
    assert len(arrangement.log) == 1000  # every row distinct: nothing to consolidate


def test_an_importer_reads_across_compactions_what_it_would_have_read() -> None:
    arrangement = Arrangement((0,))
    cursor = arrangement.cursor()
    hold = arrangement.hold(0)
    read: list[Update] = []
    history: list[Update] = []
    for time in range(200):
        batch = [((time % 3,), time, 1), ((time % 3,), time, -1), ((time % 5,), time, 1)]
        arrangement.update(batch, time + 1)
        history += batch
        if time % 7 == 0:
            read += arrangement.log[cursor.position :]
            cursor.position = len(arrangement.log)
        hold.downgrade(time)
        arrangement.maintain()
    read += cursor.take(arrangement.log)
    assert collection(read, 10**9) == collection(history, 10**9)
    # The importer's cursor let the compaction rewrite what it had read only.
    assert arrangement.since == 199


def test_a_read_in_progress_keeps_the_lists_it_began_on() -> None:
    arrangement = Arrangement((0,))
    updates: list[Update] = [((key % 4, key % 3), key, 1) for key in range(MIN_COMPACTION * 4)]
    arrangement.update(updates, len(updates))
    scan = arrangement.scan(len(updates) - 1, None)
    scan.run(work=5)
    hold = arrangement.hold(0)
    hold.downgrade(len(updates))
    while arrangement.maintain():
        pass
    assert len(arrangement.log) < len(updates)
    scan.run()
    assert Counter(scan.rows()) == collection(updates, len(updates) - 1)


def test_readers_that_come_during_a_compaction_do_not_starve_it() -> None:
    """A reader opened every few slices (one-shot reads, one after another)
    reads exactly the history, and the compaction still finishes."""
    arrangement = Arrangement((0,))
    updates: list[Update] = [((key % 7,), key, 1 if key % 2 else -1) for key in range(20_000)]
    arrangement.update(updates, 20_000)
    hold = arrangement.hold(0)
    hold.downgrade(20_000)
    steps = 0
    while arrangement.maintain(work=1000):
        steps += 1
        if steps % 3 == 0:
            cursor = arrangement.cursor()
            assert collection(cursor.take(arrangement.log), 20_000) == collection(updates, 20_000)
            arrangement.close_cursor(cursor)
        assert steps < 1000, "the compaction never finishes"
    assert len(arrangement.log) < 10


def test_a_reader_mid_prefix_keeps_the_rest_of_the_prefix_as_it_was() -> None:
    arrangement = Arrangement((0,))
    updates: list[Update] = [((key % 4,), key, 1) for key in range(MIN_COMPACTION * 4)]
    arrangement.update(updates, len(updates))
    hold = arrangement.hold(0)
    hold.downgrade(len(updates))
    assert arrangement.maintain(work=10)
    cursor = arrangement.cursor()
    # It reads part of the old prefix during the compaction...
    read = arrangement.log[:50]
    cursor.position = 50
    arrangement.update([((9,), len(updates), 1)], len(updates) + 1)
    while arrangement.maintain():
        pass
    # ...and the rest of it, then what came, after.
    assert len(cursor.backlog) == len(updates) - 50
    read += cursor.take(arrangement.log)
    assert collection(read, 10**9) == collection([*updates, ((9,), len(updates), 1)], 10**9)


def test_a_quiet_arrangement_compacts_when_its_owner_is_idle() -> None:
    arrangement = Arrangement((0,))
    updates: list[Update] = [((key % 5,), key, 1) for key in range(1000)]
    arrangement.update(updates, 1000)
    hold = arrangement.hold(0)
    while arrangement.maintain():
        pass  # compacted at since 0: nothing consolidates
    assert len(arrangement.log) == 1000
    hold.downgrade(1000)
    # Below the threshold for new updates: only an idle compaction shrinks it.
    assert not arrangement.maintain()
    assert arrangement.compact_when_idle()
    while arrangement.maintain():
        pass
    assert len(arrangement.log) == 5
    assert arrangement.settled
    assert not arrangement.compact_when_idle()


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 5),  # row
            st.integers(0, 3),  # diff - 1 - (retract if odd)
            st.integers(0, 3),  # how far the hold moves
            st.booleans(),  # the importer reads now
            st.integers(1, 50),  # work
        ),
        max_size=120,
    )
)
def test_reads_at_or_after_since_match_the_uncompacted_history(
    steps: list[tuple[int, int, int, bool, int]],
) -> None:
    arrangement = Arrangement((0,))
    cursor = arrangement.cursor()
    controller = arrangement.hold(0)
    history: list[Update] = []
    read: list[Update] = []
    for now, (row, diff, move, reads, work) in enumerate(steps):
        update = ((row,), now, 1 if diff % 2 == 0 else -1)
        time = now + 1
        arrangement.update([update] * (diff + 1), time)
        history += [update] * (diff + 1)
        controller.downgrade(min(time, controller.time + move))
        if reads:
            read += cursor.take(arrangement.log)
        arrangement.maintain(work)
        if not reads and work % 3 == 0:
            arrangement.compact_when_idle()
        since = arrangement.since
        assert since == controller.time
        for ts in (since, since + 1, time):
            assert collection(arrangement.log, ts) == collection(history, ts)
    read += cursor.take(arrangement.log)
    assert collection(read, 10**9) == collection(history, 10**9)
