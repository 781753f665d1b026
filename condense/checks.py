"""What the auxiliary model answered, and whether it is a summary we may keep (seed §9).

A summary replaces the originals in the model's context, so a bad one is worse than
none: it is rejected, asked for once more, and then the compaction fails with a reason
of its own and the history stays as it was.

Issue 25: the checks judge what an answer *is*, not only its form and length. A summary
has the template's structure — at least one of its sections, as a heading in whatever
language the summary is written (``## 目标``, ``## Goal``, ``## Objectif``, or a bold
label line) — and is not the template echoed back with its placeholders. An answer
without one is a chat reply (a greeting, an offer to help), a refusal, a meta-answer
(about the summary or the task instead of it) or just unstructured, each its own reason.
The short-summary floor is in tokens (conservative: a CJK character is one), relative to
what is summarized, so a dense Chinese summary counts as what it holds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from condense.tokens import conservative_tokens

SUMMARY_CUT_OFF = "summary_cut_off"
SUMMARY_TOOL_CALL_ONLY = "summary_tool_call_only"
SUMMARY_REASONING_ONLY = "summary_reasoning_only"
SUMMARY_EMPTY = "summary_empty"
SUMMARY_TOO_SHORT = "summary_too_short"
SUMMARY_LONGER_THAN_INPUT = "summary_longer_than_input"
SUMMARY_OVER_BUDGET = "summary_over_budget"
# issue 25: what an answer is, when it is not a summary
SUMMARY_CHAT_REPLY = "summary_chat_reply"
SUMMARY_REFUSED = "summary_refused"
SUMMARY_META_ANSWER = "summary_meta_answer"
SUMMARY_MISSING_SECTIONS = "summary_missing_sections"
NOT_A_SUMMARY_REASONS = frozenset(
    {SUMMARY_CHAT_REPLY, SUMMARY_REFUSED, SUMMARY_META_ANSWER, SUMMARY_MISSING_SECTIONS}
)
REJECTION_REASONS = frozenset(
    {
        SUMMARY_CUT_OFF,
        SUMMARY_TOOL_CALL_ONLY,
        SUMMARY_REASONING_ONLY,
        SUMMARY_EMPTY,
        SUMMARY_TOO_SHORT,
        SUMMARY_LONGER_THAN_INPUT,
        SUMMARY_OVER_BUDGET,
        *NOT_A_SUMMARY_REASONS,
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

# a section of the template: a Markdown heading, or a line that opens with a bold label
_SECTION = re.compile(r"^[ \t]{0,3}(?:#{1,6}[ \t]*\S|\*\*[^*\n]{1,80}\*\*)", re.MULTILINE)
# the template's placeholders ("[What the user wants to achieve]"), echoed back unfilled
_PLACEHOLDERS = (
    "[What the user wants to achieve]",
    "[Work completed -- with concrete file paths",
    "[What needs to be done to continue]",
    "[Important technical decisions and why]",
    "[用户想达成什么]",
    "[完成的工作 -- 包含具体文件路径",
    "[需要做什么以继续工作]",
    "[重要的技术决策及原因]",
)
_OPENING_CHARS = 240  # how much of an answer's start says what it is
_REFUSAL = re.compile(
    r"^\W*(?:i'?m sorry|i am sorry|sorry\b|i apologi[sz]e|unfortunately|i can(?:no|')t|"
    r"i cannot|i'?m (?:not able|unable)|i am (?:not able|unable)|i won'?t|i will not|"
    r"as an ai|很抱歉|抱歉|对不起|我无法|我不能|无法(?:为|帮|完成|提供)|不能(?:为|帮))",
    re.IGNORECASE,
)
_CHAT = re.compile(
    r"^\W*(?:sure|certainly|of course|absolutely|hi\b|hello|hey\b|thanks|thank you|great|"
    r"ok(?:ay)?\b|got it|happy to|i'?d be happy|glad to|好的|当然|没问题|你好|您好|谢谢|"
    r"收到|明白了?|很高兴)",
    re.IGNORECASE,
)
_OFFER = re.compile(
    r"let me know|feel free to|how can i help|anything else|would you like|"
    r"需要我|还有什么|请告诉我|随时告诉",
    re.IGNORECASE,
)
_META = re.compile(
    r"^\W*(?:here(?:'s| is| are)|below is|this (?:is|summary)|the (?:summary|conversation|"
    r"partial summaries|turns|previous summary)|i(?:'ve| have) (?:merged|updated|summari[sz]ed|"
    r"combined|read)|no (?:new|changes?|updates?)\b|nothing (?:new|to)|以下是|这是|上述|"
    r"该对话|这段对话|摘要如下|已(?:合并|更新|总结)|没有(?:新的|需要))",
    re.IGNORECASE,
)


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


def min_summary_tokens(policy_floor: int, input_tokens: int, max_output_tokens: int) -> int:
    """The short-summary floor in tokens: the policy's (32, about the seed's 200 English
    characters), or a tenth of what is summarized when that is less, so a short correct
    summary of a short middle passes; never more than a quarter of the output limit."""
    return max(1, min(policy_floor, input_tokens // 10, max_output_tokens // 4))


def sections(text: str) -> int:
    """How many of the template's sections ``text`` opens (headings, bold label lines)."""
    return len(_SECTION.findall(text))


