"""Who runs a session's work, and stopping it (issue 14: queued input, Stop, cancel).

A session's chat turns and socket compactions run one at a time across every process: the
process holding the session's *turn lease* in the database runs them (one conditional
``UPDATE``, like the compaction lease of DESIGN 5; renewed by a heartbeat every third of
``NETACLAW_COMPACTION_LEASE_SECONDS``, so a crashed holder frees the session within that
time). A chat message that arrives while the lease is held is stored *queued*
(``chat.turn.accept_chat``): durable at once, out of the history until the next turn
releases it after the running turn's last message. The holder releases the lease and then
looks for queued messages (taking the lease again for them); the process that stored one
tries to take the lease right after storing it — so none is stranded.

A stop reaches the work wherever it runs: the turn's holder is flagged in the database
(read between steps and by the heartbeat, every few seconds) and told at once over the
channel layer (every socket watching the session hears it; the one in the holder's process
stops the turn, ``stop_here``); a running compaction's lease is taken back, which its
worker thread checks before writing anything.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.db import DatabaseError

from agents import services
from agents.access import SessionNotFound, session_for_user
from agents.broadcast import apublish, asend_control
from agents.events import CompactionFailed, ErrorEvent
from agents.reasons import wire_text
from agents.selectors import compaction_running, queued_since, turn_lease_expiry

logger = logging.getLogger(__name__)

TURN, COMPACT = "t", "c"  # what a lease was taken for: the prefix of its holder
HEARTBEAT_SECONDS = 5.0  # at most: how late a stop that no socket carried here is seen


def lease_seconds() -> float:
    """A turn lease lasts as long as a compaction lease (the same crash-recovery time)."""
    return max(1.0, float(settings.NETACLAW["COMPACTION_LEASE_SECONDS"]))


def new_holder(kind: str) -> str:
    return f"{kind}/{socket.gethostname()[:32]}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def holder_kind(holder: str) -> str:
    return holder.partition("/")[0]


class StopSignal:
    """A stop asked for: ``event`` wakes the async side, ``cancel`` tells a compaction's
    worker thread (``compaction.service``)."""

    def __init__(self) -> None:
        self.event = asyncio.Event()
        self.cancel = threading.Event()

    def request(self) -> None:
        self.event.set()
        self.cancel.set()

    @property
    def requested(self) -> bool:
        return self.event.is_set()


# The leases this process holds, by session: a stop that arrives here reaches them at once.
_held: dict[str, TurnLease] = {}


class TurnLease:
    """A held turn lease: its heartbeat and its stop signal."""

    def __init__(self, session_id: str, holder: str, seconds: float | None = None) -> None:
        self.session_id = session_id
        self.holder = holder
        self.seconds = seconds or lease_seconds()
        self.stop = StopSignal()
        self.lost = False
        self._heartbeat_task: asyncio.Task[None] | None = None

    @property
    def kind(self) -> str:
        return holder_kind(self.holder)

    async def start(self) -> None:
        """Heartbeat, and be reachable by a stop that arrives in this process, until
        ``release``."""
        _held[self.session_id] = self
        self._heartbeat_task = asyncio.get_running_loop().create_task(self._heartbeat())

    async def release(self) -> QueueLook | None:
        """Release the lease and look for messages queued meanwhile, in one trip to the
        database (None: the release failed and nothing was looked at)."""
        if _held.get(self.session_id) is self:
            del _held[self.session_id]
        if self._heartbeat_task is not None:
            self._heartbeat_task.cancel()
            await asyncio.gather(self._heartbeat_task, return_exceptions=True)
            self._heartbeat_task = None
        try:
            return QueueLook(await _release(self.session_id, self.holder))
        except DatabaseError:  # it expires on its own (``lease_seconds``)
            logger.warning("could not release the turn lease of %s", self.session_id, exc_info=True)
            return None

    async def _heartbeat(self) -> None:
        interval = min(max(self.seconds / 3, 0.05), HEARTBEAT_SECONDS)
        while True:
            await asyncio.sleep(interval)
            try:
                state = await _renew(self.session_id, self.holder, self.seconds)
            except DatabaseError:
                logger.warning("could not renew the turn lease", exc_info=True)
                continue  # try again at the next beat; the lease may still be ours
            if state == "stop":
                self.stop.request()
            elif state == "lost":  # expired and taken: this work must not go on
                self.lost = True
                self.stop.request()
                return


def stop_here(session_id: str, holder: str) -> None:
    """A stop for ``holder`` reached a socket of this process: if the turn runs here, it
    stops now (every socket of the session hears it; the others do nothing)."""
    local = _held.get(session_id)
    if local is not None and local.holder == holder:
        local.stop.request()


@database_sync_to_async
def _acquire(session_id: str, holder: str, seconds: float) -> bool:
    return services.turn_lease_acquire(session_id=session_id, holder=holder, seconds=seconds)


@database_sync_to_async
def _renew(session_id: str, holder: str, seconds: float) -> services.TurnLeaseState:
    return services.turn_lease_renew(session_id=session_id, holder=holder, seconds=seconds)


@dataclass(frozen=True, slots=True)
class QueueLook:
    """When the oldest queued message of the session was sent, as read right after a
    release (None: nothing was queued)."""

    since: datetime | None


@database_sync_to_async
def _release(session_id: str, holder: str) -> datetime | None:
    """One statement when nothing is queued (most turns); else release, then read when the
    oldest queued message was sent."""
    if services.turn_lease_release(session_id=session_id, holder=holder, unless_queued=True):
        return None
    services.turn_lease_release(session_id=session_id, holder=holder)
    return queued_since(session_id=session_id)


async def try_acquire(session_id: str, kind: str) -> TurnLease | None:
    """The session's turn lease, not yet started; None when another holder has it."""
    holder = new_holder(kind)
    seconds = lease_seconds()
    if not await _acquire(session_id, holder, seconds):
        return None
    return TurnLease(session_id, holder, seconds)


