"""What the auxiliary model answered, and whether it is a summary we may keep (seed §9).

A summary replaces the originals in the model's context, so a bad one is worse than
none: it is rejected, asked for once more, and then the compaction fails with a reason
of its own and the history stays as it was.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SUMMARY_CUT_OFF = "summary_cut_off"
SUMMARY_TOOL_CALL_ONLY = "summary_tool_call_only"
SUMMARY_REASONING_ONLY = "summary_reasoning_only"
SUMMARY_EMPTY = "summary_empty"
SUMMARY_TOO_SHORT = "summary_too_short"
SUMMARY_LONGER_THAN_INPUT = "summary_longer_than_input"
SUMMARY_OVER_BUDGET = "summary_over_budget"
REJECTION_REASONS = frozenset(
    {
        SUMMARY_CUT_OFF,
        SUMMARY_TOOL_CALL_ONLY,
        SUMMARY_REASONING_ONLY,
        SUMMARY_EMPTY,
        SUMMARY_TOO_SHORT,
        SUMMARY_LONGER_THAN_INPUT,
        SUMMARY_OVER_BUDGET,
    }
)

# finish reasons that mean "stopped by the output limit" on the wires we speak
CUT_OFF_FINISH_REASONS = frozenset({"length", "max_tokens", "max_output_tokens"})
# the headings of the seed's structure alone: a summary may exceed a tiny input by this much
STRUCTURE_SLACK_CHARS = 400

_REASONING_BLOCK = re.compile(
    r"<(think|thinking|reasoning|thought)(?:-[\w-]*)?>.*?</\1(?:-[\w-]*)?>\s*",
    re.DOTALL | re.IGNORECASE,
)
_OPEN_REASONING = re.compile(r"^\s*<(think|thinking|reasoning|thought)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class SummaryReply:
    """One answer of the auxiliary model; a summarize callable may return it or a plain str."""

    text: str
    finish_reason: str | None = None
    had_tool_calls: bool = False
    had_reasoning: bool = False
    input_tokens: int | None = None
    output_tokens: int | None = None


class SummaryRejected(ValueError):
    """The auxiliary model's answer is not a usable summary, twice in a row."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class SummaryTooShort(SummaryRejected):
    """Empty, or shorter than the floor for what it summarizes (seed §9)."""


def as_reply(answer: str | SummaryReply | None) -> SummaryReply:
    if isinstance(answer, SummaryReply):
        return answer
    return SummaryReply(text=answer or "")


def strip_reasoning(text: str) -> str:
    """The text without <think>…</think>-style blocks some models put before the answer."""
    if "<" not in text:
        return text.strip()
    stripped = _REASONING_BLOCK.sub("", text).strip()
    if _OPEN_REASONING.match(stripped):  # an unclosed block: all of it is reasoning
        return ""
    return stripped


def min_summary_chars(policy_floor: int, input_chars: int, output_chars: int) -> int:
    """The seed's 200-character floor, relative to what is summarized: a tenth of the
    input when that is less, so a short correct summary of a short middle passes (and
    never more than half the output limit in characters: a CJK token is one character)."""
    return max(1, min(policy_floor, input_chars // 10, output_chars // 2))


def rejection(
    reply: SummaryReply,
    text: str,
    *,
    max_output_tokens: int,
    input_chars: int,
    policy_floor: int,
) -> tuple[str, str] | None:
    """(reason, message) when ``reply`` (whose usable text is ``text``) must be rejected."""
    cut = reply.finish_reason is not None and reply.finish_reason.lower() in CUT_OFF_FINISH_REASONS
    if cut or (reply.output_tokens is not None and reply.output_tokens > max_output_tokens):
        return SUMMARY_CUT_OFF, (
            f"the summary was cut off by the output limit of {max_output_tokens} tokens"
        )
    if not text:
        if reply.had_tool_calls:
            return SUMMARY_TOOL_CALL_ONLY, "the model answered with a tool call and no summary"
        if reply.had_reasoning or reply.text.strip():
            return SUMMARY_REASONING_ONLY, "the model answered with reasoning and no summary"
        return SUMMARY_EMPTY, "the summary is empty"
    floor = min_summary_chars(policy_floor, input_chars, max_output_tokens)
    if len(text) < floor:
        return SUMMARY_TOO_SHORT, (
            f"the summary has {len(text)} characters; at least {floor} are required"
        )
    if len(text) > input_chars + STRUCTURE_SLACK_CHARS:
        return SUMMARY_LONGER_THAN_INPUT, (
            f"the summary ({len(text)} characters) is longer than what it summarizes "
            f"({input_chars} characters)"
        )
    return None


def rejected(reason: str, message: str) -> SummaryRejected:
    """The exception for a second rejection (SummaryTooShort for the too-short kinds)."""
    if reason in (SUMMARY_TOO_SHORT, SUMMARY_EMPTY):
        return SummaryTooShort(reason, message)
    return SummaryRejected(reason, message)
