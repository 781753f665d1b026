"""Regenerate, edit-and-resend and the version switch, as the socket and REST ask for them
(issue 26 item 1; the history's side is ``agents.branches``).

Each runs under the session's lease, taken in the same transaction as the change, so no
turn or compaction runs meanwhile (busy: ``turn_in_progress``, nothing changed). A
regenerate or an edit keeps the lease for the turn that answers, exactly as a chat message
does (``chat.turn``): its reads here, or with the worker runner its job stored in the same
transaction. A switch releases it at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from channels.db import database_sync_to_async
from django.db import transaction

from agents import branches, services
from agents.access import SessionNotFound, session_for_user
from agents.events import BranchChanged, ErrorEvent, MessageStored
from agents.models import ForkKind
from agents.reasons import wire_text
from chat.turn import DeferTurn, PreparedTurn, turn_refusal, turn_started


@dataclass(frozen=True, slots=True)
class BranchAction:
    """What was asked: ``regenerate`` (``message_id``: an answer), ``edit``
    (``message_id``: the user's message, ``content``: its new text) or ``select``
    (``fork_id``, ``version``)."""

    kind: str
    message_id: int | None = None
    content: str = ""
    fork_id: int | None = None
    version: int | None = None


@dataclass(frozen=True, slots=True)
class AcceptedBranch:
    """The change made (``events`` to publish, in order) and, when an answer follows, the
    lease's ``holder`` and the turn's reads (None with the worker runner: its job is
    stored); or the ``refusal``, with nothing changed."""

    session_id: str
    events: tuple[Any, ...] = ()
    holder: str = ""
    prepared: PreparedTurn | None = None
    refusal: ErrorEvent | None = None


def _apply(session: Any, action: BranchAction) -> branches.BranchChange:
    if action.kind == "regenerate":
        return branches.branch_regenerate(session=session, message_id=action.message_id or 0)
    if action.kind == "edit":
        return branches.branch_edit(
            session=session, message_id=action.message_id or 0, content=action.content
        )
    return branches.branch_select(
        session=session, fork_id=action.fork_id or 0, version=action.version or 0
    )


def _events(session: Any, change: branches.BranchChange) -> tuple[Any, ...]:
    session_id = str(session.pk)
    mark = change.mark
    marked = None
    if change.marked is not None:
        marked = branches.messages_json(session=session, messages=[change.marked])[0]
    changed = BranchChanged(
        session_id,
        mark.fork_id,
        mark.kind,
        mark.version,
        mark.versions,
        set_aside_from=change.set_aside[0] if change.set_aside else None,
        set_aside_through=change.set_aside[1] if change.set_aside else None,
        marked=marked,
        turn=change.runs_turn,
    )
    if change.fork.kind == ForkKind.EDIT and change.runs_turn and marked is not None:
        return (changed, MessageStored(session_id, marked))  # the edited message, new
    return (changed,)


def accept_branch_sync(
    user: Any,
    raw_session_id: str,
    action: BranchAction,
    holder: str,
    seconds: float,
    defer: DeferTurn | None = None,
    reply_to: str = "",
) -> AcceptedBranch | None:
    """The one gate, the lease, the change and (a regenerate or an edit) the turn's reads or
    job, in one transaction. None: not this user's session."""
    try:
        session = session_for_user(user=user, session_id=raw_session_id)
    except SessionNotFound:
        return None
    sid = str(session.pk)
    answers = action.kind in {"regenerate", "edit"}
    refusal = turn_refusal(session) if answers else None
    if refusal is not None:
        return AcceptedBranch(sid, refusal=refusal)
    try:
        with transaction.atomic():
            if not services.lease_acquire(session_id=session.pk, holder=holder, seconds=seconds):
                busy = ErrorEvent(wire_text("turn_in_progress"), "turn_in_progress", sid)
                return AcceptedBranch(sid, refusal=busy)
            services.turn_start(session=session, release_queued=False)  # positions after all
            change = _apply(session, action)
            if not answers:
                services.lease_release(session_id=session.pk, holder=holder)
                return AcceptedBranch(sid, _events(session, change))
            started = turn_started(session, holder, defer, reply_to)
            return AcceptedBranch(sid, _events(session, change), holder, started)
    except branches.BranchRefused as refused:  # rolled back: the lease too
        return AcceptedBranch(
            sid, refusal=ErrorEvent(wire_text(refused.reason), refused.reason, sid)
        )


accept_branch = database_sync_to_async(accept_branch_sync)  # the same from the event loop
