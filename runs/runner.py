"""Handing a session's work to its runner (issue 24): the one interface the socket layer,
REST and the admin use, whichever runner runs the jobs.

``NETACLAW_RUNNER`` chooses: ``worker`` (PostgreSQL + Redis: durable jobs in worker
processes, ``runs.worker``) or ``inprocess`` (``make run``: tasks of the web process,
``runs.inprocess``); the default is ``worker`` exactly when PostgreSQL and Redis are
configured. Both take the same calls; the jobs themselves are ``runs.jobs``.

The web process stores a chat message and, when no work runs in the session, takes the
session's lease for it in the same trip (``chat.turn.accept_chat``): with the worker
runner the job is stored in that transaction too, so a message is never stored without the
job that answers it.
"""

from __future__ import annotations

import asyncio
import functools
import uuid
from collections.abc import Callable, Coroutine
from typing import Any

from django.conf import settings

from agents.broadcast import apublish, asend_to, publish
from agents.events import CompactionSkipped, ErrorEvent, MessageStored
from agents.leases import COMPACT, TURN, SessionLease, new_holder
from agents.models import ChatSession, CompactionPreview, CompactionRecord, CompactionStatus
from agents.reasons import wire_text
from chat import control
from chat.branching import AcceptedBranch
from chat.turn import AcceptedChat
from runs import jobs, worker
from runs.inprocess import InProcessRunner


def runner_name() -> str:
    return str(settings.NETACLAW["RUNNER"])


@functools.cache
def in_process() -> InProcessRunner:
    return InProcessRunner()


def uses_workers() -> bool:
    return runner_name() == "worker"


# --- chat -----------------------------------------------------------------------------


def turn_deferrer() -> Callable[[str, str, str], None] | None:
    """What ``accept_chat`` calls inside its transaction when it took the lease: the
    worker runner stores the job there; the in-process runner starts it after (None)."""
    return worker.defer_turn if uses_workers() else None


async def submit_chat(accepted: AcceptedChat, reply_to: str) -> None:
    """A stored chat message on its way: announced now when it waits queued or its job runs
    elsewhere, with the turn's first events when this process runs it."""
    sid = accepted.session_id
    stored = tuple(MessageStored(sid, message) for message in accepted.messages)
    if not accepted.holder:  # queued behind the holder; answered by it, or once it is gone
        await apublish(sid, *stored)
        await _watch_queue(sid)
        return
    if uses_workers():
        await apublish(sid, *stored)
        return
    in_process().spawn(
        jobs.run_turn(
            sid, accepted.holder, prepared=accepted.prepared, opening=stored, reply_to=reply_to
        ),
        name=f"turn {sid}",
    )


_watching_here: set[str] = set()  # sessions whose queue a job of this process watches


async def _watch_queue(session_id: str) -> None:
    """A queued message is answered by the lease's holder when it is done; should that
    holder die instead, a job waiting for its lease to expire answers it (one per session)."""
    if uses_workers():
        await worker.defer_queued_async(session_id)
    elif session_id not in _watching_here:
        _watching_here.add(session_id)
        in_process().spawn(_watching(session_id), name=f"queue {session_id}")


async def _watching(session_id: str) -> None:
    try:
        await jobs.run_queued(session_id)
    finally:
        _watching_here.discard(session_id)


async def submit_retry(session_id: str, reply_to: str) -> None:
    """Run the last failed, stopped or interrupted turn again; refused while work runs."""
    lease = await SessionLease.aacquire(session_id, TURN)
    if lease is None:
        busy = ErrorEvent(wire_text("turn_in_progress"), "turn_in_progress", session_id)
        await asend_to(reply_to, busy)
        return
    if uses_workers():
        await worker.defer_retry_async(session_id, lease.holder, reply_to=reply_to)
    else:
        in_process().spawn(
            jobs.run_retry(session_id, lease.holder, reply_to=reply_to), name=f"retry {session_id}"
        )


def branch_turn(accepted: AcceptedBranch, reply_to: str) -> Coroutine[Any, Any, Any] | None:
    """The turn a regenerate or an edit starts, when this process runs it (None: nothing
    runs, or a worker runs it from its stored job)."""
    if accepted.refusal is not None or not accepted.holder or uses_workers():
        return None
    return jobs.run_turn(
        accepted.session_id,
        accepted.holder,
        prepared=accepted.prepared,
        opening=accepted.events,
        reply_to=reply_to,
    )


