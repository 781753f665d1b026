"""The user's own words, kept verbatim through a compaction ("it forgot what I told it").

The rule (README, "How a compaction keeps what matters"): of the user messages in the
summarized span (earlier summaries excluded), the newest are kept verbatim, newest first,
while they fit the anchor budget — ``min(20,000, 10% of the target)`` tokens (issue 25),
and never more than what the summary left of the room it shares with them and the index. A message that fits whole stays in the conversation as it is (same
id, same place, after the summary); the first one that does not fit whole is cut in the
middle to the tokens that remain (when at least ``MIN_CUT_TOKENS`` remain) and carried
at the end of the summary message; older ones are left to the summary (Codex's anchor
rule). User messages never take part in a tool call's pairing, so keeping some of them
cannot split a call from its result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from condense.serialize import truncate_middle
from condense.tokens import estimate_tokens
from condense.types import Message

MIN_CUT_TOKENS = 32
_CUT_LABEL: dict[str, str] = {
    "zh": "[用户较早的一条消息（#{id}），原文保留，中间已截断]",
    "en": "[An earlier user message (#{id}), kept verbatim with its middle cut]",
}
# how each label starts, whatever the id: where a summary's cut anchor section begins
CUT_LABELS = tuple(label.split("{id}", 1)[0] for label in _CUT_LABEL.values())
_CUT_MARKER_CHARS = 40  # "\n...[truncated 123456 chars]...\n"


@dataclass(frozen=True, slots=True)
class Anchors:
    kept: tuple[int, ...] = ()  # indexes of user messages kept whole, in order
    cut_index: int | None = None  # index of the one carried, cut, in the summary
    cut_text: str = ""  # its section in the summary message
    tokens: int = 0  # what they add: whole messages' estimates + the cut section

    @property
    def indexes(self) -> tuple[int, ...]:
        return self.kept if self.cut_index is None else (self.cut_index, *self.kept)


def section_tokens(text: str, chars_per_token: int) -> int:
    """Upper-side tokens one more section adds to the summary message ("\\n\\n" + text)."""
    return (len(text) + 2) // chars_per_token + 1


def cut_section(message: Message, tokens: int, chars_per_token: int, language: str) -> str:
    """The message as a labelled section of at most ``tokens`` tokens, its middle cut."""
    label = _CUT_LABEL["zh" if language == "zh" else "en"].format(id=message.id or "")
    room = (tokens - 1) * chars_per_token - 2 - len(label) - 1 - _CUT_MARKER_CHARS
    if room <= 0:
        return ""
    text = truncate_middle(message.content, room - room // 2, room // 2)
    return f"{label}\n{text}"


def select_anchors(
    messages: Sequence[Message],
    candidates: Sequence[int],
    budget: int,
    *,
    chars_per_token: int,
    language: str,
    estimates: Sequence[int] | None = None,
) -> Anchors:
    """Anchors among ``candidates`` (indexes of user messages, in order) within ``budget``
    (``estimates``: each message's estimate, when the caller has them)."""
    kept: list[int] = []
    remaining = budget
    for i in reversed(candidates):
        m = messages[i]
        if not m.content.strip():
            continue
        cost = estimates[i] if estimates else estimate_tokens(m, chars_per_token)
        if cost <= remaining:
            kept.append(i)
            remaining -= cost
            continue
        if remaining >= MIN_CUT_TOKENS:
            text = cut_section(m, remaining, chars_per_token, language)
            if text:
                used = section_tokens(text, chars_per_token)
                return Anchors(tuple(reversed(kept)), i, text, budget - remaining + used)
        break
    return Anchors(tuple(reversed(kept)), None, "", budget - remaining)