def not_a_summary(text: str) -> tuple[str, str] | None:
    """(reason, message) when ``text`` is not a summary: the template echoed back, or an
    answer without any of its sections — a refusal, a chat reply, a meta-answer, or just
    unstructured text."""
    echoed = sum(placeholder in text for placeholder in _PLACEHOLDERS)
    if echoed >= 2:
        return SUMMARY_META_ANSWER, "the answer is the summary template, its placeholders unfilled"
    if sections(text):
        return None
    opening = text[:_OPENING_CHARS]
    if _REFUSAL.search(opening):
        return SUMMARY_REFUSED, "the model refused to write the summary"
    if _CHAT.search(opening) or _OFFER.search(text):
        return SUMMARY_CHAT_REPLY, "the model answered as in a chat, not with a summary"
    if _META.search(opening):
        return SUMMARY_META_ANSWER, "the model wrote about the summary instead of writing it"
    return SUMMARY_MISSING_SECTIONS, "the summary has none of the template's sections"


def _empty(reply: SummaryReply) -> tuple[str, str]:
    """Why an answer with no usable text is rejected."""
    if reply.had_tool_calls:
        return SUMMARY_TOOL_CALL_ONLY, "the model answered with a tool call and no summary"
    if reply.had_reasoning or reply.text.strip():
        return SUMMARY_REASONING_ONLY, "the model answered with reasoning and no summary"
    return SUMMARY_EMPTY, "the summary is empty"


def rejection(
    reply: SummaryReply,
    text: str,
    *,
    max_output_tokens: int,
    input_chars: int,
    input_tokens: int,
    policy_floor: int,
) -> tuple[str, str] | None:
    """(reason, message) when ``reply`` (whose usable text is ``text``) must be rejected;
    ``input_tokens``: what it summarizes, conservatively counted."""
    cut = reply.finish_reason is not None and reply.finish_reason.lower() in CUT_OFF_FINISH_REASONS
    if cut or (reply.output_tokens is not None and reply.output_tokens > max_output_tokens):
        return SUMMARY_CUT_OFF, (
            f"the summary was cut off by the output limit of {max_output_tokens} tokens"
        )
    if not text:
        return _empty(reply)
    floor = min_summary_tokens(policy_floor, input_tokens, max_output_tokens)
    tokens = conservative_tokens(text)
    if tokens < floor:
        return SUMMARY_TOO_SHORT, (
            f"the summary has {tokens} tokens; at least {floor} are required"
        )
    what = not_a_summary(text)
    if what is not None:
        return what
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
