"""Real job workers (``manage.py run_worker``) and web processes running on them, for the
tests of durable runs (issue 24): PostgreSQL and Redis, separate processes, real signals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection

from tests.support.daphne import ROOT, LiveServer, database_url, running_daphne


def worker_env(var_dir: Path) -> dict[str, str]:
    """What a worker and a web process of the worker runner share: this test database,
    Redis with this suite's prefix, the worker runner."""
    return {
        **os.environ,
        "DATABASE_URL": database_url(),
        "DJANGO_SETTINGS_MODULE": os.environ.get("DJANGO_SETTINGS_MODULE", "tests.settings"),
        "NETACLAW_VAR_DIR": str(var_dir),
        "PYTHONUNBUFFERED": "1",
        "REDIS_URL": str(settings.REDIS_URL),
        "NETACLAW_CHANNEL_PREFIX": settings.CHANNEL_LAYERS["default"]["CONFIG"]["prefix"],
        "NETACLAW_RUNNER": "worker",
    }


def forget_jobs() -> None:
    """Procrastinate's tables are not the test database's models: a test's jobs and
    workers would outlive it (the flush leaves them)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "TRUNCATE procrastinate_jobs, procrastinate_events, procrastinate_workers,"
            " procrastinate_periodic_defers RESTART IDENTITY CASCADE"
        )


@dataclass
class Worker:
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def signal(self, signum: int) -> None:
        os.kill(self.proc.pid, signum)

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout=timeout)

    def text(self) -> str:
        return self.log.read_text(errors="replace")


def _newest_worker() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(max(id), 0) FROM procrastinate_workers")
        (newest,) = cursor.fetchone()
    return int(newest)


@contextmanager
def running_worker(var_dir: Path, *, concurrency: int = 50) -> Iterator[Worker]:
    """``manage.py run_worker`` against the test database, registered before it yields;
    SIGTERMed (then killed) on exit."""
    var_dir.mkdir(parents=True, exist_ok=True)
    before = _newest_worker()
    log = var_dir / f"worker-{time.monotonic_ns()}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "run_worker", "--concurrency", str(concurrency)],
            cwd=ROOT,
            env=worker_env(var_dir),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    worker = Worker(proc, log)
    try:
        deadline = time.monotonic() + 40
        while _newest_worker() <= before:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the worker did not start:\n{worker.text()}")
            time.sleep(0.1)
        yield worker
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=40)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)


@dataclass
class Deployment:
    """Web processes and workers on one database and one Redis."""

    webs: list[LiveServer] = field(default_factory=list)
    workers: list[Worker] = field(default_factory=list)


@contextmanager
def deployment(var_dir: Path, *, webs: int = 1, workers: int = 1) -> Iterator[Deployment]:
    forget_jobs()
    with ExitStack() as stack:
        found = Deployment()
        env = {"NETACLAW_RUNNER": "worker"}
        for _ in range(webs):
            found.webs.append(stack.enter_context(running_daphne(var_dir, layer="redis", env=env)))
        for _ in range(workers):
            found.workers.append(stack.enter_context(running_worker(var_dir)))
        yield found


class SyncSocket:
    """A WebSocket client driven from sync test code (processes and the ORM stay in the
    test's thread): its event loop runs in a thread of its own."""

    def __init__(self, port: int, token: str) -> None:
        import asyncio
        import threading

        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._ws = self._run(self._connect(port, token), 20)

    async def _connect(self, port: int, token: str) -> Any:
        import websockets

        return await websockets.connect(
            f"ws://127.0.0.1:{port}/ws/chat/",
            additional_headers={"Authorization": f"Token {token}"},
            open_timeout=15,
            close_timeout=2,  # a test that stops reading must not wait for the close
        )

    def _run(self, coro: Any, timeout: float) -> Any:
        import asyncio

        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def send(self, frame: dict[str, Any]) -> None:
        import json

        self._run(self._ws.send(json.dumps(frame)), 10)

    def until(self, kind: str, timeout: float = 60) -> list[dict[str, Any]]:
        """Every event up to and including the first of ``kind``."""
        import json

        async def read() -> list[dict[str, Any]]:
            seen: list[dict[str, Any]] = []
            while True:
                event = json.loads(await self._ws.recv())
                seen.append(event)
                if event["type"] == kind:
                    return seen

        return self._run(read(), timeout)

    def close(self) -> None:
        try:
            self._run(self._ws.close(), 10)
        except TimeoutError:  # unread events filled its queue: the close gave up waiting
            pass
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
