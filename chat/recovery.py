"""What a dead runner leaves behind, taken back (issue 24 item 3; CONTRACT §8).

When whatever held a session's lease is known to be dead — its worker's heartbeat stalled
(``runs.sweep``), or the single process of ``make run`` restarted — the session is freed
at once instead of when its lease would expire: a compaction it was running is recorded
``interrupted`` (it wrote nothing, so the history is unchanged); a turn it was running is
recorded interrupted (``chat.interruption``) and, once, run again by itself; messages
queued behind it are answered next.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agents import services
from agents.events import CompactionFailed, MessageStored, ServerEvent
from agents.leases import TURN, holder_kind, lease_seconds, new_holder
from agents.models import ChatSession, Role
from agents.reasons import wire_text
from agents.selectors import model_visible, queued_since
from chat.interruption import continues_by_itself, record_interruption
from compaction import records


@dataclass
class Recovery:
    """What the dead holder left, and what to do next."""

    session_id: str
    events: list[ServerEvent] = field(default_factory=list)
    interrupted_turn: bool = False
    continue_attempt: int | None = None  # run the interrupted turn again, as this attempt
    holder: str = ""  # the lease it runs under, handed over from the dead holder
    queued: bool = False  # messages wait queued: answer them


def recover(session_id: str, *, dead: str, attempt: int = 0, hand_over: bool = False) -> Recovery:
    """Free the session from ``dead`` (its lease holder) and record what it was doing.
    Nothing happens when ``dead`` no longer holds the lease.

    ``hand_over``: a turn to run again keeps the lease, under a new holder its job adopts
    (``Recovery.holder``): a message the user sends as soon as they hear of the interruption
    then waits queued behind it, instead of taking the free lease first and answering the
    interrupted question and its own under one answer."""
    found = Recovery(session_id)
    session = ChatSession.objects.select_related("agent").filter(pk=session_id).first()
    if session is None or session.lease_holder != dead:
        return found
    if records.interrupt_running(session_id=session_id):
        error = wire_text("compaction_interrupted")
        found.events.append(CompactionFailed(session_id, error, "compaction_interrupted"))
    if holder_kind(dead) == TURN and _turn_unfinished(session):
        found.interrupted_turn = True
        for message in record_interruption(session, attempt=attempt):
            found.events.append(MessageStored(session_id, message))
        if continues_by_itself(attempt):
            found.continue_attempt = attempt + 1
    if found.continue_attempt is not None and hand_over:
        holder = new_holder(TURN)
        if services.lease_acquire(
            session_id=session_id, holder=holder, seconds=lease_seconds(), take_over=dead
        ):
            found.holder = holder
            found.queued = queued_since(session_id=session_id) is not None
            return found
    services.lease_release(session_id=session_id, holder=dead)
    found.queued = queued_since(session_id=session_id) is not None
    return found


def _turn_unfinished(session: ChatSession) -> bool:
    """The last thing the model sees is not a finished answer (a turn was under way)."""
    last: Any = model_visible(session=session).order_by("-position", "-id").first()
    return last is not None and not (last.role == Role.ASSISTANT and not last.tool_calls)


def dead_holders_of_process(host_pid: str) -> list[tuple[str, str]]:
    """(session id, holder) of every lease held in the name of ``host:pid``."""
    rows = ChatSession.objects.exclude(lease_holder="").values_list("pk", "lease_holder")
    return [(str(pk), holder) for pk, holder in rows if f"{host_pid}:" in holder]


def recover_after_restart() -> list[Recovery]:
    """``make run`` starting again: its one process is the only one there is, so every
    lease still held is a dead one — taken back, and what it ran recorded."""
    found = []
    held = ChatSession.objects.exclude(lease_holder="").values_list("pk", "lease_holder")
    for session_id, holder in list(held):
        found.append(recover(str(session_id), dead=holder))
    return found
