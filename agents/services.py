"""Writes of the chat domain: sessions, message appends, compaction write-back (seed §5.5)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from agents.models import Agent, ChatSession, Message, Role
from agents.positions import next_positions
from compaction.core.tokens import estimate_tokens
from compaction.core.types import Message as CoreMessage
from compaction.core.types import ToolCall

SYSTEM_TYPE_COMPACTION = "compaction_event"


class SpanChanged(RuntimeError):
    """The messages a compaction planned to replace changed while it was summarizing."""


def session_create(*, owner: Any, agent: Agent, title: str = "") -> ChatSession:
    return ChatSession.objects.create(owner=owner, agent=agent, title=title[:200])


def tool_calls_to_json(tool_calls: Iterable[ToolCall]) -> list[dict[str, str]]:
    return [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in tool_calls]


def _estimate(role: str, content: str, tool_calls: Sequence[dict[str, str]]) -> int:
    calls = tuple(
        ToolCall(
            id=str(c.get("id", "")),
            name=str(c.get("name", "")),
            arguments=str(c.get("arguments", "")),
        )
        for c in tool_calls
    )
    return estimate_tokens(CoreMessage(role=role, content=content, tool_calls=calls))  # type: ignore[arg-type]


def message_append(
    *,
    session: ChatSession,
    role: str,
    content: str = "",
    tool_calls: Sequence[dict[str, str]] = (),
    tool_call_id: str = "",
    metadata: dict[str, Any] | None = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    record_usage: bool = False,
) -> Message:
    """Store one message at the end of the session, with its token estimate.

    ``record_usage``: the message is the answer to a model call whose ``input_tokens`` and
    ``output_tokens`` the provider reported; the session's usage counters (the meter's
    starting point, DESIGN 13) are updated in the same transaction."""
    if role not in Role.values:
        raise ValueError(f"unknown role {role!r}")
    usage = None
    if record_usage:
        if input_tokens is None or output_tokens is None:
            raise ValueError("record_usage needs input_tokens and output_tokens")
        usage = (input_tokens, output_tokens)
    message = Message(
        session=session,
        role=role,
        content=content,
        tool_calls=list(tool_calls),
        tool_call_id=tool_call_id or "",
        metadata=metadata or {},
        token_estimate=_estimate(role, content, tool_calls),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
    )
    message.position = next_positions()
    if usage is None:
        message.save(force_insert=True)
        return message
    with transaction.atomic():
        message.save(force_insert=True)
        session_record_usage(
            session=session,
            input_tokens=usage[0],
            output_tokens=usage[1],
            input_position=message.position - 1,
        )
    return message


def user_message_append(*, session: ChatSession, content: str) -> Message:
    """A user's chat message; the session moves to the top of its owner's list, and a
    session without a title takes the message's first words."""
    stored = message_append(session=session, role=Role.USER, content=content)
    changes: dict[str, Any] = {"updated_at": timezone.now()}
    if not session.title:
        session.title = changes["title"] = content.strip()[:60]
    ChatSession.objects.filter(pk=session.pk).update(**changes)
    return stored


def messages_bulk_append(*, session: ChatSession, rows: Sequence[dict[str, Any]]) -> list[Message]:
    """Append many messages in one transaction (imports); same shape as message_append."""
    with transaction.atomic():
        first = next_positions(len(rows)) if rows else 0
        objs = []
        for offset, row in enumerate(rows):
            role = row["role"]
            if role not in Role.values:
                raise ValueError(f"unknown role {role!r}")
            calls = list(row.get("tool_calls") or [])
            objs.append(
                Message(
                    session=session,
                    position=first + offset,
                    role=role,
                    content=row.get("content") or "",
                    tool_calls=calls,
                    tool_call_id=row.get("tool_call_id") or "",
                    metadata=row.get("metadata") or {},
                    token_estimate=_estimate(role, row.get("content") or "", calls),
                )
            )
        return Message.objects.bulk_create(objs, batch_size=500)


def system_event_append(
    *, session: ChatSession, system_type: str, content: str, payload: dict[str, Any]
) -> Message:
    """A record of something that happened (a compaction bubble); never sent to a model."""
    return message_append(
        session=session,
        role=Role.SYSTEM,
        content=content,
        metadata={"systemType": system_type, **payload},
    )


@dataclass(frozen=True, slots=True)
class CompactionApplied:
    summary_message: Message | None
    event_message: Message
    removed_count: int