async def submit_branch(accepted: AcceptedBranch, reply_to: str) -> None:
    """A regenerate, an edit or a version switch made (or refused): announced, and the
    answer that follows a regenerate or an edit run as a turn is (its first events)."""
    if accepted.refusal is not None:
        await asend_to(reply_to, accepted.refusal)
        return
    work = branch_turn(accepted, reply_to)
    if work is None:
        await apublish(accepted.session_id, *accepted.events)
    else:
        in_process().spawn(work, name=f"turn {accepted.session_id}")


def submit_branch_sync(accepted: AcceptedBranch) -> None:
    """``submit_branch`` for a sync caller (REST) whose answer does not wait for the turn."""
    work = branch_turn(accepted, "")
    if work is None:
        publish(accepted.session_id, *accepted.events)
    else:
        in_process().spawn(work, name=f"turn {accepted.session_id}")


# --- compaction -------------------------------------------------------------------------

_waiting_here: set[str] = set()  # sessions with a compaction waiting in this process


async def submit_compact(session_id: str, spec: jobs.CompactSpec, reply_to: str) -> bool:
    """A manual compaction: now when the session is free, after the running turn
    otherwise. False (and ``compaction_skipped`` / ``in_progress`` to ``reply_to``) when a
    compaction of the session runs or waits already."""
    lease = await SessionLease.aacquire(session_id, COMPACT)
    if lease is None and await control.compaction_elsewhere(session_id):
        return await _skipped(session_id, reply_to)
    holder = lease.holder if lease is not None else ""
    if uses_workers():
        if not await worker.defer_compaction_async(session_id, spec, holder, reply_to):
            return await _skipped(session_id, reply_to)
        return True
    if not holder and session_id in _waiting_here:
        return await _skipped(session_id, reply_to)
    in_process().spawn(_waiting(session_id, spec, holder, reply_to), name=f"compact {session_id}")
    return True


async def _waiting(session_id: str, spec: jobs.CompactSpec, holder: str, reply_to: str) -> None:
    if not holder:
        _waiting_here.add(session_id)
    try:
        await jobs.run_compaction(session_id, spec, holder, reply_to=reply_to)
    finally:
        _waiting_here.discard(session_id)


async def _skipped(session_id: str, reply_to: str) -> bool:
    await asend_to(reply_to, CompactionSkipped(session_id, "in_progress", wire_text("in_progress")))
    return False


# How long a REST call waits for its compaction's outcome (several auxiliary timeouts).
COMPACT_WAIT_SECONDS = 900.0
POLL_SECONDS = 0.1


async def compact_and_wait(session_id: str, spec: jobs.CompactSpec) -> dict[str, Any] | None:
    """A REST compaction: run as a job like every other, waited for here. Returns its
    outcome as stored — a record's fields, or a preview's — or None when it did not end in
    time (it goes on; its record tells)."""
    request_id = uuid.uuid4().hex
    spec = jobs.CompactSpec(**{**spec.to_json(), "request_id": request_id})
    if not await submit_compact(session_id, spec, reply_to=""):
        return {"status": "skipped", "reason": "in_progress"}
    deadline = asyncio.get_running_loop().time() + COMPACT_WAIT_SECONDS
    while asyncio.get_running_loop().time() < deadline:
        found = await _stored_outcome(request_id)
        if found is not None:
            return found
        await asyncio.sleep(POLL_SECONDS)
    return None


async def _stored_outcome(request_id: str) -> dict[str, Any] | None:
    preview = await CompactionPreview.objects.filter(request_id=request_id).afirst()
    if preview is not None:
        return {"status": "previewed", "preview": preview}
    record = (
        await CompactionRecord.objects.filter(request_id=request_id)
        .exclude(status=CompactionStatus.RUNNING)
        .afirst()
    )
    if record is None:
        return None
    return {"status": record.status, "record": record}


# --- stop, preparation ------------------------------------------------------------------


async def request_stop(user: Any, raw_session_id: str) -> control.StopOutcome:
    """A ``stop`` frame: the session's holder flagged (and told at once where it runs);
    with workers, its job aborted as well."""
    stopped = await control.request_stop(user, raw_session_id)
    if stopped.session_id and stopped.refusal is None and uses_workers():
        await worker.abort_session_jobs(stopped.session_id)
    return stopped


def start_preparation(session_id: str) -> None:
    """``compaction.background``'s starter (any thread): the preparation as a job."""
    if uses_workers():
        owner = ChatSession.objects.values_list("owner_id", flat=True).get(pk=session_id)
        worker.defer_preparation(session_id, owner)
    else:
        in_process().spawn(jobs.run_preparation(session_id), name=f"prepare {session_id}")


def holder_for_turn() -> str:
    return new_holder(TURN)
