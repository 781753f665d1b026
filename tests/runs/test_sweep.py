"""The sweep judges other workers only (``runs.sweep``): a worker whose event loop stalled
past the heartbeat timeout under load is alive — it is the one sweeping."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from django.db import connection
from procrastinate.contrib.django import app
from procrastinate.contrib.django.django_connector import DjangoConnector

from runs import sweep, worker
from tests.support.workers import forget_jobs

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _job_status(job_id: int) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT status FROM procrastinate_jobs WHERE id = %s", [job_id])
        return str(cursor.fetchone()[0])


def _workers() -> set[int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM procrastinate_workers")
        return {row[0] for row in cursor.fetchall()}


async def _doing_job(worker_id: int) -> int:
    """A job of a session with no lease, taken by ``worker_id`` (settling it recovers nothing)."""
    await app.configure_task(worker.QUEUED_TASK, queue=worker.SESSIONS).defer_async(
        session_id=str(uuid.uuid4())
    )
    job = await app.job_manager.fetch_job([worker.SESSIONS], worker_id)
    assert job is not None and job.id is not None
    return job.id


def test_a_stalled_sweeper_settles_the_dead_workers_jobs_and_never_its_own() -> None:
    forget_jobs()
    connector = app.connector
    assert isinstance(connector, DjangoConnector)

    async def scenario() -> tuple[int, int, int, int, int]:
        with app.replace_connector(connector.get_worker_connector()):
            async with app.open_async():
                own = await app.job_manager.register_worker()
                dead = await app.job_manager.register_worker()
                own_job, dead_job = await _doing_job(own), await _doing_job(dead)
                # both heartbeats a minute old: this worker's loop was stalled as long
                await app.connector.execute_query_async(
                    "UPDATE procrastinate_workers SET last_heartbeat = now() - interval '1 minute'"
                )
                settled = await sweep.sweep_once(app, own)
                return own, dead, own_job, dead_job, settled

    try:
        own, dead, own_job, dead_job, settled = asyncio.run(scenario())
        assert settled == 1
        assert _job_status(dead_job) == "failed"
        assert _job_status(own_job) == "doing"  # still running here: not interrupted
        assert _workers() == {own}  # the dead one pruned, this one kept (its jobs stay its)
    finally:
        forget_jobs()
