"""Pages of a history: the newest page, and the page before a message.

A long session is never read whole: the chat page shows the last ``PAGE_SIZE`` messages
and a "load earlier" button asks for the page before the oldest one on screen; the REST
messages endpoint pages the same way (``?limit=N&before=<message id>``, CONTRACT §4).
Keyset pagination in the history's own order, so messages appended meanwhile never shift
a page.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q, TextField
from django.db.models.functions import Cast, Coalesce, Length

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
    max_chars: int | None = None,
) -> HistoryPage:
    """The ``size`` messages right before ``before_id`` (the newest ones without it).

    ``max_chars``: fewer, the newest of them, when their text (content and tool calls)
    would pass that many characters — at least one; their sizes are read first, without
    their text, so a page of huge tool outputs is never loaded to be cut."""
    qs = history_queryset(session=session, view=view)
    if before_id is not None:
        anchor = Message.objects.filter(session=session, pk=before_id).first()
        if anchor is None:
            raise MessageNotFound(str(before_id))
        qs = qs.filter(_before(anchor))
    if max_chars is None:
        newest_first = list(qs.reverse()[: size + 1])
        return HistoryPage(newest_first[:size][::-1], has_earlier=len(newest_first) > size)
    chars = Length("content") + Coalesce(Length(Cast("tool_calls", TextField())), 0)
    sized = list(
        qs.reverse().annotate(page_chars=chars).values_list("pk", "page_chars")[: size + 1]
    )
    keep, total = 0, 0
    for _pk, length in sized[:size]:
        total += length or 0
        if keep and total > max_chars:
            break
        keep += 1
    kept = [pk for pk, _ in sized[:keep]]
    messages = list(history_queryset(session=session, view=view).filter(pk__in=kept))
    return HistoryPage(messages, has_earlier=len(sized) > keep)


def message_for_session(*, session: ChatSession, message_id: int) -> Message:
    """One message of this session's active branch (in any view), or MessageNotFound."""
    message = Message.objects.on_branch().filter(session=session, pk=message_id).first()
    if message is None:
        raise MessageNotFound(str(message_id))
    return message


def summary_for_session(*, session: ChatSession, message_id: int) -> Message:
    """A compaction summary of this session (compacted or not), or MessageNotFound."""
    summary = Message.objects.filter(
        session=session, pk=message_id, is_compaction_summary=True
    ).first()
    if summary is None:
        raise MessageNotFound(str(message_id))
    return summary


JUMP_MAX = 1000  # messages a page may hold to reach a search result deep in a chat


def page_size_through(
    *, session: ChatSession, view: HistoryView, message_id: int, context: int = 5
) -> int:
    """How many of the newest messages a page needs to show ``message_id`` (and
    ``context`` before it): at least a normal page; a normal page when the message is not
    in the view, or deeper than ``JUMP_MAX`` (the page then starts at the newest)."""
    anchor = Message.objects.filter(session=session, pk=message_id).first()
    if anchor is None:
        return PAGE_SIZE
    qs = history_queryset(session=session, view=view)
    if not qs.filter(pk=anchor.pk).exists():
        return PAGE_SIZE
    through = qs.exclude(_before(anchor)).count() + context
    return PAGE_SIZE if through > JUMP_MAX else max(PAGE_SIZE, through)
