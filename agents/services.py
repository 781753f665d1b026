"""Writes of the chat domain: sessions, message appends, compaction write-back (seed §5.5)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

from django.db import transaction
from django.db.models import Exists, F, OuterRef, Q
from django.db.models.functions import Greatest
from django.utils import timezone

from agents.attachments import Attachment, attachment_note
from agents.broadcast import publish_to_owner
from agents.event_records import EventRecord
from agents.events import SessionDeleted, SessionUpdated
from agents.id_batches import id_batches
from agents.models import (
    SYSTEM_TYPE_COMPACTION,
    Agent,
    ChatSession,
    Message,
    Role,
)
from agents.positions import advance_past, next_positions
from agents.selectors import queued_messages, session_tail
from agents.storable import storable_call_id, storable_json, storable_text, storable_tool_call
from agents.tools import remove_tree, session_workspace_root
from condense.tokens import estimate_tokens
from condense.types import Message as CoreMessage
from condense.types import core_role, tool_calls_from_json

log = logging.getLogger(__name__)


class SpanChanged(RuntimeError):
    """The messages a compaction planned to replace changed while it was summarizing."""


TITLE_MAX_CHARS = 200  # the column's length
TITLE_FROM_MESSAGE_CHARS = 60  # a chat without a title takes its first message's first words


def title_from_message(content: str) -> str:
    return storable_text(content).strip()[:TITLE_FROM_MESSAGE_CHARS]


def session_create(*, owner: Any, agent: Agent, title: str = "") -> ChatSession:
    return ChatSession.objects.create(
        owner=owner, agent=agent, title=storable_text(title)[:TITLE_MAX_CHARS]
    )


def session_start(
    *,
    owner: Any,
    agent: Agent,
    content: str,
    holder: str,
    lease_seconds: float,
    session_id: uuid.UUID | None = None,
) -> tuple[ChatSession, Message]:
    """A new chat and its first message, stored together (a chat is never stored empty):
    titled by the message, its turn lease already ``holder``'s, so its first turn runs.
    ``session_id``: the id chosen beforehand (a socket joins its events' group first)."""
    with transaction.atomic():
        session = ChatSession.objects.create(
            id=session_id or uuid.uuid4(),
            owner=owner,
            agent=agent,
            title=title_from_message(content),
            lease_holder=holder,
            lease_expires_at=timezone.now() + timedelta(seconds=lease_seconds),
        )
        stored = user_message_append(session=session, content=content, touched=True)
    return session, stored


def session_rename(*, session: ChatSession, title: str) -> ChatSession:
    """Give the chat a new title; every open page of its owner hears of it (after the
    commit). A blank title is refused by the callers' validation, not here: the list
    shows "New chat" for a chat without one."""
    session.title = storable_text(title).strip()[:TITLE_MAX_CHARS]
    ChatSession.objects.filter(pk=session.pk).update(title=session.title)
    event = SessionUpdated(str(session.pk), session.title)
    owner_id = session.owner_id
    transaction.on_commit(lambda: publish_to_owner(owner_id, event))
    return session


def session_delete(*, session: ChatSession) -> None:
    """Delete a session, its messages and its tool workspace (``workspace_remove_on_delete``
    removes the folder once the deletion is committed); every open page of its owner hears
    of it. The messages go first, in batches: Django's deletion collector names every
    collected message in one statement, and on PostgreSQL a chat of more than 65,535
    messages could not be deleted. Summaries go last, oldest first, so no row still points
    at one (``compacted_into``) when it goes: nulling those pointers first rewrote every
    compacted row just before deleting it (40 s for a compacted chat of 100,000)."""
    owner_id, deleted = session.owner_id, SessionDeleted(str(session.pk))
    with transaction.atomic():
        rows = Message.objects.filter(session=session).order_by("is_compaction_summary", "pk")
        ids = list(rows.values_list("pk", flat=True))
        for batch in id_batches(ids):
            Message.objects.filter(pk__in=batch).only("pk").delete()
        session.delete()
    transaction.on_commit(lambda: publish_to_owner(owner_id, deleted))


def workspace_remove_on_delete(sender: Any, instance: ChatSession, **kwargs: Any) -> None:
    """``post_delete`` of a session, whatever deleted it (this service, a user's deletion
    cascading to their chats, the admin's bulk delete): its workspace folder goes once the
    deletion is committed, so a rolled-back delete keeps its files."""
    root = session_workspace_root(instance.pk)

    def remove_workspace() -> None:
        # Never fails the deletion, which is committed by now: a folder that cannot go
        # (permissions changed by hand) is logged and left for the operator.
        try:
            remove_tree(root)
        except Exception:
            log.warning("could not remove the workspace of deleted session %s", root.name)

    transaction.on_commit(remove_workspace, using=kwargs.get("using"))


def message_estimate(role: str, content: str, tool_calls: Iterable[Mapping[str, Any]]) -> int:
    """The seed's token estimate a message row stores (``token_estimate``): the one formula
    for an insert and for a row whose content changed (a pin, an edit, an undo)."""
    calls = tool_calls_from_json(tool_calls)
    return estimate_tokens(CoreMessage(role=core_role(role), content=content, tool_calls=calls))


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
    queued: bool = False,
    also_counted: str = "",
) -> Message:
    """Store one message at the end of the session, with its token estimate.

    Whatever the text, it is stored (``agents.storable``): NUL as U+FFFD, a lone surrogate
    as its escape, a tool-call id over the column's 200 characters shortened the same way in
    the assistant's call and in its result.

    ``queued``: a user's message sent while a turn runs; it stays out of every history
    view until ``turn_start`` releases it.

    ``also_counted``: text the model reads with the message but the row does not hold
    (attached files' note), counted in its estimate.

    ``record_usage``: the message is the answer to a model call whose ``input_tokens`` and
    ``output_tokens`` the provider reported; the session's usage counters (the meter's
    starting point, DESIGN 13) are updated right after it."""
    if role not in Role.values:
        raise ValueError(f"unknown role {role!r}")
    usage = None
    if record_usage:
        if input_tokens is None or output_tokens is None:
            raise ValueError("record_usage needs input_tokens and output_tokens")
        usage = (input_tokens, output_tokens)
    content = storable_text(content)
    tool_calls = [storable_tool_call(c) for c in tool_calls]
    message = Message(
        session=session,
        role=role,
        content=content,
        tool_calls=tool_calls,
        tool_call_id=storable_call_id(tool_call_id or ""),
        metadata=storable_json(metadata or {}),
        token_estimate=message_estimate(role, content + also_counted, tool_calls),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        queued_at=timezone.now() if queued else None,
    )
    message.position = next_positions()
    message.save(force_insert=True)
    if usage is not None:
        # no transaction: were the process to die between the two, the meter would read
        # an estimate until the next reported call — not worth two more round trips a turn
        session_record_usage(
            session=session,
            input_tokens=usage[0],
            output_tokens=usage[1],
            input_position=message.position - 1,
        )
    return message


