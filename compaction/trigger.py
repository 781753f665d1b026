"""When automatic compaction runs, and why it is paused (seed §2.1, §10; DESIGN 9).

Every rule of automatic compaction lives here: the threshold check, the minimum history,
the pause reasons and the failure limit. The session row keeps the seed-language pause
sentence (it is also what an operator reads in the admin); pages show it in their own
language.
"""

from __future__ import annotations

from django.utils.translation import pgettext_lazy

from agents.events import MeterReading
from agents.models import ChatSession

MIN_TAIL_MESSAGES = 3
PAUSE_AFTER_FAILURES = 2

PAUSED_FAILURES = "自动压缩已暂停：连续两次失败"
PAUSED_STILL_OVER = "自动压缩已暂停：压缩后仍超过阈值"
PAUSED_OVERSIZED = "自动压缩已暂停：单条消息过长，建议拆分"

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
}


def pause_label(reason: str) -> str:
    """The page's wording for a stored pause reason ('' when not paused)."""
    label = _LABELS.get(reason)
    return str(label) if label is not None else reason


def auto_compaction_due(*, session: ChatSession, reading: MeterReading, visible_count: int) -> bool:
    """Over the threshold, with more history than the head and a minimum tail, and not
    paused: compact before the next model call."""
    if session.auto_compaction_paused_reason or session.agent.model_channel is None:
        return False
    if not reading.over_threshold:
        return False
    return visible_count > session.agent.compaction_protect_first_n + MIN_TAIL_MESSAGES


def pause_after_failure(*, reason: str, consecutive_failures: int, current: str) -> str:
    """The pause reason after a failed compaction: an oversized message pauses at once,
    other failures after ``PAUSE_AFTER_FAILURES`` in a row."""
    if reason == "oversized_message":
        return PAUSED_OVERSIZED
    if consecutive_failures >= PAUSE_AFTER_FAILURES:
        return PAUSED_FAILURES
    return current


def pause_after_success(*, still_over_threshold: bool, manual: bool, current: str) -> str:
    """A compaction that leaves the context above the threshold pauses; a manual one that
    does not clears any pause."""
    if still_over_threshold:
        return PAUSED_STILL_OVER
    return "" if manual else current
