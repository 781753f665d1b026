"""When each session's work runs (seed §2, §9; issue 14).

A session's chat turns and socket compactions run one at a time across every process:
whoever holds the session's turn lease (``chat.control``) runs them. A chat message that
arrives meanwhile is stored queued (``chat.turn.accept_chat``) and answered by the next
turn, which releases it after the running turn's last message. This module keeps, per
process, one worker per session with work here: it runs what this process took the lease
for, then — after releasing the lease — looks for queued messages and takes the lease
again for them; a compaction asked for here while the lease is held waits here, in order
of arrival with the queued messages. A process that stored a queued message watches the
lease too, so a message queued behind a holder that died is answered once its lease
expires. What a turn or a compaction does is ``chat.turn`` and ``compaction.service``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

from django.utils import timezone

from agents.broadcast import apublish
from agents.events import CompactionSkipped, ErrorEvent, MessageStored, ServerEvent
from agents.leases import COMPACT, TURN, SessionLease
from agents.reasons import wire_text
from chat import control, turn
from compaction import preview
from compaction.request import CompactionRequest
from compaction.run import acompact

logger = logging.getLogger(__name__)

Reply = Callable[[ServerEvent], Awaitable[None]]

# How often a compaction asked for here looks for the lease another process holds.
POLL_SECONDS = 0.5


@dataclass(frozen=True, slots=True)
class CompactJob:
    session_id: str
    instructions: str | None
    reply: Reply
    at: float = field(default_factory=time.time)
    up_to: int | None = None  # compact only what comes before this message (issue 17)
    # write the summary, apply nothing: a preview kept for this user (``compaction.preview``)
    preview: bool = False
    user_id: int | None = None


@dataclass(frozen=True, slots=True)
class Unit:
    """One piece of work under a held lease."""

    kind: Literal["turn", "compact", "retry"]
    lease: SessionLease
    prepared: turn.PreparedTurn | None = None
    # the stored messages the turn answers, announced with its first events
    opening: tuple[ServerEvent, ...] = ()
    job: CompactJob | None = None
    reply: Reply | None = None


@dataclass
class SessionRunner:
    session_id: str
    ready: deque[Unit] = field(default_factory=deque)  # leases taken on arrival
    waiting: deque[CompactJob] = field(default_factory=deque)  # compactions for the lease
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    compaction_asked: bool = False  # a compaction asked for here has not started yet


class Gateway:
    """Per-process registry of session workers."""

    def __init__(self) -> None:
        self._runners: dict[str, SessionRunner] = {}

    def runner(self, session_id: str) -> SessionRunner:
        runner = self._runners.get(session_id)
        if runner is None:
            runner = self._runners[session_id] = SessionRunner(session_id)
        return runner

    def is_idle(self, session_id: str) -> bool:
        """No work of this session runs or waits in this process."""
        runner = self._runners.get(session_id)
        return runner is None or runner.task is None or runner.task.done()

    async def submit_chat(self, accepted: turn.AcceptedChat, reply: Reply) -> None:
        """Announce a stored chat message (queued, or released with the ones before it);
        when it took the lease, its turn runs next here."""
        sid = accepted.session_id
        stored = tuple(MessageStored(sid, message) for message in accepted.messages)
        runner = self.runner(sid)
        if accepted.holder:  # announced by the turn, with its meter: one layer message
            lease = SessionLease(sid, accepted.holder)
            await lease.start()
            runner.ready.append(Unit("turn", lease, accepted.prepared, stored, reply=reply))
        else:
            await apublish(sid, *stored)
        self._ensure_worker(runner)

    async def submit_compact(
        self,
        *,
        session_id: str,
        instructions: str | None,
        reply: Reply,
        up_to: int | None = None,
        preview: bool = False,
        user_id: int | None = None,
    ) -> None:
        runner = self.runner(session_id)
        if runner.compaction_asked:
            await _safe_reply(reply, _skipped(session_id))
            return
        job = CompactJob(
            session_id, instructions, reply, up_to=up_to, preview=preview, user_id=user_id
        )
        lease = await SessionLease.aacquire(session_id, COMPACT)
        if lease is None and await control.compaction_elsewhere(session_id):
            await _safe_reply(reply, _skipped(session_id))
            return
        runner = self.runner(session_id)  # the await may have retired the old one
        runner.compaction_asked = True
        if lease is not None:
            await lease.start()
            runner.ready.append(Unit("compact", lease, job=job, reply=reply))
        else:  # a turn holds the session: the compaction follows it
            runner.waiting.append(job)
            runner.wake.set()
        self._ensure_worker(runner)

    async def submit_retry(self, *, session_id: str, reply: Reply) -> None:
        """Run the last failed or stopped turn again; refused while work runs."""
        lease = await SessionLease.aacquire(session_id, TURN)
        if lease is None:
            busy = ErrorEvent(wire_text("turn_in_progress"), "turn_in_progress", session_id)
            await _safe_reply(reply, busy)
            return
        await lease.start()
        runner = self.runner(session_id)
        runner.ready.append(Unit("retry", lease, reply=reply))
        self._ensure_worker(runner)

    def _ensure_worker(self, runner: SessionRunner) -> None:
        runner.wake.set()
        if runner.task is None or runner.task.done():
            runner.task = asyncio.get_running_loop().create_task(self._work(runner))

    async def _work(self, runner: SessionRunner) -> None:
        looked: control.QueueLook | None = None
        try:
            while True:
                unit = await self._next_unit(runner, looked)
                if unit is None:
                    return
                try:
                    await self._run(runner, unit)
                except Exception:
                    logger.exception("work of session %s failed", runner.session_id)
                    if unit.reply is not None:
                        failed = ErrorEvent(
                            wire_text("internal_error"), "internal_error", runner.session_id
                        )
                        await _safe_reply(unit.reply, failed)
                finally:
                    # released first, then the queue is looked at: a message stored
                    # meanwhile is either seen there or takes the lease itself
                    looked = await control.release_and_look(unit.lease)
        finally:
            for unit in runner.ready:  # only when this task was cancelled
                await unit.lease.arelease()
            if self._runners.get(runner.session_id) is runner:
                del self._runners[runner.session_id]

    async def _next_unit(
        self, runner: SessionRunner, looked: control.QueueLook | None = None
    ) -> Unit | None:
        """The next piece of work, its lease taken; None when the session has none left.

        Without a lease taken on arrival: a compaction asked for here or the queued
        messages, whichever came first; when another holder has the lease, wait for it
        (our compaction polls; queued messages are looked at again when its lease
        expires, in case it died — a live holder answers them itself)."""
        sid = runner.session_id
        while True:
            if runner.ready:
                return runner.ready.popleft()
            runner.wake.clear()
            if looked is not None:  # read with the release that came just before
                since, looked = looked.since, None
            else:
                since = await control.earliest_queued(session_id=sid)
            if runner.ready:
                return runner.ready.popleft()
            job = runner.waiting[0] if runner.waiting else None
            if job is None and since is None:
                return None
            compact_first = job is not None and (since is None or job.at <= since.timestamp())
            kind = COMPACT if compact_first else TURN
            lease = await SessionLease.aacquire(sid, kind)
            if lease is not None:
                await lease.start()
                if compact_first and job is not None:
                    runner.waiting.popleft()
                    return Unit("compact", lease, job=job, reply=job.reply)
                return Unit("turn", lease)
            expiry = await control.lease_expires_at(sid)
            wait = 0.05 if expiry is None else (expiry - timezone.now()).total_seconds() + 0.05
            if job is not None:
                wait = min(wait, POLL_SECONDS)
            try:
                await asyncio.wait_for(runner.wake.wait(), timeout=max(wait, 0.05))
            except TimeoutError:
                pass

    async def _run(self, runner: SessionRunner, unit: Unit) -> None:
        sid = runner.session_id
        lease = unit.lease
        if unit.kind == "compact":
            assert unit.job is not None
            runner.compaction_asked = False
            await _manual_compaction(unit.job, lease)
            return
        prepared, opening = unit.prepared, unit.opening
        if unit.kind == "retry":
            prepared = await turn.prepare_retry(sid)
            if prepared is None:
                refusal = ErrorEvent(wire_text("nothing_to_retry"), "nothing_to_retry", sid)
                if unit.reply is not None:
                    await _safe_reply(unit.reply, refusal)
                return
        elif prepared is None:
            released, prepared = await turn.start_queued_turn(sid)
            opening = tuple(MessageStored(sid, message) for message in released)
            if prepared is None:
                return  # nothing was queued any more
        await turn.ChatTurn(prepared, lease, opening).run()


async def _manual_compaction(job: CompactJob, lease: SessionLease) -> None:
    """A ``compact`` frame's compaction (or, with ``preview``, its summary kept as a
    preview), under the session's lease (a chat sent meanwhile is queued). A stop ends it
    at once: its thread writes nothing after the stop."""
    if job.preview:
        request = preview.preview_request(
            job.session_id, created_by=job.user_id, instructions=job.instructions, up_to=job.up_to
        )
    else:
        request = CompactionRequest(job.session_id, instructions=job.instructions, up_to=job.up_to)
    task = asyncio.ensure_future(acompact(request, lease=lease))
    stop = asyncio.ensure_future(lease.stop.wait())
    try:
        await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.cancel()
        if not task.done():  # stopped (or this task was cancelled): do not wait for it
            task.cancel()
            await asyncio.wait({task})
    outcome = None if task.cancelled() else task.result()
    if outcome is not None and outcome.status == "skipped":
        await _safe_reply(job.reply, _skipped(job.session_id))


def _skipped(session_id: str) -> CompactionSkipped:
    return CompactionSkipped(session_id, "in_progress", wire_text("in_progress"))


async def _safe_reply(reply: Reply, event: ServerEvent) -> None:
    try:
        await reply(event)
    except Exception:  # the socket may be gone; the job's results are stored anyway
        logger.debug("could not deliver %s", event.type, exc_info=True)


gateway = Gateway()