def session_touch(*, session: ChatSession, content: str) -> dict[str, Any]:
    """What a user's message changes on its session, to be written by the caller (then
    ``session_touched``): it moves to the top of its owner's list, and a session without a
    title takes the message's first words."""
    changes: dict[str, Any] = {"updated_at": timezone.now()}
    if not session.title:
        changes["title"] = title_from_message(content)
    return changes


def session_touched(*, session: ChatSession, changes: dict[str, Any]) -> SessionUpdated | None:
    """``session_touch``'s changes were written: the instance says so too. A new title is
    returned as the event that tells every open page of the owner (the chat list updates
    without a reload): the socket layer publishes it, so a chat turn's database thread
    never waits for the event loop."""
    for name, value in changes.items():
        setattr(session, name, value)
    if changes.get("title"):
        return SessionUpdated(str(session.pk), session.title)
    return None


def session_touch_save(*, session: ChatSession, content: str) -> SessionUpdated | None:
    """``session_touch`` written on its own (no turn lease taken with it)."""
    changes = session_touch(session=session, content=content)
    ChatSession.objects.filter(pk=session.pk).update(**changes)
    return session_touched(session=session, changes=changes)


def user_message_append(
    *,
    session: ChatSession,
    content: str,
    queued: bool = False,
    touched: bool = False,
    attachments: Sequence[Attachment] = (),
) -> Message:
    """A user's chat message, and ``session_touch`` unless the caller writes it (``touched``:
    with the turn lease in one statement, or ``session_touch_save``; then the caller
    announces a new title). ``queued``: sent while a turn runs (see ``message_append``);
    ``attachments``: the files it carries (``agents.attachments``)."""
    stored = message_append(
        session=session,
        role=Role.USER,
        content=content,
        queued=queued,
        metadata={"attachments": [a.to_json() for a in attachments]} if attachments else None,
        also_counted=attachment_note(attachments),
    )
    if not touched:
        renamed = session_touch_save(session=session, content=content)
        if renamed is not None:
            owner_id = session.owner_id
            transaction.on_commit(lambda: publish_to_owner(owner_id, renamed))
    return stored


