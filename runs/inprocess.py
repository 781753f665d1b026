"""The in-process runner (``make run``: one process, SQLite, no other service).

Jobs run as tasks on the web process's own event loop, behind the same interface as the
worker runner (``runs.runner``): the session's lease keeps them one at a time per
session. On SIGTERM the process drains (``drain``, called by ``netaclaw.asgi`` before
Daphne stops): it takes no new work, lets every running job finish within a grace period,
and then interrupts what is left — a turn stores its interruption (``chat.interruption``),
a compaction writes nothing — so no answer is lost without a record and no thread keeps the
process alive.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Coroutine
from typing import Any

from agents.leases import held_leases
from runs import jobs

logger = logging.getLogger(__name__)

INTERRUPT_GRACE_SECONDS = 5.0  # after the drain's grace: for interrupted work to record itself


class InProcessRunner:
    name = "inprocess"

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.draining = False

    def spawn(self, work: Coroutine[Any, Any, Any], *, name: str) -> None:
        """Run ``work`` on this process's loop (from the loop, or from any thread)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is not None:
            self._loop = loop
            self._start(work, name)
        elif self._loop is not None and self._loop.is_running():
            self._loop.call_soon_threadsafe(self._start, work, name)
        else:  # no loop of this process runs jobs yet (a command, a test): a thread's own
            threading.Thread(target=asyncio.run, args=(work,), name=name, daemon=True).start()

    def _start(self, work: Coroutine[Any, Any, Any], name: str) -> None:
        task = asyncio.get_running_loop().create_task(work, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            logger.error("job %s failed", task.get_name(), exc_info=error)
            return
        outcome = task.result()
        if isinstance(outcome, jobs.JobOutcome) and outcome.continue_attempt is not None:
            # only a drain interrupts here: the process is exiting, the record offers Retry
            logger.info("job %s interrupted; it is retried by hand", task.get_name())

    @property
    def running(self) -> int:
        return len(self._tasks)

    async def drain(self, grace: float) -> None:
        """Finish what runs within ``grace`` seconds, then interrupt what is left."""
        self.draining = True
        pending = [t for t in self._tasks if not t.done()]
        if pending:
            logger.info("draining %d job(s), at most %.0f s", len(pending), grace)
            await asyncio.wait(pending, timeout=grace)
        left = [t for t in self._tasks if not t.done()]
        if not left:
            return
        logger.warning("interrupting %d job(s) still running", len(left))
        for lease in held_leases():
            lease.stop.request(interrupt=True)
        await asyncio.wait(left, timeout=INTERRUPT_GRACE_SECONDS)
        for task in left:
            if not task.done():
                task.cancel()
