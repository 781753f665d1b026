"""The sweep: what a dead worker left, found within seconds (issue 24 items 1 and 3).

Every worker, every ``SWEEP_SECONDS``, asks Procrastinate for the jobs of workers whose
heartbeat (every ``HEARTBEAT_SECONDS``) has stalled for ``STALLED_SECONDS``. Each such job's
session is freed from its dead lease (``chat.recovery``): a compaction it ran is recorded
interrupted, a turn is recorded interrupted and answered again by itself (once), queued
messages are answered; the job is closed as failed and the dead worker forgotten. So a
session whose worker was killed works again well within 15 s.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from channels.db import database_sync_to_async
from procrastinate import App, jobs

from agents import replay
from agents.broadcast import apublish
from agents.events import TurnDone
from agents.models import ChatSession
from chat.recovery import Recovery, recover
from compaction import background
from runs import worker

logger = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 2.0
STALLED_SECONDS = 6.0
SWEEP_SECONDS = 3.0


async def sweep_forever(app: App, own_worker: Callable[[], int | None]) -> None:
    """``own_worker``: the id of the worker this sweep runs beside, once registered."""
    while True:
        try:
            await sweep_once(app, own_worker())
        except Exception:  # a failed sweep is tried again at the next one
            logger.exception("the sweep of stalled jobs failed")
        await asyncio.sleep(SWEEP_SECONDS)


async def sweep_once(app: App, own_worker_id: int | None = None) -> int:
    """Settle every stalled job of another worker; how many there were.

    The sweeping worker is alive by definition. Under load its event loop can run the
    sweep before its own heartbeat after a long stall: it would then settle its own
    running turns (an interrupted ``turn_done`` mid-answer) and prune its own row, after
    which every job it runs counts as stalled. So it beats first and never judges itself.
    """
    if own_worker_id is not None:
        await app.job_manager.update_heartbeat(own_worker_id)
    stalled = [
        job
        for job in await app.job_manager.get_stalled_jobs(seconds_since_heartbeat=STALLED_SECONDS)
        if own_worker_id is None or job.worker_id != own_worker_id
    ]
    for job in stalled:
        await _settle(app, job)
    if stalled:
        await app.job_manager.prune_stalled_workers(STALLED_SECONDS)
    return len(stalled)


async def _settle(app: App, job: jobs.Job) -> None:
    kwargs = worker.job_kwargs(job)
    session_id = str(kwargs.get("session_id") or "")
    logger.warning("job %s (%s) of a dead worker: settling it", job.id, job.task_name)
    if job.task_name == worker.PREPARE_TASK:
        await database_sync_to_async(background.forget)(session_id)
    elif session_id:
        for recovered in await database_sync_to_async(_recover)(session_id, job, kwargs):
            await _announce(recovered)
    await app.job_manager.finish_job(job, status=jobs.Status.FAILED, delete_job=False)


def _recover(session_id: str, job: jobs.Job, kwargs: dict[str, Any]) -> list[Recovery]:
    holder = (
        ChatSession.objects.values_list("lease_holder", flat=True).filter(pk=session_id).first()
    )
    if not holder:
        return []
    ours = holder == kwargs.get("holder") or f"/job{job.id}:" in holder
    if not ours:
        return []
    attempt = int(kwargs.get("attempt") or 0)
    return [recover(session_id, dead=holder, attempt=attempt, hand_over=True)]


async def _announce(found: Recovery) -> None:
    sid = found.session_id
    events = list(found.events)
    if found.interrupted_turn:
        turn_id = (await replay.read(sid)).turn_id
        events.append(TurnDone(sid, turn_id=turn_id, interrupted=True))
    if found.continue_attempt is not None:  # its job adopts the lease handed over
        await worker.defer_retry_async(sid, found.holder, attempt=found.continue_attempt)
    elif found.queued:
        await worker.defer_queued_async(sid)
    await apublish(sid, *events)
