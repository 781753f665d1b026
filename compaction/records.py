"""The audit record of every compaction (issue 17 item 9; CONTRACT §7).

``CompactionAudit`` collects, while a compaction runs, what would otherwise be thrown away:
who asked (the trigger), the instructions it ran with, the auxiliary channel and model, the
usage each summary request reported, how many requests there were and how long it took.
The service writes one ``CompactionRecord`` from it at its end, whatever the end: done (in
the write-back's transaction, so an undo always finds it), failed, cancelled or skipped.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from django.db import DatabaseError
from django.db.models import QuerySet
from django.utils import timezone

import condense as core
from agents.models import (
    ChatSession,
    CompactionRecord,
    CompactionStatus,
    CompactionTrigger,
    Message,
    ModelChannel,
)
from condense import SummaryReply

# the service's outcome statuses → a record's status ("nothing": a start that found
# nothing to do is recorded as skipped, with its reason)
_STATUS: dict[str, str] = {
    "done": CompactionStatus.DONE,
    "failed": CompactionStatus.FAILED,
    "cancelled": CompactionStatus.CANCELLED,
    "skipped": CompactionStatus.SKIPPED,
    "nothing": CompactionStatus.SKIPPED,
}


def trigger_for(reason: str, trigger: str | None) -> str:
    """A record's trigger: the caller's, else the service's ``reason`` (auto or manual)."""
    if trigger in CompactionTrigger.values:
        return str(trigger)
    return CompactionTrigger.AUTO if reason == "auto" else CompactionTrigger.MANUAL


def combined_instructions(standing: str, focus: str | None) -> str | None:
    """The agent's standing instructions, then this compaction's focus (``/compact <focus>``
    adds to them, issue 17 item 3); None when there are none."""
    parts = [p.strip() for p in (standing, focus or "") if p and p.strip()]
    return "\n\n".join(parts) or None


@dataclass
class CompactionAudit:
    """Filled in while one compaction runs. ``count`` may be called from the core's worker
    threads (parts are summarized concurrently), so it holds a lock."""

    trigger: str
    instructions: str = ""
    up_to: int | None = None
    started_at: datetime = field(default_factory=timezone.now)
    started: float = field(default_factory=time.monotonic)
    channel_name: str = ""
    model: str = ""
    requests: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    tokens_before: int = 0
    dropped: list[dict[str, Any]] = field(default_factory=list)  # set once it is done
    notes: str = ""  # the agent's notes before it (compaction.notes), kept with the summary
    request_id: str = ""  # the REST call waiting for it
    record_id: int | None = None  # its record, written ``running`` when it started
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def use_channel(self, channel: ModelChannel) -> None:
        self.channel_name, self.model = channel.name, channel.model

    def count(self, reply: SummaryReply | str) -> None:
        """One summary request answered, with the usage its provider reported (if any)."""
        with self._lock:
            self.requests += 1
            if isinstance(reply, SummaryReply):
                if reply.input_tokens is not None:
                    self.input_tokens = (self.input_tokens or 0) + reply.input_tokens
                if reply.output_tokens is not None:
                    self.output_tokens = (self.output_tokens or 0) + reply.output_tokens

    def count_prepared(self, result: core.CompactionResult) -> None:
        """The summary was prepared ahead (``compaction.background``): its requests and
        the usage they reported count for this compaction."""
        with self._lock:
            self.requests += len(result.requests)
            if result.input_tokens:
                self.input_tokens = (self.input_tokens or 0) + result.input_tokens
            if result.output_tokens:
                self.output_tokens = (self.output_tokens or 0) + result.output_tokens

    def count_failed(self) -> None:
        """A summary request that raised (the provider failed): it still counts."""
        with self._lock:
            self.requests += 1

    @property
    def duration_ms(self) -> int:
        return max(0, round((time.monotonic() - self.started) * 1000))

    def fields(self) -> dict[str, Any]:
        return {
            "trigger": self.trigger,
            "instructions": self.instructions,
            "up_to_message_id": self.up_to,
            "started_at": self.started_at,
            "auxiliary_channel": self.channel_name[:100],
            "auxiliary_model": self.model[:200],
            "aux_input_tokens": self.input_tokens,
            "aux_output_tokens": self.output_tokens,
            "request_count": self.requests,
            "duration_ms": self.duration_ms,
            "request_id": self.request_id[:36],
        }


