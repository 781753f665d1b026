"""Compaction that never makes the user wait (issue 14 item 6; issue 24 item 5).

From a soft threshold ``SOFT_MARGIN_POINTS`` below the agent's, the summary is prepared
while the chat goes on (``start``); at the next turn boundary at or over the threshold the
compaction takes it (``take``) when the history it was made from is still the history's
start — nothing compacted, pinned, edited or removed since — and the result, with the
messages added since, still lands under the threshold. Otherwise the compaction runs as
before. A preparation still running at the boundary is waited for (the rest of it, not a
second summary from scratch), at most ``WAIT_SECONDS``: then the turn compacts by itself.

Prepared results are stored (``PreparedCompaction``, one per session), so the turn that
crosses the threshold applies one in whichever process runs it. Preparing writes nothing
else and takes no lease, so a manual ``/compact`` or a stop is never blocked by it. Who
runs a preparation is the runner's business (``runs`` registers itself with
``register_starter``: a job of its own, one at a time per user, so one user's slow
summaries cannot hold up everyone's); without one, a daemon thread runs it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError, IntegrityError, close_old_connections, transaction
from django.db.models import Q
from django.utils import timezone

import condense as core
from agents.events import MeterReading
from agents.models import ChatSession, CompactionMode
from compaction import notes, records
from compaction.auxiliary import AuxiliaryClient, AuxiliaryError
from compaction.context import (
    CompactionInput,
    compaction_input,
    history_fingerprint,
    policy_for_session,
    still_starts_with,
)
from compaction.models import PreparedCompaction
from compaction.result_json import result_from_json, result_to_json

logger = logging.getLogger(__name__)

SOFT_MARGIN_POINTS = 10  # how far below the threshold preparing starts, in percent points
WAIT_SECONDS = 30.0  # the longest a boundary waits for a preparation that still runs
POLL_SECONDS = 0.1  # how often a boundary waiting for one looks at it (and at its stop)
# a preparation not ready this long after it started has died with its process: redone
STALE_AFTER = timedelta(minutes=10)

Status = PreparedCompaction.Status

_starter: Callable[[str], None] | None = None


def register_starter(starter: Callable[[str], None]) -> None:
    """Who runs ``prepare(session_id)`` from now on (the runner's job)."""
    global _starter
    _starter = starter


@dataclass(frozen=True, slots=True)
class Taken:
    """A prepared compaction as it applies now."""

    result: core.CompactionResult
    notes: str


def soft_threshold_tokens(reading: MeterReading) -> int:
    """The token count from which a summary is prepared: ``SOFT_MARGIN_POINTS`` below the
    threshold (scaled alike when the agent's token cap is the threshold)."""
    percent = max(1, reading.threshold_percent)
    soft_percent = max(percent // 2, percent - SOFT_MARGIN_POINTS)
    return reading.threshold_tokens * soft_percent // percent


def _wanted(session: ChatSession, reading: MeterReading) -> bool:
    agent = session.agent
    if not settings.NETACLAW["BACKGROUND_COMPACTION"]:
        return False
    if agent.compaction_mode != CompactionMode.AUTO or session.auto_compaction_paused_reason:
        return False
    return session.channel is not None and reading.used_tokens >= soft_threshold_tokens(reading)


def preparation_due(*, session: ChatSession, reading: MeterReading) -> bool:
    """Between the soft threshold and any point above it, automatic compaction on and
    nothing prepared or preparing for this history: prepare now."""
    if not _wanted(session, reading):
        return False
    fresh = timezone.now() - STALE_AFTER
    return not PreparedCompaction.objects.filter(
        Q(status=Status.READY) | Q(started_at__gt=fresh),
        session_id=session.pk,
        compaction_count=session.compaction_count,
    ).exists()


def _claim(session_id: str) -> bool:
    """Mark the session's next summary as being prepared; False when it is already (or
    a prepared one stands for the history as it is)."""
    session = ChatSession.objects.filter(pk=session_id).values("compaction_count").first()
    if session is None:
        return False
    now = timezone.now()
    row = {"status": Status.PREPARING, "compaction_count": session["compaction_count"]}
    taken = PreparedCompaction.objects.filter(
        Q(compaction_count__lt=session["compaction_count"])
        | Q(status=Status.PREPARING, started_at__lte=now - STALE_AFTER),
        session__pk=session_id,
    ).update(**row, started_at=now, ready_at=None, result={}, fingerprint=[], notes="")
    if taken:
        return True
    try:
        with transaction.atomic():
            PreparedCompaction.objects.create(session_id=session_id, started_at=now, **row)
    except IntegrityError:  # prepared or preparing already
        return False
    return True


def start(session_id: str) -> bool:
    """Prepare the session's next summary in the background; False when one is already
    prepared or being prepared."""
    if not _claim(session_id):
        return False
    if _starter is not None:
        _starter(session_id)
    else:
        threading.Thread(target=_prepare_alone, args=(session_id,), daemon=True).start()
    return True


def _prepare_alone(session_id: str) -> None:
    try:
        prepare(session_id)
    finally:
        close_old_connections()


def prepare(session_id: str) -> None:
    """The compaction the threshold will ask for, computed now against the soft threshold
    (so it also leaves room for what the chat adds meanwhile) and stored; nothing else is
    written. Sync: the runner calls it from a thread of its own."""
    try:
        session = ChatSession.objects.select_related(
            "agent__model_channel", "agent__auxiliary_model_channel"
        ).get(pk=session_id)
        client = AuxiliaryClient.for_agent(session.agent)
        source = compaction_input(session)
        policy = policy_for_session(session, auxiliary=client.channel, messages=source.messages)
        soft_percent = max(
            policy.threshold_percent // 2, policy.threshold_percent - SOFT_MARGIN_POINTS
        )
        instructions = records.combined_instructions(session.agent.compaction_instructions, None)
        written = (
            notes.write_notes(session, source.messages) if session.agent.compaction_notes else ""
        )
        result = core.compress(
            source.messages,
            replace(policy, threshold_percent=soft_percent),
            client.summarize,
            focus=instructions,
            original_contents=source.original_contents,
        )
    except ChatSession.DoesNotExist:
        return
    except (AuxiliaryError, core.SummaryRejected) as exc:  # the compaction itself will say
        logger.info("no summary prepared for %s: %s", session_id, exc)
        forget(session_id)
        return
    except Exception:
        logger.exception("preparing the summary of %s failed", session_id)
        forget(session_id)
        return
    if result.status != core.COMPACTED:
        forget(session_id)
        return
    PreparedCompaction.objects.filter(
        session__pk=session_id, status=Status.PREPARING, compaction_count=session.compaction_count
    ).update(
        status=Status.READY,
        instructions=instructions or "",
        fingerprint=history_fingerprint(source.messages),
        result=result_to_json(result),
        notes=written,
        ready_at=timezone.now(),
    )


def forget(session_id: str) -> None:
    try:
        PreparedCompaction.objects.filter(session__pk=session_id).delete()
    except DatabaseError:
        logger.warning("could not drop the preparation of %s", session_id, exc_info=True)


def _ready(session_id: str, cancelled: threading.Event | None) -> PreparedCompaction | None:
    """The session's prepared compaction, waiting for one still being prepared (at most
    ``WAIT_SECONDS``, and not past a stop)."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        row = PreparedCompaction.objects.filter(session__pk=session_id).first()
        if row is None or row.status == Status.READY:
            return row
        if time.monotonic() > deadline or (cancelled is not None and cancelled.is_set()):
            return None
        time.sleep(POLL_SECONDS)


def take(
    *,
    session: ChatSession,
    source: CompactionInput,
    policy: core.CompactionPolicy,
    instructions: str,
    cancelled: threading.Event | None = None,
) -> Taken | None:
    """The prepared compaction of ``session`` as it applies to ``source`` now, or None.

    Waits for a preparation still running (bounded). The result is the prepared summary
    and kept head, then the kept tail and every message added since (verbatim), counted
    again; it is used only when that count is under ``policy``'s threshold."""
    row = _ready(str(session.pk), cancelled)
    if row is None or row.status != Status.READY:
        return None
    if not PreparedCompaction.objects.filter(pk=row.pk, status=Status.READY).delete()[0]:
        return None  # taken by another boundary meanwhile
    if row.compaction_count != session.compaction_count or row.instructions != instructions:
        return None
    if not still_starts_with(source.messages, row.fingerprint):
        return None
    prepared = result_from_json(row.result)
    seen = len(row.fingerprint)
    messages = (*prepared.messages, *source.messages[seen:])
    before = core.estimate_messages(source.messages, policy.chars_per_token)
    after = core.estimate_messages(messages, policy.chars_per_token)
    if after >= policy.threshold_tokens:
        return None
    result = replace(prepared, messages=messages, tokens_before=before, tokens_after=after)
    return Taken(result, row.notes)


def wait(session_id: str, timeout: float | None = None) -> None:
    """Until the session's preparation, if one runs, has ended (tests and benchmarks)."""
    deadline = time.monotonic() + (timeout if timeout is not None else 3600)
    while time.monotonic() < deadline:
        if not PreparedCompaction.objects.filter(
            session__pk=session_id, status=Status.PREPARING
        ).exists():
            return
        time.sleep(POLL_SECONDS)


def settle(timeout: float | None = None) -> None:
    """Until no preparation runs any more (tests: nothing writes after the test ends)."""
    deadline = time.monotonic() + (timeout if timeout is not None else 3600)
    while time.monotonic() < deadline:
        if not PreparedCompaction.objects.filter(status=Status.PREPARING).exists():
            return
        time.sleep(POLL_SECONDS)
