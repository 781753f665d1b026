"""A compaction's summary, shown before it applies (issue 17 item 6; README "Preview before
applying").

A manual compaction asked for with ``preview`` runs exactly as ``/compact`` does — the
lease and its in-progress rule, ``compaction_start`` and ``compaction_progress``, the
auxiliary model, the standing instructions and focus, ``upTo`` — up to its summary; then,
instead of the write-back (``CompactionRequest.keep``), the result is kept as a
``CompactionPreview`` and announced as ``compaction_preview``. The history is untouched.

Accepting it — the summary as written, or edited — applies exactly that summary to exactly
that span, with no model call, through the service's own write-back (the record, the
events, the counters and undo work as for any compaction), if the history it was made from
is still the start of the history: the fingerprint of ``compaction.background`` (ids,
summary and pin flags, contents), with a content hash that is the same in every process.
Messages added since stay after it. Otherwise ``history_changed`` and nothing is written.

At most one preview per session is kept (a new one replaces it), a preview expires after
``PREVIEW_TTL``, and none is ever sent to a model. The auxiliary model's cost is audited
either way: an accepted preview's record is ``done`` with reason ``previewed`` (and the
edit in ``edits``); a discarded, replaced or expired one is recorded ``cancelled``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

import condense as core
from agents import services
from agents.broadcast import publish
from agents.events import CompactionPreviewReady
from agents.models import ChatSession, CompactionPreview, CompactionRecord
from agents.reasons import wire_text
from agents.storable import storable_text
from compaction import records
from compaction.context import CompactionInput, history_fingerprint, still_starts_with
from compaction.outcome import CompactionFailure, CompactionOutcome
from compaction.planning import Planned
from compaction.request import CompactionRequest, CompactionRun, Given, Keep
from compaction.run import acompact, compact
from compaction.storing import end_compacting
from compaction.summarizing import Summarized

logger = logging.getLogger(__name__)

PREVIEW_TTL = timedelta(hours=1)

# the reason of the record an accepted preview writes (status done)
PREVIEWED = "previewed"
# the reasons of the records a preview that never applied writes (status cancelled)
DISCARDED = "preview_discarded"
REPLACED = "preview_replaced"
EXPIRED = "preview_expired"


class PreviewNotFound(LookupError):
    """No open preview of that id in this session: never one, or applied, discarded,
    replaced by a newer one, or expired."""


class PreviewRefused(Exception):
    """An accept refused with a reason of ``agents.reasons`` (history_changed, in_progress,
    cancelled, storage_error); nothing was written."""

    def __init__(self, reason: str) -> None:
        super().__init__(wire_text(reason))
        self.reason = reason
        self.error = wire_text(reason)


# --- making one ----------------------------------------------------------------------------


def keeper(*, created_by: int | None) -> Keep:
    """A run's ``keep``: store the summarized result as the session's preview (replacing
    any other) in the transaction that ends the compaction; announce it after the commit."""

    def keep(run: CompactionRun, planned: Planned, summarized: Summarized) -> CompactionOutcome:
        result, counted = summarized.result, summarized.counted
        sid = run.session_id
        content = result.summary_message.content if result.summary_message else ""
        with transaction.atomic():
            end_compacting(run)
            for old in CompactionPreview.objects.select_for_update().filter(session=run.session):
                _close(old, EXPIRED if _expired(old) else REPLACED)
            row = CompactionPreview.objects.create(
                session=run.session,
                created_by_id=created_by,
                summary=storable_text(content),
                fingerprint=history_fingerprint(planned.source.messages),
                instructions=run.audit.instructions,
                up_to_message_id=run.audit.up_to,
                tokens_before=counted.before,
                tokens_after=counted.after,
                result=_result_json(result, summarized.chain_depth),
                audit=_audit_json(run.audit),
                request_id=run.audit.request_id[:36],
            )
            if run.audit.record_id is not None:  # its record is written when it closes
                records.record_discard_running(run.audit.record_id)
            event = CompactionPreviewReady(
                session_id=sid,
                preview_id=row.pk,
                summary=core.summary_body(row.summary),
                removed_count=len(result.summarized_ids),
                tokens_before=counted.before,
                tokens_after=counted.after,
            )
            transaction.on_commit(lambda: publish(sid, event))
        return CompactionOutcome(
            status="previewed",
            removed_count=event.removed_count,
            tokens_before=counted.before,
            tokens_after=counted.after,
            event=event,
        )

    return keep


def preview_request(
    session_id: str,
    *,
    created_by: int | None,
    instructions: str | None = None,
    up_to: int | None = None,
    trigger: str | None = None,
    request_id: str = "",
) -> CompactionRequest:
    """A manual compaction up to its summary, kept as a preview (outcome ``previewed``,
    ``event`` the ``CompactionPreviewReady``); any other ending is the compaction's."""
    return CompactionRequest(
        session_id=str(session_id),
        reason="manual",
        instructions=instructions,
        trigger=trigger,
        up_to=up_to,
        keep=keeper(created_by=created_by),
        request_id=request_id,
    )


