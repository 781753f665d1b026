"""When automatic compaction runs, and why it is paused (seed §2.1, §10; DESIGN 9).

Every rule of automatic compaction lives here: the threshold check, the minimum history,
the pause reasons and the failure limit. The session row keeps the seed-language pause
sentence (it is also what an operator reads in the admin); pages show it in their own
language.
"""

from __future__ import annotations

from django.utils.translation import pgettext_lazy

from agents import services
from agents.events import CompactionSuggested, MeterReading, TokenUpdate
from agents.models import ChatSession, CompactionMode
from condense.policy import MIN_TAIL_MESSAGES

PAUSE_AFTER_FAILURES = 2

PAUSED_FAILURES = "自动压缩已暂停：连续两次失败"
PAUSED_STILL_OVER = "自动压缩已暂停：压缩后仍超过阈值"
PAUSED_OVERSIZED = "自动压缩已暂停：单条消息过长，建议拆分"
PAUSED_UNDONE = "自动压缩已暂停：一次自动压缩已撤销"

_LABELS = {
    PAUSED_FAILURES: pgettext_lazy(
        "chat page", "Automatic compaction is paused: it failed twice in a row."
    ),
    PAUSED_STILL_OVER: pgettext_lazy(
        "chat page", "Automatic compaction is paused: the context stayed above the threshold."
    ),
    PAUSED_OVERSIZED: pgettext_lazy(
        "chat page", "Automatic compaction is paused: one message is too large; split it."
    ),
    PAUSED_UNDONE: pgettext_lazy(
        "chat page",
        "Automatic compaction is paused: an automatic compaction was undone; /compact resumes it.",
    ),
}


def pause_label(reason: str) -> str:
    """The page's wording for a stored pause reason ('' when not paused)."""
    label = _LABELS.get(reason)
    return str(label) if label is not None else reason


def _at_threshold(*, session: ChatSession, reading: MeterReading, visible_count: int) -> bool:
    """Over the threshold — the percentage or the agent's token cap, whichever comes first
    (``MeterReading.threshold_tokens``) — with more history than the head and a minimum
    tail."""
    if session.channel is None or not reading.over_threshold:
        return False
    return visible_count > session.agent.compaction_protect_first_n + MIN_TAIL_MESSAGES


def auto_compaction_due(*, session: ChatSession, reading: MeterReading, visible_count: int) -> bool:
    """At the threshold, in mode ``auto``, and not paused: compact before the next model
    call. Modes ``ask`` and ``off`` never compact on their own (issue 17 item 4)."""
    if session.agent.compaction_mode != CompactionMode.AUTO:
        return False
    if session.auto_compaction_paused_reason:
        return False
    return _at_threshold(session=session, reading=reading, visible_count=visible_count)


def compaction_suggestion_due(
    *, session: ChatSession, reading: MeterReading, visible_count: int
) -> bool:
    """Mode ``ask``: at the threshold and not suggested since the last compaction."""
    if session.agent.compaction_mode != CompactionMode.ASK:
        return False
    if session.compaction_suggested_at is not None:
        return False
    return _at_threshold(session=session, reading=reading, visible_count=visible_count)


def suggestion_standing(*, session: ChatSession, reading: MeterReading) -> bool:
    """Mode ``ask`` suggested a compaction that has not happened, and the context is still
    at the threshold: the page asks again on load."""
    return (
        session.agent.compaction_mode == CompactionMode.ASK
        and session.compaction_suggested_at is not None
        and reading.over_threshold
    )


def compaction_suggest(
    *, session: ChatSession, reading: MeterReading, visible_count: int
) -> CompactionSuggested | None:
    """The ``compaction_suggested`` event when it is due, marking the session so it is sent
    once per crossing (a conditional UPDATE: of two turns at once, one sends it). A
    compaction clears the mark (``agents.services.compaction_apply``), as does an undo."""
    if not compaction_suggestion_due(session=session, reading=reading, visible_count=visible_count):
        return None
    if not services.session_suggestion_mark(session=session):
        return None
    sid = str(session.pk)
    return CompactionSuggested(sid, TokenUpdate.of(sid, reading).to_json()["context"])


def pause_after_failure(*, reason: str, consecutive_failures: int, current: str) -> str:
    """The pause reason after a failed compaction: an oversized message pauses at once,
    other failures after ``PAUSE_AFTER_FAILURES`` in a row."""
    if reason == "oversized_message":
        return PAUSED_OVERSIZED
    if consecutive_failures >= PAUSE_AFTER_FAILURES:
        return PAUSED_FAILURES
    return current


def pause_after_undo(*, trigger: str, current: str) -> str:
    """Undoing an automatic compaction pauses automatic compaction (it would only run again
    at the next turn, over the same messages); ``/compact`` resumes it."""
    return PAUSED_UNDONE if trigger == "auto" else current


def pause_after_success(*, still_over_threshold: bool, manual: bool, current: str) -> str:
    """A compaction that leaves the context above the threshold pauses; a manual one that
    does not clears any pause."""
    if still_over_threshold:
        return PAUSED_STILL_OVER
    return "" if manual else current
