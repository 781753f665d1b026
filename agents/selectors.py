"""Reads of the chat domain (seed §7): the history views."""

from __future__ import annotations

from typing import Literal

from django.db.models import QuerySet

from agents.models import ChatSession, Message, Role

HistoryView = Literal["compacted", "full"]
HISTORY_VIEWS: tuple[HistoryView, ...] = ("compacted", "full")


def history_queryset(
    *, session: ChatSession, view: HistoryView = "compacted", include_events: bool = True
) -> QuerySet[Message]:
    """Messages of one session in conversation order (DESIGN 1).

    ``compacted`` hides what a summary replaced and keeps the summaries; ``full``
    returns everything, each summary right before the span it replaced.
    """
    if view not in HISTORY_VIEWS:
        raise ValueError(f"unknown history view {view!r}; expected 'compacted' or 'full'")
    qs = Message.objects.filter(session=session)
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
    return Message.objects.filter(session=session, compacted_at__isnull=True).exclude(
        role=Role.SYSTEM, metadata__has_key="systemType"
    )
