"""The seed's handleChat / compact flow (§2), one ordered queue per session.

Each process keeps a runner per active session: chat turns and compactions of
that session run one at a time, in the order they arrived (seed §9: a message
sent during a compaction waits). Across processes the compaction lease in the
database (DESIGN 5) makes sure one session is never compacted twice at once.

Nothing here blocks the event loop: short ORM work goes through
``database_sync_to_async``; a compaction (an LLM call that may take a minute)
runs in its own worker thread so other sessions' database work is not queued
behind it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import sync_to_async
from django.db import close_old_connections
from django.utils.translation import gettext as _

from channels_app import turns
from channels_app.events import (
    CompactionSkipped,
    ErrorEvent,
    MessageStored,
    ServerEvent,
    TurnDone,
)
from channels_app.groups import abroadcast

logger = logging.getLogger(__name__)

Reply = Callable[[ServerEvent], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class ChatJob:
    session_id: str
    user_message: dict[str, Any]
    reply: Reply
    prepared: turns.PreparedTurn | None = None  # read with the store; valid if nothing queued


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
    compaction_in_flight: bool = False
    compaction_queued: bool = False


def _compact_in_thread(session_id: str, reason: str, instructions: str | None) -> Any:
    """Run the compaction service in a worker thread with its own DB connection."""
    try:
        return turns.compact_session(
            session_id=session_id, reason=reason, instructions=instructions
        )
    finally:
        close_old_connections()


async def run_compaction(session_id: str, *, reason: str, instructions: str | None = None) -> Any:
    return await sync_to_async(_compact_in_thread, thread_sensitive=False)(
        session_id, reason, instructions
    )


class Gateway:
    """Per-process registry of session runners."""

    def __init__(self) -> None:
        self._runners: dict[str, SessionRunner] = {}

    def runner(self, session_id: str) -> SessionRunner:
        runner = self._runners.get(session_id)
        if runner is None:
            runner = self._runners[session_id] = SessionRunner(session_id)
        return runner

    async def submit_chat(self, *, session_id: str, content: str, reply: Reply) -> None:
        """Store and announce the user's message now; the turn waits its turn in the queue."""
        user_message = await turns.store_user_message(session_id, content)
        await self.submit_stored_chat(session_id=session_id, user_message=user_message, reply=reply)

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
        prepared: turns.PreparedTurn | None = None,
    ) -> None:
        """Announce a user's message already stored (the consumer stores it with its access
        check, and prepares the turn in the same trip when the session was idle); the turn
        waits its turn in the queue."""
        await abroadcast(session_id, MessageStored(session_id, user_message))
        if not self.is_idle(session_id):
            prepared = None  # something got in first: read again when the turn starts
        self._enqueue(ChatJob(session_id, user_message, reply, prepared))

    async def submit_compact(
        self, *, session_id: str, instructions: str | None, reply: Reply
    ) -> None:
        runner = self.runner(session_id)
        if runner.compaction_in_flight or runner.compaction_queued:
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
                    await self._manual_compaction(runner, job)
                else:
                    await self._chat_turn(runner, job)
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

    async def _compaction(
        self, runner: SessionRunner, *, reason: str, instructions: str | None = None
    ) -> Any:
        runner.compaction_in_flight = True
        try:
            return await run_compaction(runner.session_id, reason=reason, instructions=instructions)
        finally:
            runner.compaction_in_flight = False

    async def _manual_compaction(self, runner: SessionRunner, job: CompactJob) -> None:
        outcome = await self._compaction(runner, reason="manual", instructions=job.instructions)
        if outcome.status == "skipped":
            await _safe_reply(job.reply, _skipped(runner.session_id))
        await abroadcast(runner.session_id, await turns.token_update(runner.session_id))

    async def _chat_turn(self, runner: SessionRunner, job: ChatJob) -> None:
        sid = runner.session_id
        prepared = job.prepared or await turns.prepare_turn(
            session_id=sid, user_message=job.user_message
        )
        if prepared.refusal is not None:
            await abroadcast(sid, prepared.refusal)
            await abroadcast(sid, TurnDone(sid))
            return

        meter, messages = prepared.meter, prepared.messages
        if prepared.compact_first:
            await self._compaction(runner, reason="auto")
            meter, messages = await turns.meter_and_context(sid)
        await abroadcast(sid, meter)

        auto_failed_this_turn = False

        async def before_step(messages: list[Any]) -> list[Any]:
            nonlocal auto_failed_this_turn
            if auto_failed_this_turn or not await turns.should_auto_compact(sid):
                return messages
            outcome = await self._compaction(runner, reason="auto")
            auto_failed_this_turn = outcome.status != "done"
            await abroadcast(sid, await turns.token_update(sid))
            return await turns.llm_context(sid) if outcome.status == "done" else messages

        async def on_event(event: Any) -> None:
            for server_event in await turns.handle_runtime_event(
                sid, event, prepared.session, prepared.tally
            ):
                await abroadcast(sid, server_event)

        await turns.run_turn(
            prepared, messages=messages, on_event=on_event, before_step=before_step
        )
        await abroadcast(sid, TurnDone(sid))


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