def compaction_apply(
    *,
    session: ChatSession,
    compacted_ids: Sequence[int],
    pruned_ids: Sequence[int],
    summary_content: str | None,
    pruned_token_estimate: int,
    event_content: str,
    event_payload: dict[str, Any],
    summary_metadata: dict[str, Any] | None = None,
) -> CompactionApplied:
    """Persist one compaction atomically: summary, marks, prunes and the event record.

    Re-checks that every message to replace is still visible in this session
    (DESIGN 6); if not, raises SpanChanged and writes nothing.
    """
    compacted_ids = sorted(set(compacted_ids))
    pruned_ids = sorted(set(pruned_ids) - set(compacted_ids))
    now = timezone.now()
    with transaction.atomic():
        locked = ChatSession.objects.select_for_update().get(pk=session.pk)
        visible = Message.objects.filter(
            session=locked, compacted_at__isnull=True, pk__in=[*compacted_ids, *pruned_ids]
        )
        found = dict(visible.values_list("pk", "position"))
        if len(found) != len(compacted_ids) + len(pruned_ids):
            raise SpanChanged("the history changed while the summary was being written")

        summary: Message | None = None
        if summary_content is not None:
            if not compacted_ids:
                raise ValueError("a summary must replace at least one message")
            summary = Message.objects.create(
                session=locked,
                position=min(found[i] for i in compacted_ids),
                role=Role.USER,
                content=summary_content,
                is_compaction_summary=True,
                metadata=summary_metadata or {},
                token_estimate=_estimate(Role.USER, summary_content, ()),
            )
            Message.objects.filter(pk__in=compacted_ids).update(
                compacted_at=now, compacted_into=summary
            )
        if pruned_ids:
            Message.objects.filter(pk__in=pruned_ids, pruned_at__isnull=True).update(
                pruned_at=now, token_estimate=pruned_token_estimate
            )
        event_position = next_positions()
        event = Message.objects.create(
            session=locked,
            position=event_position,
            role=Role.SYSTEM,
            content=event_content,
            metadata={
                "systemType": SYSTEM_TYPE_COMPACTION,
                "summaryMessageId": summary.pk if summary else None,
                **event_payload,
            },
        )
        ChatSession.objects.filter(pk=locked.pk).update(
            compaction_count=F("compaction_count") + 1,
            consecutive_compaction_failures=0,
            last_input_tokens=None,
            last_input_position=None,
        )
    session.refresh_from_db()
    return CompactionApplied(
        summary_message=summary, event_message=event, removed_count=len(compacted_ids)
    )


def compaction_lease_acquire(*, session: ChatSession, holder: str, seconds: int) -> bool:
    """DESIGN 5: one conditional UPDATE — free or expired → mine."""
    now = timezone.now()
    taken = (
        ChatSession.objects.filter(pk=session.pk)
        .filter(
            Q(compaction_lease_holder="")
            | Q(compaction_lease_expires_at__isnull=True)
            | Q(compaction_lease_expires_at__lt=now)
        )
        .update(
            compaction_lease_holder=holder,
            compaction_lease_expires_at=now + timedelta(seconds=seconds),
        )
    )
    return taken == 1


def compaction_lease_renew(*, session: ChatSession, holder: str, seconds: int) -> bool:
    """Extend a lease its holder still has; False when it is someone else's (or gone)."""
    renewed = ChatSession.objects.filter(pk=session.pk, compaction_lease_holder=holder).update(
        compaction_lease_expires_at=timezone.now() + timedelta(seconds=seconds)
    )
    return renewed == 1


def compaction_lease_held(*, session: ChatSession, holder: str) -> bool:
    """Inside the write-back's transaction: the lease is still this holder's."""
    return ChatSession.objects.filter(pk=session.pk, compaction_lease_holder=holder).exists()


def compaction_lease_release(*, session: ChatSession, holder: str) -> None:
    ChatSession.objects.filter(pk=session.pk, compaction_lease_holder=holder).update(
        compaction_lease_holder="", compaction_lease_expires_at=None
    )


def session_record_usage(
    *, session: ChatSession, input_tokens: int, output_tokens: int, input_position: int
) -> None:
    """Remember the provider's figures for the meter (DESIGN 13); ``session`` gets them too."""
    ChatSession.objects.filter(pk=session.pk).update(
        last_input_tokens=input_tokens,
        last_input_position=input_position,
        total_input_tokens=F("total_input_tokens") + input_tokens,
        total_output_tokens=F("total_output_tokens") + output_tokens,
        api_calls=F("api_calls") + 1,
    )
    session.last_input_tokens = input_tokens
    session.last_input_position = input_position
    session.total_input_tokens += input_tokens
    session.total_output_tokens += output_tokens
    session.api_calls += 1
