"""Undo a compaction (issue 17 item 1; CONTRACT §7).

Compaction deletes nothing, so undoing one is a write-back in reverse: the originals the
summary replaced become active again (and the tool outputs it pruned get their text back),
the summary is marked undone and kept for the audit, and the record says ``undone``. Only
the latest compaction still in effect can be undone — an older one's summary may have been
folded into a later one — so the compacted view afterwards is exactly the one before that
compaction, plus whatever was stored since (later turns keep their positions after the
restored messages).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from agents import services
from agents.broadcast import publish
from agents.events import CompactionUndone
from agents.meter import publish_meter
from agents.models import ChatSession, CompactionRecord
from agents.reasons import wire_text
from agents.selectors import compaction_running
from compaction import records, trigger


class UndoRefused(Exception):
    """The undo is refused with a reason of ``agents.reasons`` (not_latest, in_progress,
    nothing_to_undo)."""

    def __init__(self, reason: str) -> None:
        super().__init__(wire_text(reason))
        self.reason = reason
        self.error = wire_text(reason)


class RecordNotFound(LookupError):
    """No compaction record of that id in this session."""


@dataclass(frozen=True, slots=True)
class UndoOutcome:
    record_id: int
    summary_message_id: int | None
    restored_count: int


def _target(session: ChatSession, record_id: int | None) -> CompactionRecord:
    latest = records.latest_active(session=session)
    if record_id is None:
        if latest is None:
            raise UndoRefused("nothing_to_undo")
        return latest
    record = CompactionRecord.objects.filter(session=session, pk=record_id).first()
    if record is None:
        raise RecordNotFound(record_id)
    if latest is None or latest.pk != record.pk:
        raise UndoRefused("not_latest")
    return record


def compaction_undo(*, session: ChatSession, record_id: int | None = None) -> UndoOutcome:
    """Undo the compaction of ``record_id`` (None: the latest one in effect).

    Raises ``RecordNotFound`` or ``UndoRefused``; announces ``compaction_undone`` and the
    token bar after the commit."""
    if compaction_running(session_id=session.pk):
        raise UndoRefused("in_progress")
    with transaction.atomic():
        locked = ChatSession.objects.select_for_update().get(pk=session.pk)
        record = _target(locked, record_id)
        restored = services.compaction_revert(
            session=locked,
            summary=record.summary_message,
            pruned_ids=record.pruned_ids or [],
            bubble=record.event_message,
            paused_reason=trigger.pause_after_undo(
                trigger=record.trigger, current=locked.auto_compaction_paused_reason
            ),
        )
        records.record_undone(record)
        outcome = UndoOutcome(record.pk, record.summary_message_id, len(restored))
        transaction.on_commit(lambda: _announce(str(session.pk), outcome))
    return outcome


def _announce(session_id: str, outcome: UndoOutcome) -> None:
    """The event, then the token bar's new reading."""
    publish(
        session_id,
        CompactionUndone(
            session_id=session_id,
            summary_message_id=outcome.summary_message_id,
            restored_count=outcome.restored_count,
            compaction_id=outcome.record_id,
        ),
    )
    publish_meter(session_id)