def edit_entry(*, editor: Any, previous: str, at: datetime, **extra: Any) -> dict[str, Any]:
    """One entry of a record's ``edits``: who changed the summary, when, and the text it
    had before (``extra``: e.g. ``preview=True`` for an edit made before it applied)."""
    return {
        "by": getattr(editor, "username", "") or "",
        "byId": getattr(editor, "pk", None),
        "at": at.isoformat(),
        "previous": previous,
        **extra,
    }


def dropped_json(
    result: core.CompactionResult,
    inputs: Sequence[core.Message],
    original_contents: Mapping[int, str] | None = None,
) -> list[dict[str, Any]]:
    """Issue 17 item 7: the numbers, paths, URLs and identifiers of the summarized originals
    (``inputs`` the core was given, pruned outputs in full) that neither the summary nor
    the kept context mentions — ``core.dropped_facts``, each with its message id."""
    if result.summary_message is None:
        return []
    gone = set(result.summarized_ids)
    contents = original_contents or {}
    summarized = [
        replace(m, content=contents.get(m.id, m.content))
        for m in inputs
        if m.id is not None and m.id in gone
    ]
    facts = core.dropped_facts(summarized, core.context_text(result.messages))
    return [{"value": f.value, "kind": f.kind, "messageId": f.message_id} for f in facts]


def interrupt_running(*, session_id: Any, cancelled: bool = False) -> int:
    """The session's compactions still recorded ``running`` whose work was stopped from
    outside it — its process died or shuts down (``interrupted``), or a stop did not wait
    for its thread (``cancelled``, with ``cancelled``). The history is unchanged: they
    wrote nothing. How many."""
    status, reason = (
        (CompactionStatus.CANCELLED, "cancelled")
        if cancelled
        else (CompactionStatus.INTERRUPTED, "compaction_interrupted")
    )
    return CompactionRecord.objects.filter(
        session_id=session_id, status=CompactionStatus.RUNNING
    ).update(status=status, reason=reason)


def record_discard_running(record_id: int) -> None:
    """A preview's summary is written: its record comes when the preview closes (applied,
    discarded, replaced or expired), not now."""
    CompactionRecord.objects.filter(pk=record_id, status=CompactionStatus.RUNNING).delete()


def record_reason_and_edits(
    record: CompactionRecord, *, reason: str, edits: list[dict[str, Any]]
) -> None:
    """A done record's reason and edits when they are known only once it is stored (an
    accepted preview's)."""
    CompactionRecord.objects.filter(pk=record.pk).update(reason=reason, edits=edits)
    record.reason, record.edits = reason, edits


def record_started(*, session: ChatSession, audit: CompactionAudit) -> None:
    """A compaction that starts is recorded ``running`` at once: one that dies with its
    process leaves a record the sweep marks ``interrupted`` (``runs.sweep``)."""
    try:
        record = CompactionRecord.objects.create(
            session=session, status=CompactionStatus.RUNNING, **audit.fields()
        )
    except DatabaseError:  # the compaction goes on; its end writes the record
        return
    audit.record_id = record.pk


def _write(session: ChatSession, audit: CompactionAudit, **fields: Any) -> CompactionRecord:
    """The compaction's record: its ``running`` one completed, or a new one."""
    values = {**audit.fields(), **fields}
    if audit.record_id is not None:
        CompactionRecord.objects.filter(pk=audit.record_id, status=CompactionStatus.RUNNING).update(
            **values
        )
        found = CompactionRecord.objects.filter(pk=audit.record_id).first()
        if found is not None:  # closed already by whoever stopped it: that ending stands
            return found
    return CompactionRecord.objects.create(session=session, **values)


