"""Compaction that never makes the user wait (issue 14 item 6).

From a soft threshold ``SOFT_MARGIN_POINTS`` below the agent's, the summary is prepared in
a worker thread while the chat goes on (``start``); at the next turn boundary at or over
the threshold the service takes it (``take``) when the history it was made from is still
the history's start — nothing compacted, pinned, edited or removed since — and the result,
with the messages added since, still lands under the threshold. Otherwise the compaction
runs as before. A preparation still running at the boundary is waited for (the rest of it,
not a second summary from scratch).

Prepared results live in this process's memory, at most one per session: a session's
turns run where its socket is, and a turn that runs elsewhere (or after a restart) only
loses the head start, never correctness. Preparing writes nothing and takes no lease, so
a manual ``/compact`` or a stop is never blocked by it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, replace
from typing import Any

from django.conf import settings
from django.db import close_old_connections

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

logger = logging.getLogger(__name__)

SOFT_MARGIN_POINTS = 10  # how far below the threshold preparing starts, in percent points
MAX_PREPARED = 256  # sessions whose prepared summary this process keeps
MAX_CONCURRENT = 4  # summaries prepared at once in this process
WAIT_SLICE_SECONDS = 0.1  # how often a boundary waiting for a preparation looks at its stop

_executor = ThreadPoolExecutor(max_workers=MAX_CONCURRENT, thread_name_prefix="compaction-prep")
_lock = threading.Lock()
_prepared: OrderedDict[str, Prepared] = OrderedDict()
_running: dict[str, Future[Prepared | None]] = {}


@dataclass(frozen=True, slots=True)
class Prepared:
    """A summary made ahead of the threshold, and the history it was made from."""

    compaction_count: int
    instructions: str
    fingerprint: list[list[Any]]  # ``context.history_fingerprint`` of what it was made from
    result: core.CompactionResult
    prepared_at: float
    notes: str = ""  # what the agent wrote before it (``compaction.notes``)


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


def preparation_due(*, session: ChatSession, reading: MeterReading) -> bool:
    """Between the soft threshold and any point above it, automatic compaction on and
    nothing prepared or preparing for this history: prepare now."""
    agent = session.agent
    if not settings.NETACLAW["BACKGROUND_COMPACTION"]:
        return False
    if agent.compaction_mode != CompactionMode.AUTO or session.auto_compaction_paused_reason:
        return False
    if agent.model_channel is None or reading.used_tokens < soft_threshold_tokens(reading):
        return False
    sid = str(session.pk)
    with _lock:
        if sid in _running:
            return False
        kept = _prepared.get(sid)
    return kept is None or kept.compaction_count != session.compaction_count


def start(session_id: str) -> bool:
    """Prepare the session's next summary in the background; False when one is already
    being prepared here."""
    with _lock:
        if session_id in _running:
            return False
        future = _executor.submit(_prepare, session_id)
        _running[session_id] = future
    future.add_done_callback(lambda done: _finished(session_id, done))
    return True


def _finished(session_id: str, future: Future[Prepared | None]) -> None:
    with _lock:
        if _running.get(session_id) is future:
            del _running[session_id]
        prepared = None if future.cancelled() or future.exception() else future.result()
        if prepared is not None:
            _prepared[session_id] = prepared
            _prepared.move_to_end(session_id)
            while len(_prepared) > MAX_PREPARED:
                _prepared.popitem(last=False)


def _prepare(session_id: str) -> Prepared | None:
    """The compaction the threshold will ask for, computed now against the soft threshold
    (so it also leaves room for what the chat adds meanwhile); nothing is written."""
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
        standing = session.agent.compaction_instructions
        instructions = records.combined_instructions(standing, None) or ""
        written = (
            notes.write_notes(session, source.messages) if session.agent.compaction_notes else ""
        )
        result = core.compress(
            source.messages,
            replace(policy, threshold_percent=soft_percent),
            client.summarize,
            focus=instructions or None,
            original_contents=source.original_contents,
        )
    except ChatSession.DoesNotExist:
        return None
    except (AuxiliaryError, core.SummaryRejected) as exc:  # the compaction itself will say
        logger.info("no summary prepared for %s: %s", session_id, exc)
        return None
    except Exception:
        logger.exception("preparing the summary of %s failed", session_id)
        return None
    finally:
        close_old_connections()
    if result.status != core.COMPACTED:
        return None
    return Prepared(
        compaction_count=session.compaction_count,
        instructions=instructions,
        fingerprint=history_fingerprint(source.messages),
        result=result,
        prepared_at=time.monotonic(),
        notes=written,
    )


def _wait_for_running(session_id: str, cancelled: threading.Event | None) -> None:
    with _lock:
        future = _running.get(session_id)
    while future is not None and not future.done():
        if cancelled is not None and cancelled.is_set():
            return
        try:
            future.result(timeout=WAIT_SLICE_SECONDS)
        except FutureTimeout:
            continue
        except Exception:  # logged by _prepare's caller; nothing prepared
            return
    if future is not None:
        _finished(session_id, future)  # its callback may not have run yet


def take(
    *,
    session: ChatSession,
    source: CompactionInput,
    policy: core.CompactionPolicy,
    instructions: str,
    cancelled: threading.Event | None = None,
) -> Taken | None:
    """The prepared compaction of ``session`` as it applies to ``source`` now, or None.

    Waits for a preparation still running. The result is the prepared summary and kept
    head, then the kept tail and every message added since (verbatim), counted again; it
    is used only when that count is under ``policy``'s threshold."""
    sid = str(session.pk)
    _wait_for_running(sid, cancelled)
    with _lock:
        prepared = _prepared.pop(sid, None)
    if prepared is None or prepared.compaction_count != session.compaction_count:
        return None
    if prepared.instructions != instructions:
        return None
    if not still_starts_with(source.messages, prepared.fingerprint):
        return None
    seen = len(prepared.fingerprint)
    messages = (*prepared.result.messages, *source.messages[seen:])
    before = core.estimate_messages(source.messages, policy.chars_per_token)
    after = core.estimate_messages(messages, policy.chars_per_token)
    if after >= policy.threshold_tokens:
        return None
    result = replace(prepared.result, messages=messages, tokens_before=before, tokens_after=after)
    return Taken(result, prepared.notes)


def wait(session_id: str, timeout: float | None = None) -> None:
    """Until the session's preparation, if one runs, has ended (tests and benchmarks)."""
    with _lock:
        future = _running.get(session_id)
    if future is None:
        return
    try:
        future.result(timeout=timeout)
    except Exception:  # logged where it happened; nothing prepared
        pass
    _finished(session_id, future)


def settle(timeout: float | None = None) -> None:
    """Wait for every preparation of this process, then drop what was prepared (tests)."""
    with _lock:
        running = list(_running)
    for session_id in running:
        wait(session_id, timeout)
    with _lock:
        _prepared.clear()