@database_sync_to_async
def lease_expiry(session_id: str) -> datetime | None:
    """When the current holder's lease expires (None: free)."""
    held = turn_lease_expiry(session_id=session_id)
    return held[1] if held else None


@database_sync_to_async
def compaction_elsewhere(session_id: str) -> bool:
    """A compaction of the session runs (or holds the turn lease to run) somewhere."""
    held = turn_lease_expiry(session_id=session_id)
    if held is not None and holder_kind(held[0]) == COMPACT:
        return True
    return compaction_running(session_id=session_id)


earliest_queued = database_sync_to_async(queued_since)


# --- stop -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StopOutcome:
    session_id: str | None  # None: not this user's session
    refusal: ErrorEvent | None = None  # nothing_to_stop


@database_sync_to_async
def _stop_in_db(user: Any, raw_session_id: str) -> tuple[str, services.StopSignals] | None:
    try:
        session = session_for_user(user=user, session_id=raw_session_id)
    except SessionNotFound:
        return None
    return str(session.pk), services.session_stop(session_id=session.pk)


async def request_stop(user: Any, raw_session_id: str) -> StopOutcome:
    """A ``stop`` frame (CONTRACT §5): end the session's running turn and its compaction.

    A cancelled compaction is announced at once (``compaction_failed``, ``cancelled``); a
    turn announces its own end (``turn_done`` with ``stopped``)."""
    found = await _stop_in_db(user, raw_session_id)
    if found is None:
        return StopOutcome(None)
    session_id, signals = found
    if not signals.anything:
        refusal = ErrorEvent(wire_text("nothing_to_stop"), "nothing_to_stop", session_id)
        return StopOutcome(session_id, refusal)
    if signals.compaction_holder:
        cancelled = CompactionFailed(session_id, wire_text("cancelled"), "cancelled")
        await apublish(session_id, cancelled)
    if signals.turn_holder:
        local = _held.get(session_id)
        if local is not None and local.holder == signals.turn_holder:
            local.stop.request()
        else:
            await asend_control(session_id, {"action": "stop", "holder": signals.turn_holder})
    return StopOutcome(session_id)
