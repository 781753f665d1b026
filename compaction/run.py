"""The one compaction entry (issue 23): the socket, REST, the admin action, the command, a
preview, a chat turn's automatic compaction — every caller asks here.

``compact(request)`` takes the session's lease itself (``agents.leases``) unless it runs
under its turn's, so "one turn or one compaction at a time" holds for every caller; then it
runs named stages over one frozen ``CompactionRun``:

    plan (``compaction.planning``) → summarize (fresh, prepared or given;
    ``compaction.summarizing``) → store (one transaction, then the events and the token bar;
    ``compaction.storing``) — or, for a preview, keep (``CompactionRequest.keep``).

Every ending is recorded once (``compaction.records``) and ends the ``compaction_start``
it announced: done, skipped, failed (a bubble, and the breaker's count) or cancelled. The
model is called with no transaction open and never from the event loop: ``acompact`` runs
the whole in a thread of its own."""

from __future__ import annotations

import logging

from django.db import DatabaseError

import condense as core
from agents import services
from agents.broadcast import publish
from agents.daemon_threads import in_daemon_thread
from agents.event_records import EventRecord
from agents.events import CompactionFailed, CompactionSkipped, CompactionStart, MessageStored
from agents.leases import COMPACT, SessionLease, held_lease, lease_seconds
from agents.message_format import message_to_json
from agents.meter import publish_meter
from agents.models import SYSTEM_TYPE_COMPACTION, ChatSession
from agents.reasons import wire_text
from compaction import planning, records, storing, summarizing, trigger
from compaction.auxiliary import AuxiliaryError
from compaction.context import UpToNotFound
from compaction.outcome import (
    CompactionCancelled,
    CompactionFailure,
    CompactionOutcome,
    cancelled_outcome,
    in_progress_outcome,
)
from compaction.request import CompactionRequest, CompactionRun

logger = logging.getLogger(__name__)


def load_session(session_id: str) -> ChatSession:
    return ChatSession.objects.select_related(
        "agent__model_channel", "agent__auxiliary_model_channel"
    ).get(pk=session_id)


def compact(request: CompactionRequest, *, lease: SessionLease | None = None) -> CompactionOutcome:
    """Run one compaction to its end (sync; see ``acompact`` for async callers).

    ``lease``: the caller's own (a turn compacting between its steps); else the session's
    lease is taken for it (``in_progress`` when another holder has it). A request with a
    ``given`` summary raises ``CompactionFailure`` instead of recording a refusal."""
    session = load_session(request.session_id)
    audit = _audit(session, request)
    if lease is not None:
        outcome = _under(session, request, audit, lease)
    else:
        with held_lease(str(session.pk), COMPACT) as own:
            if own is None and request.given is not None:
                raise CompactionFailure("in_progress")
            outcome = in_progress_outcome() if own is None else _under(session, request, audit, own)
    if outcome.status not in {"done", "previewed"} and not _recorded_already(session, outcome):
        records.record_outcome(
            session=session,
            audit=audit,
            status=outcome.status,
            reason=outcome.reason,
            error=outcome.error,
            tokens=outcome.tokens_before,
        )
    if outcome.status != "done" and outcome.reason != "in_progress":
        publish_meter(str(session.pk))  # the bar no longer shows a compaction (done: on commit)
    return outcome


def _recorded_already(session: ChatSession, outcome: CompactionOutcome) -> bool:
    """A lease held through an outage is recorded once per lease period, not once per
    compaction asked for meanwhile."""
    return outcome.reason == "in_progress" and records.skipped_in_progress_lately(
        session=session, seconds=lease_seconds()
    )


async def acompact(
    request: CompactionRequest, *, lease: SessionLease | None = None
) -> CompactionOutcome:
    """``compact`` from async code, in a daemon thread of its own (the model may take a
    minute; the process's other database work never queues behind it, and a process told
    to stop never waits for it). A caller that is stopped sets its lease's stop and need
    not wait: the thread writes nothing after it."""
    return await in_daemon_thread(
        lambda: compact(request, lease=lease), name=f"compaction-{request.session_id}"
    )


def _audit(session: ChatSession, request: CompactionRequest) -> records.CompactionAudit:
    if request.given is not None:
        return request.given.audit
    return records.CompactionAudit(
        trigger=records.trigger_for(request.reason, request.trigger),
        instructions=records.combined_instructions(
            session.agent.compaction_instructions, request.instructions
        )
        or "",
        up_to=request.up_to,
        request_id=request.request_id,
    )


def _under(
    session: ChatSession,
    request: CompactionRequest,
    audit: records.CompactionAudit,
    lease: SessionLease,
) -> CompactionOutcome:
    """The stages, under ``lease``, marked as compacting for their whole length."""
    with lease.compacting() as started:
        if not started:
            if request.given is not None:
                raise CompactionFailure("cancelled")
            return cancelled_outcome()
        run = CompactionRun(session, request, audit, lease)
        if request.given is not None:
            return _apply_given(run)
        records.record_started(session=session, audit=audit)
        publish(run.session_id, CompactionStart(session_id=run.session_id, reason=run.reason))
        return _stages(run)


