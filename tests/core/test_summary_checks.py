"""Issues 13 (cause 5) and 25 (honest checks): a summary is checked before it replaces
anything.

Cut off by the output limit, a tool call or reasoning with no text, empty, longer than what
it summarizes, shorter than the floor (in tokens, relative to the middle), or not a summary
at all (a chat reply, a refusal, a meta-answer, no section of the template): rejected,
asked for once more with a note saying what was wrong, and a second rejection fails with
its own reason. At most one answer per compaction is thrown away. A plain ``str`` answer
still works; ``SummaryReply`` says more.
"""

from __future__ import annotations

import pytest

from condense import (
    COMPACTED,
    REJECTION_REASONS,
    SUMMARY_CHAT_REPLY,
    SUMMARY_CUT_OFF,
    SUMMARY_EMPTY,
    SUMMARY_LONGER_THAN_INPUT,
    SUMMARY_META_ANSWER,
    SUMMARY_MISSING_SECTIONS,
    SUMMARY_REASONING_ONLY,
    SUMMARY_REFUSED,
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
        ("## Goal\n" + "x" * 9_000, SUMMARY_LONGER_THAN_INPUT),
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


def test_the_floor_is_in_tokens_and_relative_to_the_middle() -> None:
    """Issue 25: 32 tokens (conservative: a CJK character is one), or a tenth of what is
    summarized when that is less: a short correct summary of a short middle passes; a
    long middle still needs 32 tokens."""
    short = (  # 113 characters: 29 tokens
        "## Goal\nFix the parser in src/parser.py.\n"
        "## Progress\n- the bug is found at line 142; the fix and a test are next\n"
    )
    model = Scripted(short)
    result = compress(chat(1_000), POLICY, model, force=True)  # a floor of 265 // 10 tokens
    assert model.requests[0].max_output_tokens > 52
    assert result.status == COMPACTED and result.summary_text == short.strip()

    with pytest.raises(SummaryTooShort) as raised:
        compress(chat(4_000), POLICY, Scripted(short, short), force=True)
    assert raised.value.reason == SUMMARY_TOO_SHORT
    assert "at least 32" in str(raised.value)


# issue 25: a dense summary holding every key value, in 168 Chinese characters and in 197
# English ones; both were refused twice by the 200-character floor
DENSE_ZH = (
    "## 目标\n修复 src/parser.py:142 越界读取，发布 v2.3.1。\n## 进度\n已修复；"
    "test_tokenizer_eof 通过，311 个测试全绿。\n## 关键上下文\nDEPLOY_KEY=K-7731；"
    "staging-eu-2；pg15；超时30s。\n## 下一步\n打标签 v2.3.1，部署 prod-eu-2"
)
DENSE_EN = (
    "## Goal\nShip v2.3.1: fix off-by-one in src/parser.py:142.\n## Progress\nFixed; 311 "
    "tests pass.\n## Critical context\nDEPLOY_KEY=K-7731, staging-eu-2, pg15, 30s.\n"
    "## Next\nTag v2.3.1, deploy to prod-eu-2."
)
KEY_VALUES = ("src/parser.py:142", "v2.3.1", "DEPLOY_KEY=K-7731", "staging-eu-2", "prod-eu-2")


def chinese_chat(middle_chars: int) -> list[Message]:
    unit = "解析器在第142行越界读取，"
    body = (unit * (middle_chars // len(unit) + 1))[: middle_chars // 2]
    return [
        Message("system", "系统", id=1),
        Message("user", "修复解析器。", id=2),
        Message("assistant", "好的，我看一下。", id=3),
        Message("user", "日志：" + body, id=4),
        Message("assistant", "发现：" + body, id=5),
        Message("user", "谢谢。", id=6),
        Message("assistant", "不客气。", id=7),
        Message("user", "再见。", id=8),
    ]


@pytest.mark.parametrize(
    ("summary", "messages", "language"),
    [(DENSE_ZH, chinese_chat(4_000), "zh"), (DENSE_EN, chat(4_000), "en")],
    ids=["zh-168", "en-197"],
)
def test_a_dense_summary_passes_the_floor_in_either_language(
    summary: str, messages: list[Message], language: str
) -> None:
    assert len(summary) == (168 if language == "zh" else 197)
    model = Scripted(summary)
    result = compress(messages, POLICY, model, force=True)
    assert result.status == COMPACTED and result.language == language
    assert len(model.requests) == 1 and result.discarded_requests == 0
    assert result.summary_message is not None
    assert all(value in result.summary_message.content for value in KEY_VALUES)


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (
            "Sure! I have read the partial summaries and merged them for you, keeping the "
            "order of the parts. Let me know if you need anything else, or a shorter version.",
            SUMMARY_CHAT_REPLY,
        ),
        (
            "好的！我已经仔细阅读了上面的各个分段摘要，并按照顺序为您合并成了一份完整的交接摘要。"
            "还有什么需要我做的吗？",
            SUMMARY_CHAT_REPLY,
        ),
        (
            "I'm sorry, but I can't help with summarizing this conversation: it contains "
            "material that I am not able to process or repeat in a summary of any kind.",
            SUMMARY_REFUSED,
        ),
        (
            "抱歉，我无法完成这个请求：这段对话中包含我不能处理的内容，因此无法为它撰写任何形式的摘要。",
            SUMMARY_REFUSED,
        ),
        (
            "The summary above already covers every turn of the conversation; no changes "
            "are needed and nothing new has to be added to it.",
            SUMMARY_META_ANSWER,
        ),
        (
            "## Goal\n[What the user wants to achieve]\n## Progress\n### Done\n[Work completed -- "
            "with concrete file paths, commands run, results obtained]\n## Next steps\n"
            "[What needs to be done to continue]",
            SUMMARY_META_ANSWER,
        ),
        (
            "The user asked to fix the parser; the assistant read src/parser.py, found an "
            "off-by-one at line 142, fixed it, and all 311 tests pass now. " * 2,
            SUMMARY_MISSING_SECTIONS,
        ),
    ],
    ids=["chat", "chat-zh", "refusal", "refusal-zh", "meta", "template-echo", "no-sections"],
)
def test_an_answer_that_is_not_a_summary_is_asked_again_once_then_fails(
    answer: str, reason: str
) -> None:
    """Issue 25: judged by what it is, not only its length — an answer long enough to pass
    the floor, each kind with its own reason, asked for once more with a note that the
    answer was not the summary."""
    model = Scripted(answer, answer)
    with pytest.raises(SummaryRejected) as raised:
        compress(chat(4_000), POLICY, model, force=True)
    assert raised.value.reason == reason
    assert [r.attempt for r in model.requests] == [0, 1]
    assert "Your previous answer was not the summary" in model.requests[1].prompt


def test_not_a_summary_reasons_are_distinct_and_known() -> None:
    new = {SUMMARY_CHAT_REPLY, SUMMARY_REFUSED, SUMMARY_META_ANSWER, SUMMARY_MISSING_SECTIONS}
    assert len(new) == 4 and new <= REJECTION_REASONS
    assert not new & {SUMMARY_TOO_SHORT, SUMMARY_EMPTY, SUMMARY_REASONING_ONLY}


@pytest.mark.parametrize(
    "answer",
    [
        "## Objectif\nCorriger src/parser.py:142 ; 311 tests passent.\n## Étapes suivantes\n"
        "Publier v2.3.1 sur prod-eu-2 avec DEPLOY_KEY=K-7731.",
        "**Objectif :** corriger src/parser.py:142 ; 311 tests passent.\n**Étapes suivantes :** "
        "publier v2.3.1 sur prod-eu-2 avec DEPLOY_KEY=K-7731.",
    ],
    ids=["headings", "bold-labels"],
)
def test_the_sections_may_be_in_any_language(answer: str) -> None:
    result = compress(chat(4_000), POLICY, Scripted(answer), force=True)
    assert result.status == COMPACTED and result.summary_text == answer


def test_a_chat_reply_then_a_summary_keeps_the_summary_and_counts_one_discarded() -> None:
    reply = (
        "Sure! I read every turn and I am happy to help; let me know if you want the "
        "summary in a different format or with more detail."
    )
    model = Scripted(reply, GOOD)
    result = compress(chat(4_000), POLICY, model, force=True)
    assert result.status == COMPACTED and result.summary_text == GOOD.strip()
    assert result.discarded_requests == 1 and len(result.requests) == 2


def test_at_most_one_answer_is_thrown_away_per_compaction() -> None:
    """Issue 25: the retry is the compaction's, not each request's. Two requests (a
    sequential fold of two chunks), each answered badly once: the first is asked again,
    the second rejection fails the compaction instead of a second discarded answer."""
    policy = CompactionPolicy(context_window=100_000, summary_input_budget=3_000)
    messages = chat(8_000)
    cut = SummaryReply(GOOD, finish_reason="length")
    model = Scripted(cut, GOOD, cut, GOOD)
    with pytest.raises(SummaryRejected) as raised:
        compress(messages, policy, model, force=True)
    assert raised.value.reason == SUMMARY_CUT_OFF
    assert [(r.chunk_index, r.attempt) for r in model.requests] == [(0, 0), (0, 1), (1, 0)]


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
    messages[3] = Message("user", "解析器文件" * 200, id=4)  # 1,000 characters
    model = Scripted("## Goal\n" + "x" * 2_000, GOOD)
    result = compress(messages, policy, model, force=True)
    assert result.status == COMPACTED
    first, retry = model.requests
    assert retry.attempt == 1 and retry.target_tokens <= first.target_tokens
    assert retry.target_tokens * policy.chars_per_token <= 1_000 + 100, "fits what it summarizes"
