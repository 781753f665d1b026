"""Reads of the chat domain (seed §7): the history views."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from django.db.models import Count, F, Max, Min, Q, QuerySet
from django.utils import timezone

from agents.models import SYSTEM_TYPE_TURN, ChatSession, Message, Role

HistoryView = Literal["compacted", "full"]
HISTORY_VIEWS: tuple[HistoryView, ...] = ("compacted", "full")


def history_queryset(
    *, session: ChatSession, view: HistoryView = "compacted", include_events: bool = True
) -> QuerySet[Message]:
    """Messages of one session in conversation order (DESIGN 1).

    ``compacted`` hides what a summary replaced and keeps the summaries; ``full``
    returns everything, each summary right before the span it replaced. Neither has a
    queued message (``queued_messages``) until a turn releases it.
    """
    if view not in HISTORY_VIEWS:
        raise ValueError(f"unknown history view {view!r}; expected 'compacted' or 'full'")
    qs = Message.objects.on_branch().filter(session=session, queued_at__isnull=True)
    if view == "compacted":
        qs = qs.filter(compacted_at__isnull=True)
    if not include_events:
        qs = qs.exclude(role=Role.SYSTEM, metadata__has_key="systemType")
    return qs.order_by("position", "-is_compaction_summary", "-id")


def history_load(
    *, session: ChatSession, view: HistoryView = "compacted", include_events: bool = True
) -> list[Message]:
    return list(history_queryset(session=session, view=view, include_events=include_events))


def llm_history_load(*, session: ChatSession) -> list[Message]:
    """What a model may see: the compacted view without system event records."""
    return history_load(session=session, include_events=False)


def model_visible(*, session: ChatSession) -> QuerySet[Message]:
    """What a model may see, unordered (for sums and counts): the compacted view without
    system event records — the rows ``llm_history_load`` returns in order."""
    return (
        Message.objects.on_branch()
        .filter(session=session, compacted_at__isnull=True, queued_at__isnull=True)
        .exclude(role=Role.SYSTEM, metadata__has_key="systemType")
    )


def queued_messages(*, session: ChatSession) -> list[Message]:
    """The user's messages waiting for the running turn to end, oldest first."""
    return list(
        Message.objects.filter(session=session, queued_at__isnull=False).order_by("position", "id")
    )


def queued_since(*, session_id: Any) -> datetime | None:
    """When the oldest message still queued in the session was sent (None: none is)."""
    return Message.objects.filter(session_id=session_id, queued_at__isnull=False).aggregate(
        since=Min("queued_at")
    )["since"]


def last_user_message_at(*, session: ChatSession) -> datetime | None:
    """When the user's message the running turn answers was sent: the newest message of the
    history, if it is the user's (None after a retry or once anything was answered)."""
    row = (
        Message.objects.on_branch()
        .filter(session=session, queued_at__isnull=True)
        .order_by("-position", "-id")
        .values_list("role", "created_at")
        .first()
    )
    return row[1] if row is not None and row[0] == Role.USER else None


@dataclass(frozen=True, slots=True)
class SessionTail:
    """Where the session's messages end (queued ones included) and how many are queued."""

    last_position: int | None
    queued: int


def session_tail(*, session: ChatSession) -> SessionTail:
    """Both in one statement: a turn starting reads them together, and most often finds
    nothing queued (then nothing more is read)."""
    found = Message.objects.filter(session=session).aggregate(
        last=Max("position"), queued=Count("pk", filter=Q(queued_at__isnull=False))
    )
    return SessionTail(found["last"], found["queued"])


def retryable_turn_event(*, session: ChatSession) -> Message | None:
    """The record of the session's last failed or stopped turn, when nothing the model sees
    was stored after it (then a retry runs that turn again)."""
    event = (
        Message.objects.on_branch()
        .filter(
            session=session,
            role=Role.SYSTEM,
            compacted_at__isnull=True,
            metadata__systemType=SYSTEM_TYPE_TURN,
        )
        .order_by("-position", "-id")
        .first()
    )
    if event is None or event.metadata.get("status") not in {"failed", "stopped", "interrupted"}:
        return None
    if model_visible(session=session).filter(position__gt=event.position).exists():
        return None
    return event


def lease_expiry(*, session_id: Any) -> tuple[str, datetime] | None:
    """The holder of the session's lease and when it expires; None when it is free."""
    row = (
        ChatSession.objects.filter(pk=session_id)
        .values_list("lease_holder", "lease_expires_at")
        .first()
    )
    if row is None or not row[0] or row[1] is None or row[1] <= timezone.now():
        return None
    return row[0], row[1]


def compaction_running(*, session_id: Any) -> bool:
    """A compaction of the session runs now, under the session's lease."""
    return (
        ChatSession.objects.filter(pk=session_id, lease_expires_at__gt=timezone.now())
        .exclude(compacting_holder="")
        .filter(compacting_holder=F("lease_holder"))
        .exists()
    )


def streamed_until(*, session_id: Any, turn_id: str) -> int:
    """The last ``seq`` of turn ``turn_id`` that a stored answer holds (0: none yet): what a
    page rendered from the database has already shown of that turn."""
    seqs = (
        Message.objects.on_branch()
        .filter(session_id=session_id, role=Role.ASSISTANT, metadata__turnId=turn_id)
        .values_list("metadata__seq", flat=True)
    )
    return max((int(s) for s in seqs if s is not None), default=0)