def _stages(run: CompactionRun) -> CompactionOutcome:
    tokens = 0
    try:
        run.check()  # a stop that came before the start
        planned = planning.plan(run)
        tokens = planned.tokens_before
        summarized = summarizing.summarize(run, planned)
        if summarized.under_threshold:
            return _under_threshold(run, tokens)
        if run.request.keep is not None:
            return run.request.keep(run, planned, summarized)
        return storing.store(run, planned, summarized)
    except UpToNotFound:
        return _fail(run, CompactionFailure("unknown_message"), 0)
    except CompactionCancelled:
        return _cancelled(run, tokens)
    except AuxiliaryError as exc:
        return _fail(run, CompactionFailure(exc.reason, str(exc)), tokens)
    except core.SummaryRejected as exc:
        return _fail(run, CompactionFailure(exc.reason, wire_text(exc.reason, str(exc))), tokens)
    except CompactionFailure as exc:
        if exc.reason in NOTICES:  # nothing wrong: nothing to do
            if exc.reason == "no_gain":  # the summary in place could not be bettered
                services.summary_chain_depth_cap(session=run.session, depth=1)
            return _notice(run, exc.reason, tokens)
        return _fail(run, exc, tokens)
    except services.SpanChanged:
        return _fail(run, CompactionFailure("history_changed"), tokens)
    except DatabaseError:
        logger.exception("compaction of session %s could not be stored", run.session_id)
        return _fail(run, CompactionFailure("storage_error"), tokens)


def _apply_given(run: CompactionRun) -> CompactionOutcome:
    """A summary written earlier, applied with no model call: a refusal raises
    (``CompactionFailure``) and writes nothing; no bubble, no breaker."""
    try:
        planned = planning.plan(run)
        summarized = summarizing.summarize(run, planned)
        assert run.request.given is not None
        return storing.store(run, planned, summarized, on_record=run.request.given.on_record)
    except (UpToNotFound, services.SpanChanged):
        raise CompactionFailure("history_changed") from None
    except CompactionCancelled:
        raise CompactionFailure("cancelled") from None
    except DatabaseError:
        logger.exception("a summary of session %s could not be applied", run.session_id)
        raise CompactionFailure("storage_error") from None


# Endings that are no failure (issue 25 item 6): a notice, never counted by the breaker.
NOTICES = frozenset(("nothing_to_compact", "no_gain"))


def _under_threshold(run: CompactionRun, tokens: int) -> CompactionOutcome:
    return _notice(run, "under_threshold", tokens)


def _notice(run: CompactionRun, reason: str, tokens: int) -> CompactionOutcome:
    """Nothing to do (under the threshold, nothing to compact yet, no gain): the start that
    was announced ends with ``compaction_skipped`` — a neutral notice; recorded ``skipped``."""
    skipped = CompactionSkipped(session_id=run.session_id, reason=reason, error=wire_text(reason))
    publish(run.session_id, skipped)
    return CompactionOutcome(
        status="nothing",
        reason=reason,
        error=skipped.error,
        tokens_before=tokens,
        tokens_after=tokens,
        event=skipped,
    )


def _cancelled(run: CompactionRun, tokens: int) -> CompactionOutcome:
    """Nothing written, nothing counted as a failure. A stop that reached the database
    announced ``compaction_failed`` (cancelled) itself, at once; a stop of the turn this
    compaction runs in, or a lost lease, is announced here."""
    outcome = cancelled_outcome(tokens)
    if not run.lease.was_cancelled():
        sid = run.session_id
        publish(sid, CompactionFailed(sid, outcome.error or "", "cancelled"))
    return outcome


def _fail(run: CompactionRun, failure: CompactionFailure, tokens: int) -> CompactionOutcome:
    """History untouched; a failure bubble stored and announced (seed §8.3, §9), and the
    breaker told (the token bar, which shows a pause, follows from ``compact``)."""
    sid, reason, error = run.session_id, failure.reason, failure.error
    event_json = None
    try:
        bubble = services.compaction_failure_note(
            session=run.session,
            content=f"压缩失败：{error}",
            record=EventRecord(SYSTEM_TYPE_COMPACTION, "failed", reason=reason, error=error),
            # only automatic compactions count toward pausing automatic compaction (README)
            pause=(
                (
                    lambda failures, current: trigger.pause_after_failure(
                        reason=reason, consecutive_failures=failures, current=current
                    )
                )
                if run.automatic
                else None
            ),
        )
        event_json = message_to_json(bubble)
    except DatabaseError:
        logger.exception("could not record the failed compaction of %s", sid)
    failed = CompactionFailed(session_id=sid, error=error, reason=reason, event_message=event_json)
    if event_json is not None:
        publish(sid, MessageStored(sid, event_json), failed)
    else:
        publish(sid, failed)
    return CompactionOutcome(
        status="failed",
        reason=reason,
        error=error,
        tokens_before=tokens,
        tokens_after=tokens,
        event=failed,
    )


def dry_run(session: ChatSession) -> planning.DryRun:
    """What a manual compaction would do now; no model call, no writes."""
    return planning.dry_run(session)