def messages_bulk_append(*, session: ChatSession, rows: Sequence[dict[str, Any]]) -> list[Message]:
    """Append many messages in one transaction (imports); same shape and the same storable
    text as message_append."""
    with transaction.atomic():
        first = next_positions(len(rows)) if rows else 0
        objs = []
        for offset, row in enumerate(rows):
            role = row["role"]
            if role not in Role.values:
                raise ValueError(f"unknown role {role!r}")
            calls = [storable_tool_call(c) for c in row.get("tool_calls") or []]
            content = storable_text(row.get("content") or "")
            objs.append(
                Message(
                    session=session,
                    position=first + offset,
                    role=role,
                    content=content,
                    tool_calls=calls,
                    tool_call_id=storable_call_id(row.get("tool_call_id") or ""),
                    metadata=storable_json(row.get("metadata") or {}),
                    token_estimate=message_estimate(role, content, calls),
                )
            )
        return Message.objects.bulk_create(objs, batch_size=500)


def event_record_append(*, session: ChatSession, content: str, record: EventRecord) -> Message:
    """A record of something that happened (``agents.event_records``); never sent to a
    model."""
    return message_append(
        session=session, role=Role.SYSTEM, content=content, metadata=record.to_metadata()
    )


def compaction_failure_note(
    *,
    session: ChatSession,
    content: str,
    record: EventRecord,
    pause: Callable[[int, str], str] | None,
) -> Message:
    """A failed compaction's bubble, and the session's count of failures in a row: ``pause``
    (failures in a row, the current pause reason) → the pause reason to keep
    (``compaction.trigger.pause_after_failure``); None: this failure does not count (a
    manual compaction's). One transaction."""
    with transaction.atomic():
        bubble = event_record_append(session=session, content=content, record=record)
        if pause is None:
            return bubble
        ChatSession.objects.filter(pk=session.pk).update(
            consecutive_compaction_failures=F("consecutive_compaction_failures") + 1
        )
        row = ChatSession.objects.values(
            "consecutive_compaction_failures", "auto_compaction_paused_reason"
        ).get(pk=session.pk)
        reason = pause(row["consecutive_compaction_failures"], row["auto_compaction_paused_reason"])
        ChatSession.objects.filter(pk=session.pk).update(auto_compaction_paused_reason=reason)
    session.auto_compaction_paused_reason = reason
    return bubble


def session_pause_set(*, session: ChatSession, reason: str) -> None:
    """Pause (a reason) or resume ('') automatic compaction of the session."""
    if reason != session.auto_compaction_paused_reason:
        ChatSession.objects.filter(pk=session.pk).update(auto_compaction_paused_reason=reason)
        session.auto_compaction_paused_reason = reason


def session_todos_save(*, session: ChatSession, todos: list[dict[str, Any]]) -> None:
    ChatSession.objects.filter(pk=session.pk).update(todos=todos)
    session.todos = todos


def session_suggestion_mark(*, session: ChatSession) -> bool:
    """Mode ``ask``: remember that compaction was suggested (once until a compaction);
    False when it was already."""
    now = timezone.now()
    marked = ChatSession.objects.filter(pk=session.pk, compaction_suggested_at__isnull=True)
    if not marked.update(compaction_suggested_at=now):
        return False
    session.compaction_suggested_at = now
    return True


def event_record_mark(
    *, message: Message, compaction_id: int | None = None, undone: bool | None = None
) -> None:
    """Name a bubble's compaction record, or mark it undone."""
    changes: dict[str, Any] = {}
    if compaction_id is not None:
        changes["compactionId"] = compaction_id
    if undone is not None:
        changes["undone"] = undone
    message.metadata = {**(message.metadata or {}), **changes}
    message.save(update_fields=["metadata"])


def stored_estimate(message: Message) -> int:
    """A stored message's token estimate, as it is computed on insert."""
    return message_estimate(message.role, message.content, message.tool_calls or ())


def message_pin_set(*, message: Message, pinned: bool) -> None:
    """Pin or unpin a message; pinning a pruned tool output gives it its text back."""
    message.pinned = pinned
    fields = ["pinned"]
    if pinned and message.pruned_at is not None:
        message.pruned_at = None
        message.token_estimate = stored_estimate(message)
        fields += ["pruned_at", "token_estimate"]
    message.save(update_fields=fields)


