"""A job pipeline: a supervised worker pool, retries with backoff, poison
jobs set aside, and a graceful drain.

    .venv/bin/python examples/job_pipeline.py

A dispatcher takes jobs and hands each attempt to a pool of workers (the
least loaded one). A worker that fails on a job is restarted by the pool; the
dispatcher learns of the failure from the ask and retries the job later,
with exponential backoff, using its timers. A job that fails every attempt
is *poison*: after the last attempt it is set aside (a dead letter) instead
of retried forever. Once told to drain, the dispatcher takes no new job,
finishes the ones it has, and reports. Everything runs on Trio's mock clock
(``actors.run``): the backoff's seconds cost no real time, and the run is the
same every time.
"""

from __future__ import annotations

import sys

import attrs
import trio

import actors
from actors import Inbox, Pool, Reply

ATTEMPTS = 4
FIRST_BACKOFF = 0.5
TIMEOUT = 10.0


@attrs.frozen
class Job:
    id: int
    # How many attempts fail before one succeeds (more than ATTEMPTS: poison).
    failures: int
    seconds: float = 1.0


@attrs.frozen
class Work:
    job: Job
    attempt: int
    reply: Reply[str]


async def worker(inbox: Inbox[Work]) -> None:
    """Does a job (taking its time); an attempt the job says fails raises,
    and the pool restarts this worker."""
    async for envelope in inbox:
        work = envelope.message
        await trio.sleep(work.job.seconds)
        if work.attempt <= work.job.failures:
            raise RuntimeError(f"job {work.job.id} failed on attempt {work.attempt}")
        work.reply.send(f"job {work.job.id} done")


@attrs.frozen
class Submit:
    job: Job


@attrs.frozen
class Retry:
    job: Job
    attempt: int


@attrs.frozen
class Finished:
    job: Job
    attempt: int
    outcome: str | None  # None: the attempt failed


@attrs.frozen
class Drain:
    reply: Reply[list[str]]


Dispatch = Submit | Retry | Finished | Drain


async def dispatcher(inbox: Inbox[Dispatch], pool: Pool[Work], log: list[str]) -> None:
    pending: set[int] = set()
    dead: list[str] = []
    draining: Reply[list[str]] | None = None

    async with trio.open_nursery() as attempts:

        def start(job: Job, attempt: int) -> None:
            # Each attempt waits for its worker beside the dispatcher, which
            # goes on taking messages; the result comes back as a message.
            attempts.start_soon(run_attempt, job, attempt)

        async def run_attempt(job: Job, attempt: int) -> None:
            try:
                outcome: str | None = await pool.ask(Work, job, attempt, timeout=TIMEOUT)
            except (actors.ActorFailedError, actors.AskTimeoutError):
                outcome = None
            await inbox.ref.tell(Finished(job, attempt, outcome))

        def note(text: str) -> None:
            log.append(f"t={trio.current_time():5.2f}  {text}")

        async for envelope in inbox:
            match envelope.message:
                case Submit(job) if draining is None:
                    pending.add(job.id)
                    start(job, 1)
                case Submit(job):
                    note(f"job {job.id} refused: draining")
                case Retry(job, attempt):
                    start(job, attempt)
                case Finished(job, attempt, outcome) if outcome is not None:
                    note(f"{outcome} (attempt {attempt})")
                    pending.discard(job.id)
                case Finished(job, attempt, None) if attempt < ATTEMPTS:
                    backoff = FIRST_BACKOFF * 2 ** (attempt - 1)
                    note(f"job {job.id} attempt {attempt} failed: retry in {backoff:g}s")
                    inbox.timers.send_after(backoff, Retry(job, attempt + 1))
                case Finished(job, attempt, None):
                    note(f"job {job.id} is poison: set aside after {attempt} attempts")
                    dead.append(f"job {job.id}")
                    pending.discard(job.id)
                case Drain(reply):
                    note(f"drain: {len(pending)} jobs still running, taking no more")
                    draining = reply
            if draining is not None and not pending:
                draining.send(dead)
                inbox.close()


async def main() -> list[str]:
    log: list[str] = []
    async with actors.open_system() as system:
        pool = await system.pool(
            worker,
            size=3,
            routing=actors.Routing.LEAST_LOADED,
            name="workers",
            strategy=actors.OneForOne(intensity=10, period=60),
        )
        jobs = [Job(1, 0), Job(2, 2), Job(3, 0, 2.0), Job(4, 99), Job(5, 1), Job(6, 0)]
        ref = await system.spawn(dispatcher, pool, log, name="dispatcher")
        for job in jobs:
            await ref.tell(Submit(job))
        await trio.sleep(3)
        dead: list[list[str]] = []
        async with trio.open_nursery() as nursery:

            async def drain() -> None:
                dead.append(await ref.ask(Drain))

            nursery.start_soon(drain)
            await trio.sleep(0.1)
            await ref.tell(Submit(Job(7, 0)))  # while draining: refused
        log.append(f"t={trio.current_time():5.2f}  drained; dead letters: {', '.join(dead[0])}")
        try:
            await ref.tell(Submit(Job(8, 0)))
        except actors.ActorStoppedError as error:
            log.append(f"t={trio.current_time():5.2f}  job 8 not accepted: {error}")
        await pool.stop()
    return log


if __name__ == "__main__":
    print("\n".join(actors.run(main, seed=1)))
    sys.exit(0)
