"""Reads of the chat domain (seed §7): history views and the latest summary."""

from __future__ import annotations

from typing import Literal

from django.db.models import QuerySet, Sum

from agents.compiled import CompiledRead
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


_llm_history = CompiledRead(
    Message,
    lambda key: history_queryset(session=key, view="compacted", include_events=False),
    ChatSession._meta.pk,
)


def llm_history_load(*, session: ChatSession) -> list[Message]:
    """What a model may see: the compacted view without system event records.

    Read on every chat turn, so its SQL is compiled once (``agents.compiled``)."""
    return _llm_history(session.pk)


def latest_summary(*, session: ChatSession) -> Message | None:
    """The summary an iterative compaction updates (seed §3, 迭代压缩)."""
    return (
        Message.objects.filter(
            session=session, is_compaction_summary=True, compacted_at__isnull=True
        )
        .order_by("-position", "-id")
        .first()
    )


def model_visible(*, session: ChatSession) -> QuerySet[Message]:
    """What a model may see, unordered (for sums and counts): the compacted view without
    system event records — the rows ``llm_history_load`` returns in order."""
    return Message.objects.filter(session=session, compacted_at__isnull=True).exclude(
        role=Role.SYSTEM, metadata__has_key="systemType"
    )


def context_estimate(*, session: ChatSession, after_position: int | None = None) -> int:
    """Sum of stored estimates of what the model would see (DESIGN 3): one aggregate."""
    qs = model_visible(session=session)
    if after_position is not None:
        qs = qs.filter(position__gt=after_position)
    return qs.aggregate(total=Sum("token_estimate"))["total"] or 0


def system_events(*, session: ChatSession) -> QuerySet[Message]:
    return Message.objects.filter(
        session=session, role=Role.SYSTEM, metadata__has_key="systemType"
    ).order_by("position", "id")