def compaction_preview(
    *,
    session: ChatSession,
    created_by: int | None,
    instructions: str | None = None,
    up_to: int | None = None,
    trigger: str | None = None,
) -> CompactionOutcome:
    return compact(
        preview_request(
            str(session.pk),
            created_by=created_by,
            instructions=instructions,
            up_to=up_to,
            trigger=trigger,
        )
    )


async def apreview(
    session_id: str,
    *,
    created_by: int | None,
    instructions: str | None = None,
    up_to: int | None = None,
    trigger: str | None = None,
) -> CompactionOutcome:
    """``compaction_preview`` from async code (a thread of its own, as ``acompact``)."""
    return await acompact(
        preview_request(
            session_id,
            created_by=created_by,
            instructions=instructions,
            up_to=up_to,
            trigger=trigger,
        )
    )


def _result_json(result: core.CompactionResult, chain_depth: int) -> dict[str, Any]:
    """What the write-back reads of the result, besides the summary's content."""
    return {
        "summarizedIds": list(result.summarized_ids),
        "prunedIds": list(result.pruned_ids),
        "anchoredIds": list(result.anchored_ids),
        "foldedSummaryIds": list(result.folded_summary_ids),
        "pinnedIds": list(result.pinned_ids),
        "language": result.language,
        "regrounded": result.regrounded,
        "requests": [{**asdict(r), "prompt": ""} for r in result.requests],
        "chainDepth": chain_depth,
        "hasSummary": result.summary_message is not None,
    }


def _audit_json(audit: records.CompactionAudit) -> dict[str, Any]:
    """What the summary's making cost, for the record written when the preview closes."""
    return {
        "trigger": audit.trigger,
        "channel": audit.channel_name,
        "model": audit.model,
        "requests": audit.requests,
        "inputTokens": audit.input_tokens,
        "outputTokens": audit.output_tokens,
        "durationMs": audit.duration_ms,
        "startedAt": audit.started_at.isoformat(),
    }


def _audit(preview: CompactionPreview) -> records.CompactionAudit:
    """The audit of the preview's making, as if its compaction were running now (its
    duration is the summary's, not the wait for the accept)."""
    a = preview.audit
    return records.CompactionAudit(
        trigger=str(a.get("trigger") or "manual"),
        instructions=preview.instructions,
        up_to=preview.up_to_message_id,
        started_at=datetime.fromisoformat(a["startedAt"]) if a.get("startedAt") else timezone.now(),
        started=time.monotonic() - int(a.get("durationMs") or 0) / 1000,
        channel_name=str(a.get("channel") or ""),
        model=str(a.get("model") or ""),
        requests=int(a.get("requests") or 0),
        input_tokens=a.get("inputTokens"),
        output_tokens=a.get("outputTokens"),
        tokens_before=preview.tokens_before,
    )


# --- finding, closing ------------------------------------------------------------------------


def _expired(preview: CompactionPreview) -> bool:
    return preview.created_at <= timezone.now() - PREVIEW_TTL


def _close(preview: CompactionPreview, reason: str) -> None:
    """Delete a preview that never applied; its record says what its summary cost."""
    records.record_outcome(
        session=preview.session,
        audit=_audit(preview),
        status="cancelled",
        reason=reason,
        error="",
        tokens=preview.tokens_before,
    )
    preview.delete()


def preview_for_session(*, session: ChatSession, preview_id: int) -> CompactionPreview:
    """The session's open preview of that id, or ``PreviewNotFound`` (an expired one is
    closed on the way)."""
    preview = CompactionPreview.objects.filter(session=session, pk=preview_id).first()
    if preview is None:
        raise PreviewNotFound(preview_id)
    if _expired(preview):
        with transaction.atomic():
            if CompactionPreview.objects.select_for_update().filter(pk=preview.pk).exists():
                _close(preview, EXPIRED)
        raise PreviewNotFound(preview_id)
    return preview


def preview_discard(*, session: ChatSession, preview_id: int) -> None:
    """Drop the preview (``PreviewNotFound`` when it is gone); recorded ``cancelled``."""
    preview = preview_for_session(session=session, preview_id=preview_id)
    with transaction.atomic():
        if not CompactionPreview.objects.select_for_update().filter(pk=preview.pk).exists():
            raise PreviewNotFound(preview_id)
        _close(preview, DISCARDED)