def messages_restore(*, session: ChatSession, ids: Sequence[int]) -> list[Message]:
    """Bring originals a summary replaced back into the compacted view (in order)."""
    restored: list[Message] = []
    for batch in id_batches(list(ids)):
        rows = Message.objects.filter(session=session, pk__in=batch)
        rows.update(compacted_at=None)
        restored.extend(rows)
    return sorted(restored, key=lambda m: (m.position, m.pk))


def summary_rewrite(*, summary: Message, content: str, edited_at: Any) -> None:
    """A summary's new text (an edit by hand), marked edited."""
    summary.content = storable_text(content)
    summary.token_estimate = stored_estimate(summary)
    summary.metadata = {
        **(summary.metadata or {}),
        "edited": True,
        "editedAt": edited_at.isoformat(),
    }
    summary.save(update_fields=["content", "token_estimate", "metadata"])


def summary_chain_depth_cap(*, session: ChatSession, depth: int) -> int:
    """The visible summaries count as at most ``depth`` rewrites deep from now on (issue
    25: a compaction that could not improve the summary leaves it as freshly grounded, so
    later ones do not re-read every original each time). Returns how many changed."""
    changed = 0
    summaries = Message.objects.filter(
        session=session, is_compaction_summary=True, compacted_at__isnull=True
    )
    for summary in summaries.only("pk", "metadata"):
        metadata = summary.metadata or {}
        if int(metadata.get("chainDepth", 1)) > depth:
            summary.metadata = {**metadata, "chainDepth": depth}
            summary.save(update_fields=["metadata"])
            changed += 1
    return changed


def compaction_revert(
    *,
    session: ChatSession,
    summary: Message | None,
    pruned_ids: Sequence[int],
    bubble: Message | None,
    paused_reason: str,
) -> set[int]:
    """Undo one compaction's write-back (call inside a transaction holding the session
    row): its originals visible again, its pruned outputs whole again, its summary and
    bubble marked undone, the session's counters as before it. Returns the ids restored."""
    now = timezone.now()
    restored: set[int] = set()
    if summary is not None:
        originals = Message.objects.filter(session=session, compacted_into=summary)
        restored.update(originals.filter(compacted_at__isnull=False).values_list("pk", flat=True))
        originals.update(compacted_at=None, compacted_into=None)
        summary.compacted_at = now
        summary.metadata = {**(summary.metadata or {}), "undone": True}
        summary.save(update_fields=["compacted_at", "metadata"])
    for batch in id_batches(list(pruned_ids)):  # PostgreSQL: 65,535 parameters a statement
        pruned = list(
            Message.objects.filter(session=session, pk__in=batch, pruned_at__isnull=False)
        )
        for message in pruned:
            message.pruned_at = None
            message.token_estimate = stored_estimate(message)
        Message.objects.bulk_update(pruned, ["pruned_at", "token_estimate"], batch_size=2_000)
        restored.update(m.pk for m in pruned)
    if bubble is not None:
        event_record_mark(message=bubble, undone=True)
    ChatSession.objects.filter(pk=session.pk).update(
        compaction_count=Greatest(F("compaction_count") - 1, 0),
        # the provider's last figure counted the compacted context: the meter estimates
        # again, with the ratio the compaction kept (``token_calibration``)
        last_input_tokens=None,
        last_input_position=None,
        compaction_suggested_at=None,
        auto_compaction_paused_reason=paused_reason,
    )
    return restored


@dataclass(frozen=True, slots=True)
class CompactionApplied:
    summary_message: Message | None
    event_message: Message
    removed_count: int


def _by_estimate(ids: Sequence[int], estimates: int | Mapping[int, int]) -> dict[int, list[int]]:
    """The pruned ids grouped by their stub's estimate: stubs differ only by the tool's
    name and the id's digits, so a handful of updates mark tens of thousands."""
    if isinstance(estimates, int):
        return {estimates: list(ids)} if ids else {}
    groups: dict[int, list[int]] = {}
    for pk in ids:
        groups.setdefault(estimates[pk], []).append(pk)
    return groups


