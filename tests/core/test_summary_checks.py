"""Issue 13, cause 5: a summary is checked before it replaces anything.

Cut off by the output limit, a tool call or reasoning with no text, empty, longer than what
it summarizes, or shorter than the floor (relative to the middle): rejected, asked for once
more with a note saying what was wrong, and a second rejection fails with its own reason.
A plain ``str`` answer still works; ``SummaryReply`` says more.
"""

from __future__ import annotations

import pytest

from condense import (
    COMPACTED,
    SUMMARY_CUT_OFF,
    SUMMARY_EMPTY,
    SUMMARY_LONGER_THAN_INPUT,
    SUMMARY_REASONING_ONLY,
    SUMMARY_TOO_SHORT,
    SUMMARY_TOOL_CALL_ONLY,
    CompactionPolicy,
    Message,
    SummaryRejected,
    SummaryReply,
    SummaryRequest,
    SummaryTooShort,
    compress,
)

GOOD = "## Goal\nFix the parser.\n## Progress\n" + "- read src/parser.py, found the bug\n" * 8


class Scripted:
    def __init__(self, *answers: str | SummaryReply) -> None:
        self.answers = list(answers)
        self.requests: list[SummaryRequest] = []

    def __call__(self, request: SummaryRequest) -> str | SummaryReply:
        self.requests.append(request)
        return self.answers[len(self.requests) - 1]


def chat(middle_chars: int) -> list[Message]:
    """Head of three, a middle of two long messages, a tail of three short ones."""
    half = middle_chars // 2
    return [
        Message("system", "sys", id=1),
        Message("user", "Fix the parser.", id=2),
        Message("assistant", "Looking.", id=3),
        Message("user", "log: " + "x" * half, id=4),
        Message("assistant", "found: " + "y" * half, id=5),
        Message("user", "Thanks.", id=6),
        Message("assistant", "Welcome.", id=7),
        Message("user", "Bye.", id=8),
    ]


POLICY = CompactionPolicy(context_window=100_000)


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (SummaryReply(GOOD, finish_reason="length"), SUMMARY_CUT_OFF),
        (SummaryReply(GOOD, finish_reason="max_tokens"), SUMMARY_CUT_OFF),
        (SummaryReply(GOOD, output_tokens=10_000), SUMMARY_CUT_OFF),
        (SummaryReply("", had_tool_calls=True), SUMMARY_TOOL_CALL_ONLY),
        (SummaryReply("<think>the user wants a summary</think>\n  "), SUMMARY_REASONING_ONLY),
        (SummaryReply("", had_reasoning=True), SUMMARY_REASONING_ONLY),
        (SummaryReply("   "), SUMMARY_EMPTY),
        ("x" * 9_000, SUMMARY_LONGER_THAN_INPUT),
    ],
)
def test_a_bad_answer_is_asked_again_once_then_fails_with_its_reason(
    reply: str | SummaryReply, reason: str
) -> None:
    model = Scripted(reply, reply)
    with pytest.raises(SummaryRejected) as raised:
        compress(chat(4_000), POLICY, model, force=True)
    assert raised.value.reason == reason
    assert [r.attempt for r in model.requests] == [0, 1]
    assert model.requests[1].prompt.startswith(model.requests[0].prompt)
    assert len(model.requests[1].prompt) > len(model.requests[0].prompt), "a note was added"
    if reason == SUMMARY_CUT_OFF:
        assert model.requests[1].target_tokens < model.requests[0].target_tokens


def test_a_good_second_answer_is_used() -> None:
    model = Scripted(SummaryReply(GOOD[:50], finish_reason="length"), SummaryReply(GOOD))
    result = compress(chat(4_000), POLICY, model, force=True)
    assert result.status == COMPACTED and result.summary_text == GOOD.strip()
    assert len(result.requests) == 2 and result.requests[1].attempt == 1


def test_reasoning_before_the_summary_is_dropped() -> None:
    model = Scripted(SummaryReply(f"<think>plan the sections</think>\n{GOOD}", had_reasoning=True))
    result = compress(chat(4_000), POLICY, model, force=True)
    assert result.summary_text == GOOD.strip()
    assert result.summary_message is not None
    assert "plan the sections" not in result.summary_message.content


def test_the_floor_is_relative_to_the_middle() -> None:
    """The seed's 200 characters, or a tenth of what is summarized when that is less: a
    short correct summary of a short middle passes; a long middle still needs 200."""
    short = "## Goal\nSay hello.\n- done"  # 25 characters
    result = compress(chat(200), POLICY, Scripted(short), force=True)
    assert result.status == COMPACTED and result.summary_text == short

    with pytest.raises(SummaryTooShort) as raised:
        compress(chat(4_000), POLICY, Scripted(short, short), force=True)
    assert raised.value.reason == SUMMARY_TOO_SHORT
    assert "at least 200" in str(raised.value)


def test_a_plain_string_and_usage_figures_are_both_accepted() -> None:
    reply = SummaryReply(GOOD, finish_reason="stop", input_tokens=1_234, output_tokens=56)
    result = compress(chat(4_000), POLICY, Scripted(reply), force=True)
    assert (result.input_tokens, result.output_tokens) == (1_234, 56)
    plain = compress(chat(4_000), POLICY, Scripted(GOOD), force=True)
    assert plain.status == COMPACTED and (plain.input_tokens, plain.output_tokens) == (0, 0)


def test_a_too_long_summary_is_asked_again_for_fewer_tokens_than_the_input_has_characters() -> None:
    """The check counts characters; a Chinese middle counts a token a character in the
    request's input tokens, so a third of those could still be longer than the input once
    written in English at the policy's rate (found by the dry-run property)."""
    policy = CompactionPolicy(context_window=100_000, chars_per_token=7)
    messages = chat(0)
    messages[3] = Message("user", "解析器文件" * 100, id=4)  # 500 characters
    model = Scripted("x" * 1_000, GOOD)
    result = compress(messages, policy, model, force=True)
    assert result.status == COMPACTED
    first, retry = model.requests
    assert retry.attempt == 1 and retry.target_tokens < first.target_tokens
    assert retry.target_tokens * policy.chars_per_token <= 500 + 100, "fits what it summarizes"
