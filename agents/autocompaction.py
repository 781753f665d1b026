"""Why automatic compaction is paused for a session (DESIGN 9): stored, then shown.

The session row keeps the seed-language sentence (it is also what an operator reads in
the admin); pages show it in their own language.
"""

from __future__ import annotations

from django.utils.translation import pgettext_lazy

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
