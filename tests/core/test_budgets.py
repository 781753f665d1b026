"""Issue 13, causes 2 and 4: the compacted context fits under the threshold, whatever the
window, and keeps the user's most recent words verbatim within a budget of their own."""

from __future__ import annotations

import pytest

from condense import (
    COMPACTED,
    HEAD_TOO_LONG,
    NO_GAIN,
    PRUNED_ONLY,
    PRUNED_TOOL_PLACEHOLDER,
    TAIL_TOO_LONG,
    CompactionPolicy,
    Message,
    SummaryRequest,
    ToolCall,
    compress,
    estimate_messages,
    estimate_tokens,
    is_well_paired,
    plan,
)
from tests.support.core_conversations import FullBudget, conversation


@pytest.mark.parametrize("window", [8_000, 32_000, 128_000])
def test_a_summary_that_fills_its_budget_still_ends_under_the_threshold(window: int) -> None:
    """The seed's budget is at least 2000 and up to 12,000 tokens whatever the room; at an
    8k window the threshold leaves far less. Fitted budgets keep every compaction under."""
    policy = CompactionPolicy(context_window=window, aux_context_window=32_000)
    messages = conversation(window // 700, user_chars=2_000, tool_chars=150)  # nothing to prune
    assert estimate_messages(messages) >= policy.threshold_tokens
    model = FullBudget()
    result = compress(messages, policy, model)
    assert result.status == COMPACTED
    assert result.tokens_after < policy.threshold_tokens
    planned = plan(messages, policy)
    assert planned.summary_budget <= planned.free_tokens
    assert all(r.max_output_tokens <= policy.summary_cap for r in model.requests)


def test_the_summary_budget_fits_the_auxiliary_models_window() -> None:
    policy = CompactionPolicy(context_window=1_000_000, aux_context_window=16_000)
    planned = plan(conversation(400, tool_chars=8000), policy, force=True)
    assert planned.status == COMPACTED
    assert planned.summary_budget == policy.summary_cap == (16_000 - 1000) // 3


def test_a_head_that_leaves_no_room_fails_with_a_reason_and_no_model_call() -> None:
    policy = CompactionPolicy(context_window=8_000, protect_first_n=3)
    messages = conversation(30)
    big = "h" * 4 * 5_500  # 5,510 tokens in the protected first user message: T is 5,600
    messages[1] = Message("user", big, id=2)
    model = FullBudget()
    result = compress(messages, policy, model)
    assert result.status == HEAD_TOO_LONG
    assert result.messages == tuple(messages) and not model.requests
    assert result.detail and "5600" in result.detail.replace(",", "")


def test_the_tail_gives_up_old_groups_before_the_compaction_fails() -> None:
    """The seed keeps at least three tail messages; when those leave no room for a summary
    the tail shrinks to its last group instead of ending above the threshold."""
    policy = CompactionPolicy(context_window=8_000)
    big = "b" * 4 * 2_600  # 2,610 tokens: two of them among the last three messages
    messages = [
        *conversation(20, tool_chars=150),
        Message("assistant", "", (ToolCall("big", "read_file", "{}"),), id=900),
        Message("tool", big, tool_call_id="big", id=901),
        Message("assistant", big, id=902),
        Message("user", "and now?", id=903),
    ]
    result = compress(messages, policy, FullBudget())
    assert result.status == COMPACTED
    assert result.tokens_after < policy.threshold_tokens
    assert result.span is not None and len(messages) - result.span.end < 3
    assert result.messages[-1] == messages[-1]


def test_a_last_group_too_large_for_any_summary_fails_with_a_reason() -> None:
    policy = CompactionPolicy(context_window=8_000)
    messages = conversation(20)
    calls = (ToolCall("one", "read_file", "{}"), ToolCall("two", "read_file", "{}"))
    half = "z" * 4 * 2_700  # 2 × 2,710 tokens: neither alone over the threshold
    messages += [
        Message("assistant", "", calls, id=900),
        Message("tool", half, tool_call_id="one", id=901),
        Message("tool", half, tool_call_id="two", id=902),
    ]
    result = compress(messages, policy, FullBudget())
    assert result.status == TAIL_TOO_LONG and result.detail
    assert result.messages == tuple(messages)


def test_a_forced_compaction_that_cannot_beat_pruning_prunes_without_a_request() -> None:
    """Issue 25: a summary that could not leave less than pruning alone (less the minimum
    gain) is decided before any request: the context pruning alone makes is returned (it
    is smaller than the input, each pruned output a stub), not the unpruned original, and
    the model is never called (it used to be called, its answer thrown away)."""
    policy = CompactionPolicy(context_window=20_000, protect_first_n=1, min_tail_messages=1)
    messages = [
        Message("system", "s", id=1),
        Message("user", "go", id=2),
        Message("assistant", "", (ToolCall("x", "read_file", "{}"),), id=3),
        Message("tool", "r" * 4_000, tool_call_id="x", id=4),  # 1,010 tokens, pruned: 14
        Message("assistant", "done", id=5),
        Message("user", "and then?", id=6),
        Message("assistant", "ok " * 4_000, id=7),  # 3,010: over the tail budget (2,800)
    ]
    p = plan(messages, policy, force=True)
    assert p.pruned_indexes == (3,)

    asked: list[SummaryRequest] = []

    def verbose(request: SummaryRequest) -> str:  # as long as the request allows
        asked.append(request)
        return ("## Goal\n" + "- a detail worth keeping\n" * 2_000)[: request.target_tokens * 4]

    result = compress(messages, policy, verbose, force=True)
    assert result.status == PRUNED_ONLY, result.status
    assert not asked and not result.requests and result.discarded_requests == 0
    assert result.pruned_ids == (4,)
    assert result.messages[3].content == f"{PRUNED_TOOL_PLACEHOLDER} read_file #4"
    assert result.tokens_after == p.tokens_after_prune < result.tokens_before

    nothing_to_prune = [m for m in messages if m.id not in (3, 4)]
    assert compress(nothing_to_prune, policy, verbose, force=True).status == NO_GAIN
    assert not asked


def test_the_newest_middle_user_messages_stay_verbatim_within_their_budget() -> None:
    """Anchors: newest first, whole while they fit min(20,000, 10% of the target); the
    first that does not fit is cut in the middle into the summary message; older ones are
    summarized. They count against the threshold and never split a tool pair."""
    policy = CompactionPolicy(context_window=32_000)
    messages = conversation(60, user_chars=1_200, tool_chars=150)  # users of 310 tokens
    result = compress(messages, policy, FullBudget())
    assert result.status == COMPACTED and result.span is not None
    budget = min(20_000, policy.target_tokens // 10)  # 10% of 60% of 22,400: 1,344
    middle_users = [m for m in messages[result.span.start : result.span.end] if m.role == "user"]
    kept = [m for m in middle_users if m.id in result.anchored_ids]
    assert kept == middle_users[-len(kept) :], "the newest ones"
    assert sum(estimate_tokens(m) for m in kept) <= budget
    assert len(kept) == budget // estimate_tokens(middle_users[-1])
    for m in kept:
        assert m in result.messages and m.id not in result.summarized_ids
    cut = middle_users[-len(kept) - 1]
    assert cut.id in result.summarized_ids
    summary = result.summary_message
    assert summary is not None
    label = f"[An earlier user message (#{cut.id}), kept verbatim with its middle cut]"
    assert label in summary.content
    section = summary.content.split(label + "\n", 1)[1]
    head, _, tail = section.partition("\n...[truncated ")
    assert cut.content.startswith(head) and cut.content.endswith(tail.split("]...\n", 1)[1])
    assert result.tokens_after < policy.threshold_tokens
    assert result.tokens_after == estimate_messages(result.messages)
    assert is_well_paired(result.messages)


def test_the_anchor_budget_follows_the_window() -> None:
    """A tenth of the target (60% of the threshold), at most 20,000 tokens (issue 25: it
    was a tenth of the threshold)."""
    for window, expected in [(8_000, 336), (32_000, 1_344), (128_000, 5_376), (800_000, 20_000)]:
        assert CompactionPolicy(context_window=window).user_anchor_budget == expected
