"""A session's jobs (issue 24): what each kind of work does, whichever runner runs it.

Every job works under the session's lease (``agents.leases``), so one turn or one
compaction runs at a time for the session in every process. A job the web process started
with a lease — it stored the message and took the lease in one trip — adopts that lease;
any other waits until the lease is free. After its unit a job releases the lease and looks
for messages queued meanwhile; when there are, it takes the lease again and answers them,
so none is stranded.

A job reports back what its runner must do next: a turn its runner interrupted (the
runner is shutting down) is answered again elsewhere, once (``chat.interruption``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any

from channels.db import database_sync_to_async

from agents.broadcast import apublish, asend_to
from agents.daemon_threads import in_daemon_thread
from agents.events import (
    CompactionFailed,
    CompactionSkipped,
    ErrorEvent,
    MessageStored,
    ServerEvent,
)
from agents.leases import COMPACT, TURN, SessionLease
from agents.reasons import wire_text
from chat import control, turn
from chat.interruption import continues_by_itself
from compaction import background, preview, records
from compaction.request import CompactionRequest
from compaction.run import acompact

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CompactSpec:
    """A manual compaction asked for (JSON-safe: a worker job's arguments)."""

    instructions: str | None = None
    up_to: int | None = None
    preview_for: int | None = None  # a user id: keep the summary as that user's preview
    trigger: str | None = None  # "api" for REST, "manual" otherwise
    request_id: str = ""  # the REST call that waits for this compaction's record

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CompactSpec:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})

    def request(self, session_id: str) -> CompactionRequest:
        if self.preview_for is not None:
            return preview.preview_request(
                session_id,
                created_by=self.preview_for,
                instructions=self.instructions,
                up_to=self.up_to,
                trigger=self.trigger,
                request_id=self.request_id,
            )
        return CompactionRequest(
            session_id,
            instructions=self.instructions,
            up_to=self.up_to,
            trigger=self.trigger,
            request_id=self.request_id,
        )


@dataclass
class JobOutcome:
    """What the runner does next: ``continue_attempt`` — an interrupted turn to run again
    (its attempt number), elsewhere."""

    continue_attempt: int | None = None


# One piece of work under a held lease; returns the attempt of a turn it left interrupted.
Unit = Callable[[SessionLease], Awaitable[int | None]]


async def run_turn(
    session_id: str,
    holder: str,
    *,
    prepared: turn.PreparedTurn | None = None,
    opening: tuple[ServerEvent, ...] = (),
    reply_to: str = "",
) -> JobOutcome:
    """Answer a message the web process stored with the lease (``holder``); ``prepared``
    and ``opening``: the turn's reads and the messages to announce with it, when the web
    process is this one."""
    lease = await _adopt_or_wait(session_id, holder, TURN)

    async def unit(held: SessionLease) -> int | None:
        ready = prepared if prepared is not None else await turn.prepare_now(session_id)
        return await _run_chat_turn(ready, held, opening)

    return await _units(lease, unit, reply_to)


async def run_retry(
    session_id: str, holder: str = "", *, reply_to: str = "", attempt: int = 0
) -> JobOutcome:
    """Run the last failed, stopped or interrupted turn again, with the history as it is
    (``attempt`` > 0: by itself, after an interruption)."""
    lease = await _adopt_or_wait(session_id, holder, TURN)

    async def unit(held: SessionLease) -> int | None:
        prepared = await turn.prepare_retry(session_id)
        if prepared is None:
            refusal = ErrorEvent(wire_text("nothing_to_retry"), "nothing_to_retry", session_id)
            await asend_to(reply_to, refusal)
            return None
        return await _run_chat_turn(prepared, held, (), attempt)

    return await _units(lease, unit, reply_to)


async def run_compaction(
    session_id: str, spec: CompactSpec, holder: str = "", *, reply_to: str = ""
) -> JobOutcome:
    """A manual compaction (or its preview), under a lease of its own: the one the web
    process took, or the next one free (a turn runs first)."""
    lease = await _adopt_or_wait(session_id, holder, COMPACT)

    async def unit(held: SessionLease) -> int | None:
        await _manual_compaction(spec.request(session_id), held, reply_to)
        return None

    return await _units(lease, unit, reply_to)


