"""`make worker`: run the job worker in the foreground (issue 24 item 2; CONTRACT §8).

Turns, retries, manual compactions and summary preparations run here, against
``DATABASE_URL`` and ``REDIS_URL``. SIGTERM drains it: running jobs get
``SHUTDOWN_GRACE_SECONDS`` to finish, then what is left is interrupted (a turn records it and
is answered again by another worker) — it exits within 30 s. With SQLite (or no Redis) jobs
run inside ``make run`` and there is nothing to start."""

from __future__ import annotations

import asyncio
import os
import socket
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand
from procrastinate.contrib.django import app
from procrastinate.contrib.django.django_connector import DjangoConnector
from procrastinate.worker import Worker

from runs import sweep, worker

# Jobs at once. Turns wait on the model, not on this process; a job past the limit waits
# unfairly (a running job goes on to answer its session's queued messages), so it is set
# above the load (at 200, 500 clients' p99 was 13-20 s; at 1000, 9 s).
DEFAULT_CONCURRENCY = 1000


class Command(BaseCommand):
    help = "Run the NetaClaw job worker (turns and compactions) in the foreground."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY)

    def handle(self, *args: Any, concurrency: int, **options: Any) -> None:
        if settings.NETACLAW["RUNNER"] != "worker":
            self.stdout.write(
                "Jobs run inside `make run` here (SQLite, or no REDIS_URL): no worker is "
                "needed. Set DATABASE_URL (PostgreSQL) and REDIS_URL to run workers."
            )
            return
        name = f"netaclaw-{socket.gethostname()[:32]}-{os.getpid()}"
        self.stdout.write(f"NetaClaw worker {name}: {concurrency} jobs at once.")
        connector = app.connector
        assert isinstance(connector, DjangoConnector)  # procrastinate's Django app's own
        with app.replace_connector(connector.get_worker_connector()):
            asyncio.run(_work(name, concurrency))
        self.stdout.write(f"NetaClaw worker {name} stopped.")


async def _work(name: str, concurrency: int) -> None:
    async with app.open_async():
        app.perform_import_paths()
        # built here rather than by ``app.run_worker_async`` so the sweep knows which
        # worker it runs beside (it never settles that one's jobs)
        job_worker = Worker(
            app=app,
            queues=[worker.SESSIONS, worker.BACKGROUND],
            name=name,
            concurrency=concurrency,
            shutdown_graceful_timeout=worker.SHUTDOWN_GRACE_SECONDS,
            update_heartbeat_interval=sweep.HEARTBEAT_SECONDS,
            stalled_worker_timeout=sweep.STALLED_SECONDS,
            install_signal_handlers=True,
        )
        sweeper = asyncio.create_task(sweep.sweep_forever(app, lambda: job_worker.worker_id))
        try:
            await job_worker.run()
        finally:
            sweeper.cancel()
