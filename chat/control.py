"""Who runs a session's work, and stopping it (issue 14: queued input, Stop, cancel).

A session's chat turns and compactions run one at a time across every process: the holder
of the session's lease (``agents.leases``) runs them. A chat message that arrives while the
lease is held is stored *queued* (``chat.turn.accept_chat``): durable at once, out of the
history until the next turn releases it after the running turn's last message. The holder
releases the lease and then looks for queued messages (taking the lease again for them);
the process that stored one tries to take the lease right after storing it — so none is
stranded.

A stop reaches the work wherever it runs: its holder is flagged in the database (read by
its heartbeat and between steps) and told at once over the channel layer (every socket
watching the session hears it; the process holding the lease stops it, ``stop_here``); a
compaction it runs is cancelled and announced at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from channels.db import database_sync_to_async

from agents import services
from agents.access import SessionNotFound, session_for_user
from agents.broadcast import apublish, asend_control
from agents.events import CompactionFailed, ErrorEvent
from agents.leases import SessionLease, stop_here
from agents.reasons import wire_text
from agents.selectors import compaction_running, lease_expiry, queued_since


@dataclass(frozen=True, slots=True)
class QueueLook:
    """When the oldest queued message of the session was sent, as read right after a
    release (None: nothing was queued)."""

    since: datetime | None


async def release_and_look(lease: SessionLease) -> QueueLook | None:
    """Release the lease and look for messages queued meanwhile, in one trip to the
    database when nothing is queued (most turns); None: the release failed."""
    if await lease.arelease(unless_queued=True):
        return QueueLook(None)
    return QueueLook(await _release_queued(lease.session_id, lease.holder))


@database_sync_to_async
def _release_queued(session_id: str, holder: str) -> datetime | None:
    services.lease_release(session_id=session_id, holder=holder)
    return queued_since(session_id=session_id)


@database_sync_to_async
def lease_expires_at(session_id: str) -> datetime | None:
    """When the current holder's lease expires (None: free)."""
    held = lease_expiry(session_id=session_id)
    return held[1] if held else None


@database_sync_to_async
def compaction_elsewhere(session_id: str) -> bool:
    """A compaction of the session runs now, somewhere (one whose lease is still held a
    moment after it ended does not count: the next one waits for the lease)."""
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
    """A ``stop`` frame (CONTRACT §5): end the session's running turn or compaction.

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
    if not stop_here(session_id, signals.holder):
        await asend_control(session_id, {"action": "stop", "holder": signals.holder})
    return StopOutcome(session_id)