async def run_queued(session_id: str, *, wait: bool = True) -> JobOutcome | None:
    """Answer what waits queued in the session (its last holder died with it queued).
    ``wait=False``: one try at the lease — None while another holder has it."""
    if wait:
        lease = await SessionLease.await_free(session_id, TURN)
    else:
        found = await SessionLease.aacquire(session_id, TURN)
        if found is None:
            return None
        lease = found
    return await _units(lease, _queued_turn, "")


async def run_preparation(session_id: str) -> None:
    """The next automatic compaction's summary, written ahead and stored
    (``compaction.background``); no lease."""
    await in_daemon_thread(lambda: background.prepare(session_id), name="compaction-prep")


async def _adopt_or_wait(session_id: str, holder: str, kind: str) -> SessionLease:
    lease = await SessionLease.aadopt(session_id, holder) if holder else None
    return lease or await SessionLease.await_free(session_id, kind)


async def _run_chat_turn(
    prepared: turn.PreparedTurn,
    lease: SessionLease,
    opening: tuple[ServerEvent, ...],
    attempt: int = 0,
) -> int | None:
    chat_turn = turn.ChatTurn(prepared, lease, opening, attempt=attempt)
    await chat_turn.run()
    return attempt if chat_turn.interrupted else None


async def _units(lease: SessionLease, first: Unit, reply_to: str) -> JobOutcome:
    """``first``, then the turns that answer what was queued meanwhile, each under the
    lease, released after it (its heartbeat stops with it)."""
    outcome = JobOutcome()
    unit: Unit | None = first
    sid = lease.session_id
    while unit is not None:
        await lease.start()
        try:
            interrupted = await unit(lease)
        except Exception:
            logger.exception("work of session %s failed", sid)
            await asend_to(reply_to, ErrorEvent(wire_text("internal_error"), "internal_error", sid))
            interrupted = None
        finally:
            looked = await control.release_and_look(lease)
        if interrupted is not None:  # the runner stops: what is queued waits for the next
            if continues_by_itself(interrupted):
                outcome.continue_attempt = interrupted + 1
            return outcome
        if looked is None or looked.since is None:
            return outcome
        next_lease = await SessionLease.aacquire(sid, TURN)
        if next_lease is None:  # another holder answers them
            return outcome
        lease, unit, reply_to = next_lease, _queued_turn, ""
    return outcome


async def _queued_turn(lease: SessionLease) -> int | None:
    released, prepared = await turn.start_queued_turn(lease.session_id)
    if prepared is None:
        return None  # nothing was queued any more
    opening = tuple(MessageStored(lease.session_id, message) for message in released)
    return await _run_chat_turn(prepared, lease, opening)


async def _manual_compaction(
    request: CompactionRequest, lease: SessionLease, reply_to: str
) -> None:
    """A stop ends it at once: its thread writes nothing after the stop."""
    task = asyncio.ensure_future(acompact(request, lease=lease))
    stop = asyncio.ensure_future(lease.stop.wait())
    try:
        await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.cancel()
        if not task.done():  # stopped (or this task was cancelled): do not wait for it
            task.cancel()
            await asyncio.wait({task})
    sid = request.session_id
    if task.cancelled():  # its thread may still wait on the model: its record ends here
        await _close_running(sid, interrupted=lease.stop.interrupted)
        return
    if task.result().status == "skipped":
        await asend_to(reply_to, CompactionSkipped(sid, "in_progress", wire_text("in_progress")))


async def _close_running(session_id: str, *, interrupted: bool) -> None:
    """A compaction stopped without waiting for its thread: its ``running`` record is
    closed now (the thread writes nothing after the stop); a shutdown's is announced."""
    closed = await database_sync_to_async(records.interrupt_running)(
        session_id=session_id, cancelled=not interrupted
    )
    if closed and interrupted:
        error = wire_text("compaction_interrupted")
        await apublish(session_id, CompactionFailed(session_id, error, "compaction_interrupted"))
