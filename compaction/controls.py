"""What a user changes by hand in a compacted history (issue 17 items 2 and 6).

- **Pins**: any message can be pinned; the core never summarizes a pinned message away
  (``condense``: it stays verbatim in the compacted view). Pinning an original that
  an earlier compaction already replaced brings it back into the compacted view, with the
  tool calls or results it pairs with (the "pin that brings it back" of the dropped-facts
  list); pinning a pruned tool output gives it its text back.
- **Summary edits**: the content of a summary still in effect can be rewritten; every edit
  is kept in the compaction's audit record with who made it, when, and the text before.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from agents import services
from agents.broadcast import publish
from agents.events import MessageUpdated
from agents.history_pages import message_for_session
from agents.message_format import message_to_json
from agents.meter import publish_meter
from agents.models import ChatSession, CompactionRecord, Message, Role
from agents.selectors import compaction_running
from compaction import records

SUMMARY_MAX_CHARS = 200_000


class EditRefused(Exception):
    """An edit refused with a reason of ``agents.reasons`` (not_a_summary, summary_not_active,
    in_progress: a compaction runs and would lose it)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _refuse_while_compacting(session: ChatSession) -> None:
    """A pin or an edit made while a compaction of the session runs would be lost with the
    span it summarizes (issue 27 item 6): refused, try again once it has ended. (One that
    slips in just before the write-back is caught there: ``services.compaction_apply``.)"""
    if compaction_running(session_id=session.pk):
        raise EditRefused("in_progress")


def _pair(message: Message) -> list[Message]:
    """The message and what its tool pairing needs beside it, among the originals the same
    summary replaced: an assistant's results, a result's call."""
    if message.compacted_into_id is None:
        return [message]
    group = Message.objects.filter(
        session_id=message.session_id,
        compacted_into_id=message.compacted_into_id,
        compacted_at__isnull=False,
    )
    if message.role == Role.ASSISTANT and message.tool_calls:
        ids = [str(c.get("id", "")) for c in message.tool_calls]
        return [message, *group.filter(role=Role.TOOL, tool_call_id__in=ids)]
    if message.role == Role.TOOL and message.tool_call_id:
        calls = [
            m
            for m in group.filter(role=Role.ASSISTANT).exclude(tool_calls=[])
            if any(str(c.get("id", "")) == message.tool_call_id for c in m.tool_calls)
        ]
        return [*calls, message, *_siblings(calls, message)]
    return [message]


def _siblings(calls: list[Message], message: Message) -> list[Message]:
    """The other results of the calls a result belongs to (the call keeps all of them)."""
    ids = [str(c.get("id", "")) for m in calls for c in m.tool_calls]
    if not ids:
        return []
    return list(
        Message.objects.filter(
            session_id=message.session_id,
            compacted_into_id=message.compacted_into_id,
            compacted_at__isnull=False,
            role=Role.TOOL,
            tool_call_id__in=ids,
        ).exclude(pk=message.pk)
    )


def message_pin(*, session: ChatSession, message_id: int, pinned: bool) -> list[Message]:
    """Pin or unpin one message of the session (``MessageNotFound`` when it is not one);
    returns every message that changed (a pin may bring originals back). Announced as
    ``message_updated``, then the token bar, after the commit."""
    _refuse_while_compacting(session)
    with transaction.atomic():
        message = message_for_session(session=session, message_id=message_id)
        services.message_pin_set(message=message, pinned=pinned)
        changed = [message]
        if pinned and message.compacted_at is not None and not message.is_compaction_summary:
            changed = services.messages_restore(session=session, ids=[m.pk for m in _pair(message)])
        _announce_after_commit(session, changed)
    return changed


def summary_edit(*, session: ChatSession, message_id: int, content: str, editor: Any) -> Message:
    """Rewrite a summary still in effect; the edit (who, when, the text before) goes into
    its compaction's audit record (or, for a summary older than the records, its own
    metadata)."""
    _refuse_while_compacting(session)
    with transaction.atomic():
        summary = message_for_session(session=session, message_id=message_id)
        if not summary.is_compaction_summary:
            raise EditRefused("not_a_summary")
        if summary.compacted_at is not None:
            raise EditRefused("summary_not_active")
        now = timezone.now()
        edit = records.edit_entry(editor=editor, previous=summary.content, at=now)
        record = (
            CompactionRecord.objects.select_for_update()
            .filter(Q(summary_message=summary), session=session)
            .first()
        )
        if record is None:
            summary.metadata = {
                **(summary.metadata or {}),
                "edits": [*(summary.metadata or {}).get("edits", []), edit],
            }
        services.summary_rewrite(summary=summary, content=content, edited_at=now)
        if record is not None:
            records.record_edit(record, edit)
        _announce_after_commit(session, [summary])
    return summary


def _announce_after_commit(session: ChatSession, messages: list[Message]) -> None:
    sid = str(session.pk)
    payloads = [message_to_json(m) for m in messages]

    def announce() -> None:
        publish(sid, *(MessageUpdated(sid, payload) for payload in payloads))
        publish_meter(sid)

    transaction.on_commit(announce)