def compaction_apply(
    *,
    session: ChatSession,
    compacted_ids: Sequence[int],
    pruned_ids: Sequence[int],
    summary_content: str | None,
    pruned_token_estimate: int | Mapping[int, int],
    event_content: str,
    event_payload: dict[str, Any],
    summary_metadata: dict[str, Any] | None = None,
    token_calibration: float | None = None,
) -> CompactionApplied:
    """Persist one compaction atomically: summary, marks, prunes and the event record.

    Re-checks that every message to replace is still visible in this session
    (DESIGN 6); if not, raises SpanChanged and writes nothing. ``token_calibration``:
    measured ÷ estimated before it, which the meter keeps applying to the new context
    until the provider reports again (issue 17 item 10). Ids go to the database in batches
    (``agents.id_batches``): PostgreSQL takes at most 65,535 parameters per statement.
    """
    compacted_ids = sorted(set(compacted_ids))
    pruned_ids = sorted(set(pruned_ids) - set(compacted_ids))
    if summary_content is not None:
        summary_content = storable_text(summary_content)
    event_content = storable_text(event_content)
    event_payload = storable_json(event_payload)
    now = timezone.now()
    with transaction.atomic():
        locked = ChatSession.objects.select_for_update().get(pk=session.pk)
        visible = Message.objects.on_branch().filter(session=locked, compacted_at__isnull=True)
        found: dict[int, int] = {}
        for batch in id_batches([*compacted_ids, *pruned_ids]):
            found.update(visible.filter(pk__in=batch).values_list("pk", "position"))
        if len(found) != len(compacted_ids) + len(pruned_ids):
            raise SpanChanged("the history changed while the summary was being written")
        for batch in id_batches(compacted_ids):  # a pin that slipped in: it must stay
            if visible.filter(pk__in=batch, pinned=True).exists():
                raise SpanChanged("a message of the span was pinned meanwhile")

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
                metadata=storable_json(summary_metadata or {}),
                # the agent's notes, re-injected right after the summary, count with it
                token_estimate=message_estimate(
                    Role.USER, summary_content + (summary_metadata or {}).get("notes", ""), ()
                ),
            )
            for batch in id_batches(compacted_ids):
                Message.objects.filter(pk__in=batch).update(
                    compacted_at=now, compacted_into=summary
                )
        for estimate, ids in _by_estimate(pruned_ids, pruned_token_estimate).items():
            for batch in id_batches(ids):
                Message.objects.filter(pk__in=batch, pruned_at__isnull=True).update(
                    pruned_at=now, token_estimate=estimate
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
            token_calibration=token_calibration,
            compaction_suggested_at=None,
        )
    session.refresh_from_db()
    return CompactionApplied(
        summary_message=summary, event_message=event, removed_count=len(compacted_ids)
    )


# --- the session lease (``agents.leases``) and queued input -------------------------

LeaseState = Literal["held", "stop", "lost"]
# the holders of a lease taken for a compaction on its own (``agents.leases.COMPACT``)
COMPACTION_HOLDER_PREFIX = "c/"


def _free(now: Any) -> Q:
    return Q(lease_holder="") | Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now)


def lease_acquire(
    *,
    session_id: Any,
    holder: str,
    seconds: float,
    also: dict[str, Any] | None = None,
    take_over: str = "",
) -> bool:
    """One conditional UPDATE (DESIGN 5): free or expired → ``holder``'s for ``seconds``.
    ``also``: more columns set by the same statement (a chat message's ``session_touch``);
    ``take_over``: a holder whose lease may be taken although it has not expired (a run
    started again after the process that ran it died, ``agents.leases``)."""
    now = timezone.now()
    free = _free(now) | (Q(lease_holder=take_over) if take_over else Q(pk__in=[]))
    taken = (
        ChatSession.objects.filter(pk=session_id)
        .filter(free)
        .update(
            **{
                "lease_holder": holder,
                "lease_expires_at": now + timedelta(seconds=seconds),
                "lease_stop_holder": "",
                "compacting_holder": "",
                **(also or {}),
            }
        )
    )
    return taken == 1


def lease_renew(*, session_id: Any, holder: str, seconds: float) -> LeaseState:
    """Extend ``holder``'s lease: ``held``; ``stop`` when a stop asked its work to end (the
    lease is extended all the same); ``lost`` when it is someone else's."""
    until = timezone.now() + timedelta(seconds=seconds)
    mine = ChatSession.objects.filter(pk=session_id, lease_holder=holder)
    if mine.exclude(lease_stop_holder=holder).update(lease_expires_at=until):
        return "held"
    return "stop" if mine.update(lease_expires_at=until) else "lost"


