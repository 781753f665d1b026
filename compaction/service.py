"""CompactionService: lease → plan → summarize → persist → broadcast (DESIGN 5, 6, 9).

Sync on purpose: the management command, the admin action and the REST endpoint
call it directly; the gateway runs it in its own worker thread. The model is
called with no transaction open; the write-back is one short transaction that
re-checks the span; events go out only after the commit.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.db import DatabaseError, close_old_connections, transaction
from django.db.models import F

import condense as core
from agents import services
from agents.broadcast import publish
from agents.events import (
    CompactionDone,
    CompactionFailed,
    CompactionSkipped,
    CompactionStart,
    MessageStored,
    ServerEvent,
)
from agents.message_format import message_to_json
from agents.meter import meter_read
from agents.models import ChatSession, CompactionRecord
from agents.reasons import wire_text
from compaction import background, notes, records, trigger
from compaction import progress as summary_progress
from compaction.auxiliary import AuxiliaryClient, AuxiliaryError
from compaction.context import (
    CompactionInput,
    UpToNotFound,
    compaction_input,
    core_messages_for_session,
    measured_tokens,
    policy_for_session,
    summarized_originals,
    token_scale,
)
from compaction.lease import Lease, held_lease

logger = logging.getLogger(__name__)

# the core's statuses that fail a compaction → their reason (agents.reasons)
_STATUS_FAILURES: dict[str, str] = {
    core.NOTHING_TO_COMPACT: "nothing_to_compact",
    core.OVERSIZED_MESSAGE: "oversized_message",
    core.SYSTEM_PROMPT_TOO_LONG: "system_prompt_too_long",
    core.NO_GAIN: "no_gain",
    core.HEAD_TOO_LONG: "head_too_long",
    core.TAIL_TOO_LONG: "tail_too_long",
    core.PINS_TOO_LONG: "pins_too_long",
}


@dataclass(frozen=True, slots=True)
class CompactionOutcome:
    status: str  # "done" | "failed" | "skipped" | "nothing" | "cancelled" | "previewed"
    reason: str | None = None
    error: str | None = None
    removed_count: int = 0
    summary_message_id: int | None = None
    tokens_before: int = 0
    tokens_after: int = 0
    event: ServerEvent | None = None
    record_id: int | None = None  # its CompactionRecord (done: the one an undo names)


@dataclass(frozen=True, slots=True)
class PlanReport:
    status: str
    message_count: int
    summarized_count: int
    pruned_count: int
    chunk_count: int
    tokens_before: int
    tokens_after: int


@dataclass(frozen=True, slots=True)
class Summarized:
    """A compaction's result once its summary is written, before anything is stored: what
    the write-back stores, or what a ``keep`` callable keeps instead (a preview,
    ``compaction.preview``). The lease is still held."""

    session: ChatSession
    reason: str
    messages: list[core.Message]  # what the core was given (``CompactionInput.messages``)
    result: core.CompactionResult
    lease: Lease
    cancel: threading.Event | None
    chain_depth: int
    audit: records.CompactionAudit
    tokens_before: int  # in the token bar's count (``_Counted``)
    tokens_after: int


# What becomes of a summarized compaction instead of its write-back (issue 17 item 6).
Keep = Callable[[Summarized], CompactionOutcome]


class CompactionCancelled(Exception):
    """A stop cancelled the compaction: it writes nothing."""


class CompactionFailure(Exception):
    def __init__(self, reason: str, error: str) -> None:
        super().__init__(error)
        self.reason = reason
        self.error = error


def _saved_percent(before: int, after: int) -> int:
    return round(100 * (before - after) / before) if before else 0


@dataclass(frozen=True, slots=True)
class _Counted:
    """A compaction's tokens before and after in the token bar's count (issue 17 item 10):
    ``after`` is what the bar will read once the write-back is committed (the stored
    estimates of what stays visible, scaled by ``calibration`` = measured ÷ estimated)."""

    before: int
    after: int
    calibration: float | None

    @classmethod
    def of(
        cls,
        source: CompactionInput,
        result: core.CompactionResult,
        scale: float,
        measured: int | None,
    ) -> _Counted:
        rows = source.row_tokens
        placeholder = core.estimate_tokens(
            core.Message(role="tool", content=core.PRUNED_TOOL_PLACEHOLDER)
        )
        estimate = source.visible_tokens - sum(rows.get(i, 0) for i in result.summarized_ids)
        estimate -= sum(rows.get(i, 0) - placeholder for i in result.pruned_ids)
        if result.summary_message is not None:
            estimate += core.estimate_tokens(
                core.Message(role="user", content=result.summary_message.content)
            )
        calibration = 1 / scale if measured is not None else None
        before = source.visible_tokens if measured is None else measured
        return cls(before, round(estimate * (calibration or 1.0)), calibration)


class CompactionService:
    def plan(self, *, session: ChatSession) -> PlanReport:
        """What a manual compaction would do now; no model call, no writes."""
        messages = core_messages_for_session(session)
        p = core.plan(messages, policy_for_session(session, messages=messages), force=True)
        kept = set(p.pinned_indexes)  # pins stay verbatim: not summarized
        start = p.span.start if p.span else 0
        summarized = sum(
            1 for i, m in enumerate(p.middle, start) if m.id is not None and i not in kept
        )
        return PlanReport(
            status=p.status,
            message_count=len(messages),
            summarized_count=summarized,
            pruned_count=len(p.pruned_indexes),
            chunk_count=len(p.chunks) if p.span else 0,
            tokens_before=p.tokens_before,
            tokens_after=p.estimated_tokens_after,
        )

    def compact(
        self,
        *,
        session: ChatSession,
        reason: str,
        instructions: str | None = None,
        progress: Callable[[int, int], None] | None = None,
        force: bool | None = None,
        cancel: threading.Event | None = None,
        trigger: str | None = None,
        up_to: int | None = None,
        keep: Keep | None = None,
    ) -> CompactionOutcome:
        """``force``: compact even under the threshold (default: only a manual one does);
        ``cancel``: set by the caller's stop — checked between two summary requests and
        before the write-back, as is the lease (a stop from another process takes it back,
        ``services.session_stop``). ``trigger``: what the audit record says asked for it
        (auto, manual, api, command; default from ``reason``); ``up_to``: compact only what
        comes before that message (issue 17 item 8). The agent's standing instructions come
        first, ``instructions`` are added to them. Every ending writes a CompactionRecord.
        ``keep``: what becomes of the summarized result instead of the write-back (a preview
        keeps it to apply later, ``compaction.preview``; its record is written then)."""
        audit = records.CompactionAudit(
            trigger=records.trigger_for(reason, trigger),
            instructions=records.combined_instructions(
                session.agent.compaction_instructions, instructions
            )
            or "",
            up_to=up_to,
        )
        outcome = self._compact_audited(session, reason, audit, progress, force, cancel, keep)
        if outcome.status not in {"done", "previewed"}:  # recorded with the write-back
            records.record_outcome(
                session=session,
                audit=audit,
                status=outcome.status,
                reason=outcome.reason,
                error=outcome.error,
                tokens=outcome.tokens_before,
            )
        return outcome

    def _compact_audited(
        self,
        session: ChatSession,
        reason: str,
        audit: records.CompactionAudit,
        progress: Callable[[int, int], None] | None,
        force: bool | None,
        cancel: threading.Event | None,
        keep: Keep | None = None,
    ) -> CompactionOutcome:
        with held_lease(session) as lease:
            if lease is None:
                return CompactionOutcome(
                    status="skipped", reason="in_progress", error=wire_text("in_progress")
                )
            if cancel is not None and cancel.is_set():
                return _cancelled()
            sid = str(session.pk)
            publish(sid, CompactionStart(session_id=sid, reason=reason))  # type: ignore[arg-type]
            forced = (reason == "manual" if force is None else force) or audit.up_to is not None
            return self._compact_leased(
                session,
                reason,
                audit.instructions or None,
                progress,
                lease,
                forced,
                cancel,
                audit,
                keep,
            )

    def _compact_leased(
        self,
        session: ChatSession,
        reason: str,
        instructions: str | None,
        progress: Callable[[int, int], None] | None,
        lease: Lease,
        force: bool = False,
        cancel: threading.Event | None = None,
        audit: records.CompactionAudit | None = None,
        keep: Keep | None = None,
    ) -> CompactionOutcome:
        sid = str(session.pk)
        audit = audit or records.CompactionAudit(trigger=records.trigger_for(reason, None))
        tokens_before = 0
        try:
            client = AuxiliaryClient.for_agent(session.agent)
            audit.use_channel(client.channel)
            source = compaction_input(session, up_to=audit.up_to)
            messages = source.messages
            # one counter (issue 17 item 10): the token bar's, and its ratio to the estimate
            measured = measured_tokens(session)
            tokens_before = audit.tokens_before = measured or source.visible_tokens
            scale = token_scale(estimated=source.visible_tokens, measured=measured)
            policy = policy_for_session(
                session, auxiliary=client.channel, scale=scale, up_to=audit.up_to is not None
            )
            originals = _regrounding_originals(session, source.chain_depth)
            # the summary streams to the page as it is written (issue 17 item 12); a stop
            # or a lost lease cuts the stream
            live = summary_progress.SummaryStream(
                sid,
                lambda event: publish(sid, event),
                check=lambda: _check_cancel_flags(lease, cancel),
            )

            def summarize(request: core.SummaryRequest) -> core.SummaryReply:
                # the core may call this from several threads at once: no database here
                if request.chunk_index > 0 or request.attempt:
                    _check_cancel_flags(lease, cancel)
                if progress is not None:
                    progress(request.chunk_index + 1, request.chunk_count)
                try:
                    reply = client.summarize(request, on_text=live.writer(request))
                except Exception:
                    audit.count_failed()
                    raise
                live.finished()
                audit.count(reply)
                return reply

            result = None
            automatic = reason == "auto" and audit.up_to is None
            if automatic and not force and originals is None:
                # prepared from the soft threshold while the chat went on (issue 14 item 6)
                taken = background.take(
                    session=session,
                    source=source,
                    policy=policy,
                    instructions=instructions or "",
                    cancelled=cancel,
                )
                if taken is not None:
                    result, audit.notes = taken.result, taken.notes
                    audit.count_prepared(result)
            if result is None:
                if automatic and session.agent.compaction_notes:
                    audit.notes = notes.write_notes(session, messages)  # issue 18 item 5
                result = core.compress(
                    messages,
                    policy,
                    summarize,
                    force=force,
                    focus=instructions,
                    original_contents=source.original_contents,
                    regrounding_originals=originals,
                )
            chain_depth = core.next_chain_depth(source.chain_depth, regrounded=result.regrounded)
            if result.status == core.UNDER_THRESHOLD:
                # the start was announced: every start gets its ending
                skipped = CompactionSkipped(
                    session_id=sid,
                    reason="under_threshold",
                    error=wire_text("under_threshold"),
                )
                publish(sid, skipped)
                return CompactionOutcome(
                    status="nothing",
                    reason="under_threshold",
                    error=skipped.error,
                    tokens_before=tokens_before,
                    tokens_after=tokens_before,
                    event=skipped,
                )
            if result.status in _STATUS_FAILURES:
                failure = _STATUS_FAILURES[result.status]
                raise CompactionFailure(failure, wire_text(failure, result.detail or ""))
            counted = _Counted.of(source, result, scale, measured)
            if keep is not None:
                summarized = Summarized(
                    session,
                    reason,
                    messages,
                    result,
                    lease,
                    cancel,
                    chain_depth,
                    audit,
                    counted.before,
                    counted.after,
                )
                return keep(summarized)
            audit.dropped = records.dropped_json(result, messages, source.original_contents)
            return self._persist(
                session, reason, result, lease, cancel, chain_depth, audit, counted
            )
        except UpToNotFound:
            return self._fail(session, "unknown_message", wire_text("unknown_message"), 0)
        except CompactionCancelled:
            return self._cancelled(session, lease, tokens_before)
        except AuxiliaryError as exc:
            return self._fail(session, exc.reason, str(exc), tokens_before)
        except core.SummaryRejected as exc:
            error = wire_text(exc.reason, str(exc))
            return self._fail(session, exc.reason, error, tokens_before)
        except CompactionFailure as exc:
            return self._fail(session, exc.reason, exc.error, tokens_before)
        except services.SpanChanged:
            error = wire_text("history_changed")
            return self._fail(session, "history_changed", error, tokens_before)
        except DatabaseError:
            logger.exception("compaction of session %s could not be stored", sid)
            error = wire_text("storage_error")
            return self._fail(session, "storage_error", error, tokens_before)

    def _persist(
        self,
        session: ChatSession,
        reason: str,
        result: core.CompactionResult,
        lease: Lease,
        cancel: threading.Event | None = None,
        chain_depth: int = 1,
        audit: records.CompactionAudit | None = None,
        counted: _Counted | None = None,
        on_record: Callable[[CompactionRecord], None] | None = None,
    ) -> CompactionOutcome:
        sid = str(session.pk)
        removed = len(result.summarized_ids)
        audit = audit or records.CompactionAudit(trigger=records.trigger_for(reason, None))
        counted = counted or _Counted(result.tokens_before, result.tokens_after, None)
        tokens_before, tokens_after = counted.before, counted.after
        saved = _saved_percent(tokens_before, tokens_after)
        with transaction.atomic():
            end_lease_for_write(session, lease, cancel)
            applied = services.compaction_apply(
                session=session,
                compacted_ids=result.summarized_ids,
                pruned_ids=result.pruned_ids,
                summary_content=result.summary_message.content if result.summary_message else None,
                pruned_token_estimate=core.estimate_tokens(
                    core.Message(role="tool", content=core.PRUNED_TOOL_PLACEHOLDER)
                ),
                event_content=f"上下文已压缩 · 移除 {removed} 条消息 · 节省 {saved}% token",
                event_payload={
                    "status": "done",
                    "reason": reason,
                    "removedCount": removed,
                    "prunedCount": len(result.pruned_ids),
                    "tokensBefore": tokens_before,
                    "tokensAfter": tokens_after,
                    "savedPercent": saved,
                    "language": result.language,
                    "requests": len(result.requests),
                    "anchoredCount": len(result.anchored_ids),
                    "foldedSummaries": len(result.folded_summary_ids),
                    "regrounded": result.regrounded,
                },
                summary_metadata={
                    "language": result.language,
                    "reason": reason,
                    "chainDepth": chain_depth,
                    "regrounded": result.regrounded,
                    "instructions": audit.instructions,
                    **({"notes": audit.notes} if audit.notes else {}),
                },
                token_calibration=counted.calibration,
            )
            record = records.record_done(
                session=session,
                audit=audit,
                summary=applied.summary_message,
                event=applied.event_message,
                tokens_before=tokens_before,
                tokens_after=tokens_after,
                removed_count=removed,
                pruned_ids=list(result.pruned_ids),
            )
            records.link_event(applied.event_message, record)
            if on_record is not None:
                on_record(record)
            pause = trigger.pause_after_success(
                still_over_threshold=tokens_after >= meter_read(session=session).threshold_tokens,
                manual=reason == "manual",
                current=session.auto_compaction_paused_reason,
            )
            if pause != session.auto_compaction_paused_reason:
                ChatSession.objects.filter(pk=session.pk).update(
                    auto_compaction_paused_reason=pause
                )
            summary_id = applied.summary_message.pk if applied.summary_message else None
            event_json = message_to_json(applied.event_message)
            done = CompactionDone(
                session_id=sid,
                removed_count=removed,
                summary_message_id=summary_id,
                tokens_before=tokens_before,
                tokens_after=tokens_after,
                event_message=event_json,
                compaction_id=record.pk,
            )

            def announce() -> None:
                publish(sid, MessageStored(sid, event_json))
                publish(sid, done)

            transaction.on_commit(announce)
        return CompactionOutcome(
            status="done",
            removed_count=removed,
            summary_message_id=summary_id,
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            event=done,
            record_id=record.pk,
        )

    def write_back(
        self,
        *,
        session: ChatSession,
        reason: str,
        result: core.CompactionResult,
        lease: Lease,
        chain_depth: int,
        audit: records.CompactionAudit,
        source: CompactionInput,
        on_record: Callable[[CompactionRecord], None] | None = None,
    ) -> CompactionOutcome:
        """Store a result summarized earlier (a previewed summary, ``compaction.preview``)
        under ``lease``, exactly as a compaction stores its own: counted against ``source``
        (the history now) like the token bar, one transaction, the record, the events after
        the commit, the counters and what undo needs. ``on_record`` runs in that
        transaction with the new record. Raises ``services.SpanChanged`` (nothing written)
        or ``CompactionCancelled``; writes no failure bubble."""
        measured = measured_tokens(session)
        scale = token_scale(estimated=source.visible_tokens, measured=measured)
        counted = _Counted.of(source, result, scale, measured)
        audit.tokens_before = counted.before
        audit.dropped = records.dropped_json(result, source.messages, source.original_contents)
        return self._persist(
            session, reason, result, lease, None, chain_depth, audit, counted, on_record
        )

    def _cancelled(self, session: ChatSession, lease: Lease, tokens: int) -> CompactionOutcome:
        """Nothing written, nothing counted as a failure. A stop that took the lease back
        announced ``compaction_failed`` (cancelled) itself, at once; a stop of the turn this
        compaction runs in is announced here."""
        outcome = _cancelled(tokens)
        if not services.compaction_was_cancelled(session=session, holder=lease.holder):
            sid = str(session.pk)
            publish(sid, CompactionFailed(sid, outcome.error or "", "cancelled"))
        return outcome

    def _fail(
        self, session: ChatSession, reason: str, error: str, tokens: int
    ) -> CompactionOutcome:
        """History untouched; a failure bubble stored and announced (seed §8.3, §9)."""
        sid = str(session.pk)
        try:
            with transaction.atomic():
                bubble = services.system_event_append(
                    session=session,
                    system_type=services.SYSTEM_TYPE_COMPACTION,
                    content=f"压缩失败：{error}",
                    payload={"status": "failed", "reason": reason, "error": error},
                )
                ChatSession.objects.filter(pk=session.pk).update(
                    consecutive_compaction_failures=F("consecutive_compaction_failures") + 1
                )
                fresh = ChatSession.objects.get(pk=session.pk)
                pause = trigger.pause_after_failure(
                    reason=reason,
                    consecutive_failures=fresh.consecutive_compaction_failures,
                    current=fresh.auto_compaction_paused_reason,
                )
                ChatSession.objects.filter(pk=session.pk).update(
                    auto_compaction_paused_reason=pause
                )
                event_json: dict[str, Any] | None = message_to_json(bubble)
        except DatabaseError:
            logger.exception("could not record the failed compaction of %s", sid)
            event_json = None
        failed = CompactionFailed(
            session_id=sid, error=error, reason=reason, event_message=event_json
        )
        if event_json is not None:
            publish(sid, MessageStored(sid, event_json))
        publish(sid, failed)
        return CompactionOutcome(
            status="failed",
            reason=reason,
            error=error,
            tokens_before=tokens,
            tokens_after=tokens,
            event=failed,
        )


def _cancelled(tokens: int = 0) -> CompactionOutcome:
    return CompactionOutcome(
        status="cancelled",
        reason="cancelled",
        error=wire_text("cancelled"),
        tokens_before=tokens,
        tokens_after=tokens,
    )


def end_lease_for_write(session: ChatSession, lease: Lease, cancel: threading.Event | None) -> None:
    """Call in the transaction that stores a compaction's result: the lease ends with it, so
    a stop that comes after the commit finds no compaction to cancel, and one before it
    cancels this one (``CompactionCancelled``); a lease lost otherwise raises SpanChanged."""
    if cancel is not None and cancel.is_set():
        raise CompactionCancelled
    if lease.lost or not services.compaction_lease_release(session=session, holder=lease.holder):
        if services.compaction_was_cancelled(session=session, holder=lease.holder):
            raise CompactionCancelled
        raise services.SpanChanged("the lease was lost while the summary was written")


def _check_cancel_flags(lease: Lease, cancel: threading.Event | None) -> None:
    """Between two summary requests, without the database (the core's worker threads):
    the caller's stop, or a lease the heartbeat found taken back."""
    if (cancel is not None and cancel.is_set()) or lease.lost:
        raise CompactionCancelled


def _regrounding_originals(session: ChatSession, chain_depth: int) -> list[core.Message] | None:
    """The originals to rebuild the summary from, when the chain of summaries has grown
    deep enough that a summary of a summary would lose what earlier rounds kept."""
    if chain_depth == 0:
        return None
    always = session.agent.compaction_reground
    if not (always or core.should_reground(chain_depth)):
        return None
    originals, tokens = summarized_originals(session)
    if not core.should_reground(chain_depth, originals_tokens=tokens, always=always):
        return None
    return originals


_compacting_here: set[str] = set()


def is_compacting_here(session_id: str) -> bool:
    """A compaction of this session is running in this process (a second request is
    answered ``in_progress`` at once instead of waiting behind it)."""
    return session_id in _compacting_here


def _compact_in_thread(
    session_id: str,
    reason: str,
    instructions: str | None,
    force: bool | None,
    cancel: threading.Event | None,
    trigger: str | None = None,
    up_to: int | None = None,
    keep: Keep | None = None,
) -> CompactionOutcome:
    """The service in a worker thread with its own database connection."""
    try:
        session = ChatSession.objects.select_related(
            "agent__model_channel", "agent__auxiliary_model_channel"
        ).get(pk=session_id)
        return CompactionService().compact(
            session=session,
            reason=reason,
            instructions=instructions,
            force=force,
            cancel=cancel,
            trigger=trigger,
            up_to=up_to,
            keep=keep,
        )
    finally:
        close_old_connections()


async def acompact(
    session_id: str,
    *,
    reason: str,
    instructions: str | None = None,
    force: bool | None = None,
    cancel: threading.Event | None = None,
    trigger: str | None = None,
    up_to: int | None = None,
    keep: Keep | None = None,
) -> CompactionOutcome:
    """Compact from async code: the model call may take a minute, so it runs in a thread of
    its own, never queued behind the process's other database work. A caller that is
    stopped sets ``cancel`` and need not wait: the thread writes nothing after it.
    ``trigger``, ``up_to`` and ``keep``: as ``CompactionService.compact`` takes them."""
    _compacting_here.add(session_id)
    try:
        return await sync_to_async(_compact_in_thread, thread_sensitive=False)(
            session_id, reason, instructions, force, cancel, trigger, up_to, keep
        )
    finally:
        _compacting_here.discard(session_id)
