"""Reads for the chat page: the newest page of a history, and the page before a message.

A long session is never rendered whole: the page shows the last ``PAGE_SIZE``
messages and a "load earlier" button asks for the page before the oldest one on
screen (keyset pagination in the history's own order, so messages appended
meanwhile never shift a page).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q

from agents.models import ChatSession, Message
from agents.selectors import HistoryView, history_queryset

PAGE_SIZE = 100


class MessageNotFound(LookupError):
    """No message with that id in this session."""


@dataclass(frozen=True, slots=True)
class HistoryPage:
    messages: list[Message]  # conversation order
    has_earlier: bool

    @property
    def first_id(self) -> int | None:
        return self.messages[0].pk if self.messages else None


def _before(anchor: Message) -> Q:
    """Messages that sort before ``anchor`` in (position, -is_compaction_summary, -id)."""
    same_position = Q(position=anchor.position)
    earlier = Q(position__lt=anchor.position) | (
        same_position & Q(is_compaction_summary=anchor.is_compaction_summary, pk__gt=anchor.pk)
    )
    if not anchor.is_compaction_summary:
        earlier |= same_position & Q(is_compaction_summary=True)
    return earlier


def history_page(
    *,
    session: ChatSession,
    view: HistoryView = "compacted",
    before_id: int | None = None,
    size: int = PAGE_SIZE,
) -> HistoryPage:
    qs = history_queryset(session=session, view=view)
    if before_id is not None:
        anchor = Message.objects.filter(session=session, pk=before_id).first()
        if anchor is None:
            raise MessageNotFound(str(before_id))
        qs = qs.filter(_before(anchor))
    newest_first = list(qs.reverse()[: size + 1])
    return HistoryPage(messages=newest_first[:size][::-1], has_earlier=len(newest_first) > size)


def summary_for_session(*, session: ChatSession, message_id: int) -> Message:
    """A compaction summary of this session (compacted or not), or MessageNotFound."""
    summary = Message.objects.filter(
        session=session, pk=message_id, is_compaction_summary=True
    ).first()
    if summary is None:
        raise MessageNotFound(str(message_id))
    return summary