def record_done(
    *,
    session: ChatSession,
    audit: CompactionAudit,
    summary: Message | None,
    event: Message | None,
    tokens_before: int,
    tokens_after: int,
    removed_count: int,
    pruned_ids: list[int],
    target_tokens: int | None = None,
    reached_target: bool | None = None,
    discarded_requests: int = 0,
) -> CompactionRecord:
    """A done compaction's record; call it inside the write-back's transaction. Issue 25:
    where the view should have landed, whether it did, and answers asked for again."""
    return _write(
        session,
        audit,
        summary_message=summary,
        event_message=event,
        status=CompactionStatus.DONE,
        tokens_before=tokens_before,
        tokens_after=tokens_after,
        removed_count=removed_count,
        pruned_ids=sorted(pruned_ids),
        dropped=audit.dropped,
        target_tokens=target_tokens,
        reached_target=reached_target,
        discarded_requests=discarded_requests,
    )


def record_outcome(
    *,
    session: ChatSession,
    audit: CompactionAudit,
    status: str,
    reason: str | None,
    error: str | None,
    tokens: int,
) -> CompactionRecord | None:
    """The record of a compaction that changed nothing (failed, cancelled, skipped). Never
    raises: a failing audit write must not turn the outcome into another failure."""
    try:
        return _write(
            session,
            audit,
            status=_STATUS.get(status, CompactionStatus.FAILED),
            reason=(reason or "")[:64],
            error=error or "",
            tokens_before=tokens,
            tokens_after=tokens,
        )
    except DatabaseError:
        return None


def skipped_in_progress_lately(*, session: ChatSession, seconds: float) -> bool:
    """A ``skipped`` / ``in_progress`` record of the session in the last ``seconds``: one
    outage of a held lease (a dead holder's, say) is recorded once, not once per asking
    (issue 27 item 12)."""
    since = timezone.now() - timedelta(seconds=seconds)
    return CompactionRecord.objects.filter(
        session=session,
        status=CompactionStatus.SKIPPED,
        reason="in_progress",
        started_at__gte=since,
    ).exists()


def record_undone(record: CompactionRecord) -> None:
    record.status = CompactionStatus.UNDONE
    record.undone_at = timezone.now()
    record.save(update_fields=["status", "undone_at"])


def record_edit(record: CompactionRecord, edit: dict[str, Any]) -> None:
    """One more hand edit of the record's summary, in its audit."""
    record.edits = [*(record.edits or []), edit]
    record.save(update_fields=["edits"])


def records_for_session(*, session: ChatSession) -> QuerySet[CompactionRecord]:
    """A session's records, newest first."""
    return CompactionRecord.objects.filter(session=session).order_by("-started_at", "-id")


def record_of_summary(summary: Message) -> CompactionRecord | None:
    """The compaction that wrote ``summary`` (None for a summary older than the records)."""
    return (
        CompactionRecord.objects.filter(session_id=summary.session_id, summary_message=summary)
        .order_by("-id")
        .first()
    )


def latest_active(*, session: ChatSession) -> CompactionRecord | None:
    """The compaction an undo may undo: the session's last one applied and not undone."""
    return (
        CompactionRecord.objects.filter(session=session, status=CompactionStatus.DONE)
        .order_by("-id")
        .first()
    )


def record_json(record: CompactionRecord, *, detail: bool = False) -> dict[str, Any]:
    """CONTRACT §7's shape of a record; ``detail`` adds the instructions, the edits, the
    dropped facts and when it was undone."""
    data: dict[str, Any] = {
        "id": record.pk,
        "summaryMessageId": record.summary_message_id,
        "trigger": record.trigger,
        "status": record.status,
        "reason": record.reason or None,
        "tokensBefore": record.tokens_before,
        "tokensAfter": record.tokens_after,
        "removedCount": record.removed_count,
        "auxiliaryChannel": record.auxiliary_channel or None,
        "auxiliaryModel": record.auxiliary_model or None,
        "auxInputTokens": record.aux_input_tokens,
        "auxOutputTokens": record.aux_output_tokens,
        "requestCount": record.request_count,
        "durationMs": record.duration_ms,
        "startedAt": record.started_at.isoformat(),
    }
    if detail:
        data.update(
            {
                "instructions": record.instructions,
                "upTo": record.up_to_message_id,
                "undoneAt": record.undone_at.isoformat() if record.undone_at else None,
                "edits": list(record.edits or []),
                "dropped": list(record.dropped or []),
            }
        )
    return data
