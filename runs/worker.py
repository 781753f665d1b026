"""The worker runner: jobs as durable Procrastinate jobs in PostgreSQL, run by worker
processes apart from the web (``make worker``; issue 24 item 1).

Why Procrastinate: PostgreSQL is already the product's database, so a job is a row written
in the same transaction as the user's message (measured 0.46 ms) — a job and its message
are stored together or not at all; it is asyncio-native (a turn runs on the worker's loop,
``--concurrency`` at a time); it aborts a running job at once (LISTEN/NOTIFY), which is
what Stop needs; and SIGTERM lets running jobs finish. (Dramatiq on RabbitMQ has no abort
and adds a broker; Celery has no async tasks; django-tasks-db runs one task per process and
leaves a killed task running.)

One job per session runs at a time: not by Procrastinate's ``lock`` (a compaction queued
behind a turn whose lease the web process already took would wait for that lease while
holding the lock the turn needs) but by the session lease every job works under
(``runs.jobs``). ``queueing_lock`` keeps one waiting compaction and one preparation per
session.

Stop aborts the session's job; a worker's SIGTERM drains it (``SHUTDOWN_GRACE_SECONDS``,
then what is left is interrupted and answered again by another worker); a worker that died
is found by the sweep (``runs.sweep``).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Coroutine
from datetime import timedelta
from typing import Any

from procrastinate import JobContext, exceptions
from procrastinate.contrib.django import app
from procrastinate.job_context import AbortReason

from agents.leases import current_tag, held_here
from chat import control
from runs import db_threads, jobs

logger = logging.getLogger(__name__)

SESSIONS, BACKGROUND = "sessions", "background"  # the queues
SHUTDOWN_GRACE_SECONDS = 20.0  # SIGTERM: running jobs finish within this …
INTERRUPT_GRACE_SECONDS = 5.0  # … then an interrupted turn records itself within this

TURN_TASK = "netaclaw.session_turn"
RETRY_TASK = "netaclaw.session_retry"
COMPACT_TASK = "netaclaw.session_compaction"
PREPARE_TASK = "netaclaw.prepare_summary"
QUEUED_TASK = "netaclaw.session_queued"
QUEUED_MARGIN = timedelta(seconds=1)  # after the lease's expiry, the queue's job tries it


async def _guarded(context: JobContext, session_id: str, work: Coroutine[Any, Any, Any]) -> None:
    """Run ``work`` through an abort: Stop (the user's) stops the session's work, which
    ends as a stopped turn or a cancelled compaction; a shutdown past its grace interrupts
    it. Either way the work records itself before the job ends; an interrupted turn is
    then deferred again, once (``chat.interruption``)."""
    current_tag.set(f"job{context.job.id}")  # its leases name it (``chat.recovery``)
    async with db_threads.job_context():
        await _aborted_or_done(context, session_id, work)


async def _aborted_or_done(
    context: JobContext, session_id: str, work: Coroutine[Any, Any, Any]
) -> None:
    task = asyncio.ensure_future(work)
    try:
        outcome = await asyncio.shield(task)
    except asyncio.CancelledError:
        shutdown = context.abort_reason() == AbortReason.SHUTDOWN
        lease = held_here(session_id)
        if lease is not None:
            lease.stop.request(interrupt=shutdown)
        done, _pending = await asyncio.wait({task}, timeout=INTERRUPT_GRACE_SECONDS)
        if not done:
            task.cancel()
            await asyncio.wait({task}, timeout=INTERRUPT_GRACE_SECONDS)  # its ``finally``s
            return
        outcome = None if task.cancelled() or task.exception() else task.result()
    if isinstance(outcome, jobs.JobOutcome) and outcome.continue_attempt is not None:
        await defer_retry_async(session_id, "", attempt=outcome.continue_attempt)


@app.task(name=TURN_TASK, queue=SESSIONS, pass_context=True)
async def session_turn(
    context: JobContext, session_id: str, holder: str, reply_to: str = ""
) -> None:
    await _guarded(context, session_id, jobs.run_turn(session_id, holder, reply_to=reply_to))


@app.task(name=RETRY_TASK, queue=SESSIONS, pass_context=True)
async def session_retry(
    context: JobContext, session_id: str, holder: str = "", reply_to: str = "", attempt: int = 0
) -> None:
    work = jobs.run_retry(session_id, holder, reply_to=reply_to, attempt=attempt)
    await _guarded(context, session_id, work)


@app.task(name=COMPACT_TASK, queue=SESSIONS, pass_context=True)
async def session_compaction(
    context: JobContext, session_id: str, spec: dict[str, Any], holder: str = "", reply_to: str = ""
) -> None:
    work = jobs.run_compaction(
        session_id, jobs.CompactSpec.from_json(spec), holder, reply_to=reply_to
    )
    await _guarded(context, session_id, work)


@app.task(name=QUEUED_TASK, queue=SESSIONS, pass_context=True)
async def session_queued(context: JobContext, session_id: str) -> None:
    await _guarded(context, session_id, _queued_or_later(session_id))


async def _queued_or_later(session_id: str) -> jobs.JobOutcome | None:
    """Run when the lease a message queued behind would have expired: a holder still alive
    then answers the queue itself when it releases the lease, so this job only asks again
    (at the new expiry) while a message still waits. It never holds a worker's slot while
    it waits: 500 queued messages polling the lease every 0.5 s starved the turns."""
    outcome = await jobs.run_queued(session_id, wait=False)
    if outcome is None and await control.earliest_queued(session_id) is not None:
        await defer_queued_async(session_id)
    return outcome


@app.task(name=PREPARE_TASK, queue=BACKGROUND)
async def prepare_summary(session_id: str) -> None:
    await jobs.run_preparation(session_id)


# --- deferring ----------------------------------------------------------------------------


def defer_turn(session_id: str, holder: str, reply_to: str) -> None:
    """Sync, inside the caller's transaction: the job is stored with the message."""
    app.configure_task(TURN_TASK, queue=SESSIONS).defer(
        session_id=session_id, holder=holder, reply_to=reply_to
    )


async def defer_retry_async(
    session_id: str, holder: str, *, reply_to: str = "", attempt: int = 0
) -> None:
    await app.configure_task(RETRY_TASK, queue=SESSIONS).defer_async(
        session_id=session_id, holder=holder, reply_to=reply_to, attempt=attempt
    )


async def defer_queued_async(session_id: str) -> None:
    """The queue's safety net: a job at the moment the session's lease would expire (now,
    when it is free), should its holder die without answering it."""
    expires = await control.lease_expires_at(session_id)
    when = expires + QUEUED_MARGIN if expires is not None else None
    try:
        await app.configure_task(
            QUEUED_TASK, queue=SESSIONS, queueing_lock=f"queued:{session_id}", schedule_at=when
        ).defer_async(session_id=session_id)
    except exceptions.AlreadyEnqueued:
        pass


async def defer_compaction_async(
    session_id: str, spec: jobs.CompactSpec, holder: str, reply_to: str
) -> bool:
    """False: a compaction of the session waits already (it answers this one)."""
    lock = None if holder else f"compact:{session_id}"
    try:
        await app.configure_task(COMPACT_TASK, queue=SESSIONS, queueing_lock=lock).defer_async(
            session_id=session_id, spec=spec.to_json(), holder=holder, reply_to=reply_to
        )
    except exceptions.AlreadyEnqueued:
        return False
    return True


def defer_preparation(session_id: str, owner_id: int) -> None:
    """One preparation per session waits at most, one per user runs at a time (one user's
    slow summaries never hold up the others'; issue 27 item 5)."""
    try:
        app.configure_task(
            PREPARE_TASK,
            queue=BACKGROUND,
            queueing_lock=f"prep:{session_id}",
            lock=f"prep-user:{owner_id}",
        ).defer(session_id=session_id)
    except exceptions.AlreadyEnqueued:
        pass


def job_kwargs(job: Any) -> dict[str, Any]:
    """A job's arguments: the Django connector reads them back as JSON text, the worker's
    psycopg connector as a dict."""
    kwargs = job.task_kwargs
    return dict(json.loads(kwargs) if isinstance(kwargs, str) else kwargs)


async def abort_session_jobs(session_id: str) -> int:
    """Ask every running job of the session to stop now (Stop); how many were asked."""
    running = await app.job_manager.list_jobs_async(queue=SESSIONS, status="doing")
    ids = [job.id for job in running if job_kwargs(job).get("session_id") == session_id]
    for job_id in ids:
        if job_id is not None:
            await app.job_manager.cancel_job_by_id_async(job_id, abort=True)
    return len(ids)
