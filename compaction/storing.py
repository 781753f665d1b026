"""Stage three of a compaction (``compaction.run``): the write-back.

One short transaction (DESIGN 6): end the compaction's mark under its lease (a stop that
came first cancels it; a lost lease writes nothing), re-check and store the span
(``services.compaction_apply``), the record (so an undo always finds it) and the breaker's
state; then, after the commit, the bubble, ``compaction_done`` and the token bar."""

from __future__ import annotations

from collections.abc import Callable

from django.db import transaction

import condense as core
from agents import services
from agents.broadcast import publish
from agents.event_records import EventRecord
from agents.events import CompactionDone, MessageStored
from agents.message_format import message_to_json
from agents.meter import meter_read, publish_meter
from agents.models import SYSTEM_TYPE_COMPACTION, CompactionRecord
from compaction import records, trigger
from compaction.outcome import CompactionCancelled, CompactionOutcome, saved_percent
from compaction.planning import Planned
from compaction.request import CompactionRun
from compaction.summarizing import Summarized, stub_estimates


def store(
    run: CompactionRun,
    planned: Planned,
    summarized: Summarized,
    on_record: Callable[[CompactionRecord], None] | None = None,
) -> CompactionOutcome:
    """Raises ``CompactionCancelled`` or ``services.SpanChanged`` (nothing written)."""
    result, counted = summarized.result, summarized.counted
    run.audit.dropped = records.dropped_json(
        result, planned.source.messages, planned.source.original_contents
    )
    with transaction.atomic():
        end_compacting(run)
        applied, record = _write(run, planned, summarized)
        if on_record is not None:
            on_record(record)
        _settle_breaker(run, counted.after)
        summary_id = applied.summary_message.pk if applied.summary_message else None
        bubble = message_to_json(applied.event_message)
        done = CompactionDone(
            session_id=run.session_id,
            removed_count=applied.removed_count,
            summary_message_id=summary_id,
            tokens_before=counted.before,
            tokens_after=counted.after,
            event_message=bubble,
            compaction_id=record.pk,
        )
        transaction.on_commit(lambda: _announce(run.session_id, bubble, done))
    return CompactionOutcome(
        status="done",
        removed_count=applied.removed_count,
        summary_message_id=summary_id,
        tokens_before=counted.before,
        tokens_after=counted.after,
        event=done,
        record_id=record.pk,
    )


def _write(
    run: CompactionRun, planned: Planned, summarized: Summarized
) -> tuple[services.CompactionApplied, CompactionRecord]:
    """The span, the summary, the bubble and the record (inside the transaction). The
    agent's notes: this compaction's, else the ones its predecessor carried (issue 25 item 7)."""
    result, counted = summarized.result, summarized.counted
    notes = run.audit.notes or planned.source.carried_notes
    applied = services.compaction_apply(
        session=run.session,
        compacted_ids=result.summarized_ids,
        pruned_ids=result.pruned_ids,
        summary_content=result.summary_message.content if result.summary_message else None,
        pruned_token_estimate=stub_estimates(result),
        event_content=_bubble_text(len(result.summarized_ids), counted.before, counted.after),
        event_payload=_bubble(run, result, counted.before, counted.after).to_metadata(),
        summary_metadata=_summary_metadata(run, result, summarized.chain_depth, notes),
        token_calibration=counted.calibration,
    )
    if result.summary_message is None:  # pruned only: the summary in place stays as it is
        services.summary_chain_depth_cap(session=run.session, depth=summarized.chain_depth)
    record = records.record_done(
        session=run.session,
        audit=run.audit,
        summary=applied.summary_message,
        event=applied.event_message,
        tokens_before=counted.before,
        tokens_after=counted.after,
        removed_count=applied.removed_count,
        pruned_ids=list(result.pruned_ids),
        target_tokens=result.target_tokens or None,
        reached_target=result.reached_target if result.target_tokens else None,
        discarded_requests=result.discarded_requests,
    )
    services.event_record_mark(message=applied.event_message, compaction_id=record.pk)
    return applied, record


def _settle_breaker(run: CompactionRun, tokens_after: int) -> None:
    """Automatic compaction pauses when even a compaction leaves the context over the
    threshold; a manual one resumes it (``compaction.trigger``)."""
    session = run.session
    threshold = meter_read(session=session).threshold_tokens
    services.session_pause_set(
        session=session,
        reason=trigger.pause_after_success(
            still_over_threshold=tokens_after >= threshold,
            manual=run.reason == "manual",
            current=session.auto_compaction_paused_reason,
        ),
    )


def end_compacting(run: CompactionRun) -> None:
    """In the write-back's transaction: the compaction's mark ends with it, so a stop that
    comes after the commit finds no compaction to cancel, and one before it cancels this."""
    run.check()
    if not services.compacting_end(session_id=run.session_id, holder=run.lease.holder):
        if run.lease.stop.requested or run.lease.was_cancelled():
            raise CompactionCancelled
        raise services.SpanChanged("the lease was lost while the summary was written")


def _announce(session_id: str, bubble: dict[str, object], done: CompactionDone) -> None:
    publish(session_id, MessageStored(session_id, bubble), done)
    publish_meter(session_id)


def _bubble_text(removed: int, before: int, after: int) -> str:
    return f"上下文已压缩 · 移除 {removed} 条消息 · 节省 {saved_percent(before, after)}% token"


def _bubble(
    run: CompactionRun, result: core.CompactionResult, before: int, after: int
) -> EventRecord:
    return EventRecord(
        system_type=SYSTEM_TYPE_COMPACTION,
        status="done",
        reason=run.reason,
        removed_count=len(result.summarized_ids),
        pruned_count=len(result.pruned_ids),
        tokens_before=before,
        tokens_after=after,
        saved_percent=saved_percent(before, after),
        language=result.language,
        requests=len(result.requests),
        anchored_count=len(result.anchored_ids),
        folded_summaries=len(result.folded_summary_ids),
        regrounded=result.regrounded,
    )


def _summary_metadata(
    run: CompactionRun, result: core.CompactionResult, chain_depth: int, notes: str
) -> dict[str, object]:
    return {
        "language": result.language,
        "reason": run.reason,
        "chainDepth": chain_depth,
        "regrounded": result.regrounded,
        "instructions": run.audit.instructions,
        **({"notes": notes} if notes else {}),
    }