# --- accepting -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Summary:
    """The summary an accept applies, and the audit's edit entry when it was edited."""

    content: str
    edit: dict[str, Any] | None


def _summary(preview: CompactionPreview, text: str | None, editor: Any) -> _Summary:
    """``text`` replaces the summary's body (what the drawer shows and the event carries);
    the prefix, framing and recall hint around it stay, so the stored summary still reads
    as one (``core.summary_body``). A preview that only prunes has no summary to edit."""
    stored = preview.summary
    body = core.summary_body(stored)
    if text is None or not stored:
        return _Summary(stored, None)
    edited = storable_text(text.replace("\r\n", "\n").strip())
    if not edited or edited == body:
        return _Summary(stored, None)
    content = core.with_summary_body(stored, edited)
    # edited before it applied
    edit = records.edit_entry(editor=editor, previous=stored, at=timezone.now(), preview=True)
    return _Summary(content, edit)


def _ids(result: dict[str, Any], key: str) -> tuple[int, ...]:
    return tuple(int(i) for i in result.get(key, ()))


def _applied_result(
    preview: CompactionPreview, content: str, messages: Sequence[core.Message]
) -> core.CompactionResult:
    """The previewed result as the write-back takes it: its ids and figures, ``content`` as
    the summary, and the compacted context it leaves (what the dropped facts are read
    against): every message now given to the core but the summarized ones, pruned outputs as
    their placeholder, and the summary."""
    r = preview.result
    summarized, pruned = _ids(r, "summarizedIds"), _ids(r, "prunedIds")
    summary = None
    if r.get("hasSummary", True) and content:
        summary = core.Message(role="user", content=content, is_summary=True)
    gone, dim = set(summarized), set(pruned)
    kept = [
        replace(m, content=core.PRUNED_TOOL_PLACEHOLDER) if m.id in dim else m
        for m in messages
        if m.id is None or m.id not in gone
    ]
    return core.CompactionResult(
        status=core.COMPACTED if summary is not None else core.PRUNED_ONLY,
        messages=(*kept, *([summary] if summary is not None else [])),
        tokens_before=preview.tokens_before,
        tokens_after=preview.tokens_after,
        summary_message=summary,
        summary_text=core.summary_body(content) if summary is not None else None,
        summarized_ids=summarized,
        pruned_ids=pruned,
        requests=tuple(core.SummaryRequest(**q) for q in r.get("requests", ())),
        language=r.get("language", "en"),
        anchored_ids=_ids(r, "anchoredIds"),
        pinned_ids=_ids(r, "pinnedIds"),
        folded_summary_ids=_ids(r, "foldedSummaryIds"),
        regrounded=bool(r.get("regrounded", False)),
    )


def preview_accept(
    *, session: ChatSession, preview_id: int, editor: Any, summary: str | None = None
) -> CompactionOutcome:
    """Apply the preview (its summary, or ``summary`` as the edited text) as a compaction.

    Raises ``PreviewNotFound``, or ``PreviewRefused`` with nothing written: the history it
    was made from changed (``history_changed``), a compaction runs (``in_progress``), a
    stop cancelled it (``cancelled``) or the database failed (``storage_error``). The
    events (``message``, ``compaction_done``, the token bar) go out after the commit."""
    preview = preview_for_session(session=session, preview_id=preview_id)
    chosen = _summary(preview, summary, editor)

    def result_for(source: CompactionInput) -> core.CompactionResult:
        if not still_starts_with(source.messages, preview.fingerprint):
            raise services.SpanChanged("the history the preview was made from changed")
        return _applied_result(preview, chosen.content, source.messages)

    def on_record(record: CompactionRecord) -> None:
        deleted, _ = CompactionPreview.objects.filter(pk=preview.pk).delete()
        if not deleted:  # applied or discarded meanwhile: this write-back rolls back
            raise services.SpanChanged("the preview is gone")
        records.record_reason_and_edits(
            record, reason=PREVIEWED, edits=[chosen.edit] if chosen.edit else []
        )

    given = Given(
        result_for=result_for,
        chain_depth=int(preview.result.get("chainDepth", 1)),
        audit=_audit(preview),
        on_record=on_record,
    )
    request = CompactionRequest(
        session_id=str(session.pk), up_to=preview.up_to_message_id, given=given
    )
    try:
        return compact(request)
    except CompactionFailure as exc:
        raise PreviewRefused(exc.reason) from None


def preview_json(event: CompactionPreviewReady) -> dict[str, Any]:
    """The REST answer of a preview: the event's fields without ``type``."""
    return {k: v for k, v in event.to_json().items() if k != "type"}