def lease_release(*, session_id: Any, holder: str, unless_queued: bool = False) -> bool:
    """Free ``holder``'s lease (False: it was not theirs).

    ``unless_queued``: only when no message waits queued, in the same statement — then
    nothing needs looking at after it. A message queued a moment later is no concern: whoever
    stored it tries the lease right after, and finds it free."""
    mine = ChatSession.objects.filter(pk=session_id, lease_holder=holder)
    if unless_queued:
        waiting = Message.objects.filter(session=OuterRef("pk"), queued_at__isnull=False)
        mine = mine.exclude(Exists(waiting))
    freed = mine.update(
        lease_holder="", lease_expires_at=None, lease_stop_holder="", compacting_holder=""
    )
    return freed == 1


def compacting_start(*, session_id: Any, holder: str) -> bool:
    """A compaction begins under ``holder``'s lease (False: the lease is not theirs, or a
    stop asked its work to end)."""
    return (
        ChatSession.objects.filter(pk=session_id, lease_holder=holder)
        .exclude(lease_stop_holder=holder)
        .update(compacting_holder=holder)
        == 1
    )


def compacting_end(*, session_id: Any, holder: str) -> bool:
    """The compaction under ``holder``'s lease ends. Called in the transaction that stores
    its result: False when a stop cancelled it or the lease was lost meanwhile (then the
    caller writes nothing), so a stop after the commit finds no compaction to cancel."""
    return (
        ChatSession.objects.filter(pk=session_id, lease_holder=holder, compacting_holder=holder)
        .exclude(lease_stop_holder=holder)
        .update(compacting_holder="")
        == 1
    )


def compaction_was_cancelled(*, session_id: Any, holder: str) -> bool:
    """A stop cancelled this holder's compaction (and announced it, ``session_stop``)."""
    return ChatSession.objects.filter(pk=session_id, compaction_cancelled_holder=holder).exists()


def turn_start(*, session: ChatSession, release_queued: bool = True) -> list[Message]:
    """Right after the turn lease is taken: this process continues after the session's last
    position, and the messages queued while the last turn ran move to the end of the
    history, in the order they were sent (the new turn answers them)."""
    tail = session_tail(session=session)
    advance_past(tail.last_position)
    if not release_queued or not tail.queued:
        return []
    # no transaction around the read: only the lease's holder releases queued messages
    queued = queued_messages(session=session)
    if not queued:
        return []
    first = next_positions(len(queued))
    for offset, message in enumerate(queued):
        message.position = first + offset
        message.queued_at = None
    with transaction.atomic():
        Message.objects.bulk_update(queued, ["position", "queued_at"])
    return queued


@dataclass(frozen=True, slots=True)
class StopSignals:
    """What a stop reached: the lease holder asked to stop, and whether it was compacting
    (that compaction is cancelled: it writes nothing)."""

    holder: str = ""
    compaction_holder: str = ""

    @property
    def anything(self) -> bool:
        return bool(self.holder)


def session_stop(*, session_id: Any) -> StopSignals:
    """Ask whatever runs in the session to stop, wherever it runs: its holder is flagged
    (read by its heartbeat and between steps; the runner is told at once as well), and a
    compaction it runs is marked cancelled. A compaction running on its own lease (not a
    turn's) gives the lease back at once: its thread writes nothing after this, and the
    session is free for the next compaction."""
    now = timezone.now()
    row = (
        ChatSession.objects.filter(pk=session_id, lease_expires_at__gt=now)
        .exclude(lease_holder="")
        .values("lease_holder", "compacting_holder")
        .first()
    )
    if row is None:
        return StopSignals()
    holder = row["lease_holder"]
    compacting = row["compacting_holder"] == holder
    changes: dict[str, Any] = {"lease_stop_holder": holder}
    if compacting:
        changes.update(compacting_holder="", compaction_cancelled_holder=holder)
        if holder.startswith(COMPACTION_HOLDER_PREFIX):
            changes.update(lease_holder="", lease_expires_at=None, lease_stop_holder="")
    if not ChatSession.objects.filter(pk=session_id, lease_holder=holder).update(**changes):
        return StopSignals()
    return StopSignals(holder, holder if compacting else "")


def turn_event_append(*, session: ChatSession, record: EventRecord) -> Message:
    """The record of a turn that failed, was stopped or was interrupted (the page's bubble
    with Retry); its text is the record's error."""
    return event_record_append(session=session, content=record.error, record=record)


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
