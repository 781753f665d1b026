"""When each session's work runs: one ordered queue per session (seed §2, §9).

Each process keeps a runner per active session: its chat turns and compactions run one at
a time, in the order they arrived (a message sent during a compaction waits). What a turn
or a compaction does is ``chat.turn`` and ``compaction.service``; across processes the
compaction lease in the database (DESIGN 5) keeps one session from being compacted twice.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext as _

from agents.broadcast import apublish
from agents.events import CompactionSkipped, ErrorEvent, MessageStored, ServerEvent
from chat import turn
from compaction import service as compaction

logger = logging.getLogger(__name__)

Reply = Callable[[ServerEvent], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class ChatJob:
    session_id: str
    reply: Reply
    prepared: turn.PreparedTurn | None = None  # read with the store; valid if nothing queued


@dataclass(frozen=True, slots=True)
class CompactJob:
    session_id: str
    instructions: str | None
    reply: Reply


Job = ChatJob | CompactJob


@dataclass
class SessionRunner:
    session_id: str
    queue: asyncio.Queue[Job] = field(default_factory=asyncio.Queue)
    task: asyncio.Task[None] | None = None
    compaction_queued: bool = False


class Gateway:
    """Per-process registry of session runners."""

    def __init__(self) -> None:
        self._runners: dict[str, SessionRunner] = {}

    def runner(self, session_id: str) -> SessionRunner:
        runner = self._runners.get(session_id)
        if runner is None:
            runner = self._runners[session_id] = SessionRunner(session_id)
        return runner

    def is_idle(self, session_id: str) -> bool:
        """Nothing queued or running for this session in this process."""
        runner = self._runners.get(session_id)
        return runner is None or (
            runner.queue.empty() and (runner.task is None or runner.task.done())
        )

    async def submit_stored_chat(
        self,
        *,
        session_id: str,
        user_message: dict[str, Any],
        reply: Reply,
        prepared: turn.PreparedTurn | None = None,
    ) -> None:
        """Announce a user's message already stored; its turn waits its turn in the queue
        (``prepared`` is dropped when something got in first: it is read again)."""
        await apublish(session_id, MessageStored(session_id, user_message))
        if not self.is_idle(session_id):
            prepared = None
        self._enqueue(ChatJob(session_id, reply, prepared))

    async def submit_compact(
        self, *, session_id: str, instructions: str | None, reply: Reply
    ) -> None:
        runner = self.runner(session_id)
        if compaction.is_compacting_here(session_id) or runner.compaction_queued:
            await _safe_reply(reply, _skipped(session_id))
            return
        runner.compaction_queued = True
        self._enqueue(CompactJob(session_id, instructions, reply))

    def _enqueue(self, job: Job) -> None:
        runner = self.runner(job.session_id)
        runner.queue.put_nowait(job)
        if runner.task is None or runner.task.done():
            runner.task = asyncio.get_running_loop().create_task(self._drain(runner))

    async def _drain(self, runner: SessionRunner) -> None:
        while not runner.queue.empty():
            job = runner.queue.get_nowait()
            try:
                if isinstance(job, CompactJob):
                    runner.compaction_queued = False
                    await _manual_compaction(job)
                else:
                    await turn.run_chat_turn(job.session_id, job.prepared)
            except Exception:
                logger.exception("job for session %s failed", runner.session_id)
                await _safe_reply(
                    job.reply,
                    ErrorEvent(
                        error=_("Something went wrong on the server; the chat can go on."),
                        reason="internal_error",
                        session_id=runner.session_id,
                    ),
                )
        if self._runners.get(runner.session_id) is runner and runner.queue.empty():
            del self._runners[runner.session_id]


async def _manual_compaction(job: CompactJob) -> None:
    outcome = await compaction.acompact(
        job.session_id, reason="manual", instructions=job.instructions
    )
    if outcome.status == "skipped":
        await _safe_reply(job.reply, _skipped(job.session_id))
    await apublish(job.session_id, await turn.read_token_update(job.session_id))


def _skipped(session_id: str) -> CompactionSkipped:
    return CompactionSkipped(
        session_id=session_id,
        reason="in_progress",
        error=_("A compaction of this session is already in progress; this request was skipped."),
    )


async def _safe_reply(reply: Reply, event: ServerEvent) -> None:
    try:
        await reply(event)
    except Exception:  # the socket may be gone; the job's results are stored anyway
        logger.debug("could not deliver %s", event.type, exc_info=True)


gateway = Gateway()
