"""Issue 17, item 2: a pinned message is never summarized away.

It stays verbatim in the compacted context (in its place in the head or the tail, or
right after the summary when it was in the summarized middle), with its whole tool
group, and it counts against the threshold; pruning never replaces a pinned tool output.
"""

from __future__ import annotations

from dataclasses import replace

from condense import (
    COMPACTED,
    FAILURE_STATUSES,
    NOTHING_TO_COMPACT,
    PINS_TOO_LONG,
    PRUNED_ONLY,
    PRUNED_TOOL_PLACEHOLDER,
    SUMMARY_PREFIX,
    CompactionPolicy,
    Message,
    SummaryRequest,
    ToolCall,
    compress,
    estimate_messages,
    estimate_tokens,
    is_well_paired,
    pinned_indexes,
    plan,
)
from condense.pruning import prune_indexes
from tests.support.core_conversations import FullBudget, conversation

POLICY = CompactionPolicy(context_window=32_000)


def pin(messages: list[Message], *ids: int) -> list[Message]:
    return [replace(m, pinned=True) if m.id in ids else m for m in messages]


def by_id(messages: tuple[Message, ...] | list[Message], message_id: int) -> Message:
    return next(m for m in messages if m.id == message_id)


class Recorder:
    """A summarizer that keeps every prompt it is sent."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def __call__(self, request: SummaryRequest) -> str:
        self.prompts.append(request.prompt)
        return "## Goal\nkeep going\n" + "- a decision and its reason\n" * 20


def after_summary(result_messages: tuple[Message, ...]) -> list[int | None]:
    """The ids after the summary message."""
    at = next(i for i, m in enumerate(result_messages) if m.is_summary)
    return [m.id for m in result_messages[at + 1 :]]


def test_a_pinned_user_message_of_the_middle_stays_verbatim_right_after_the_summary() -> None:
    messages = pin(conversation(30), 22, 62)  # "U5 …" and "U15 …", deep in the middle
    result = compress(messages, POLICY, Recorder(), force=True)
    assert result.status == COMPACTED
    assert 22 not in result.summarized_ids and 62 not in result.summarized_ids
    assert result.pinned_ids == (22, 62)
    assert by_id(result.messages, 22) == by_id(messages, 22), "verbatim"
    assert after_summary(result.messages)[:2] == [22, 62], "right after it, in their order"
    assert result.tokens_after < POLICY.threshold_tokens


def test_a_pin_at_the_very_start_of_the_middle_still_follows_the_summary() -> None:
    policy = CompactionPolicy(context_window=32_000, protect_first_n=1)
    messages = pin(conversation(30), 2)  # the first message after the head
    result = compress(messages, policy, Recorder(), force=True)
    assert result.status == COMPACTED and result.span is not None
    assert result.span.start == 1
    assert [m.id for m in result.messages[:3]] == [1, None, 2]


def test_a_pinned_tool_call_keeps_its_results_and_a_pinned_result_its_call() -> None:
    messages = conversation(30)
    # turn t: user 4t+2, assistant calling 4t+3, its result 4t+4, assistant 4t+5
    call = messages[22]
    assert call.id == 23 and call.tool_calls
    messages[22] = replace(call, tool_calls=(*call.tool_calls, ToolCall("c5b", "read_file")))
    messages.insert(24, Message("tool", "second result", tool_call_id="c5b", id=900))
    messages = pin(messages, 23, 40)  # turn 5's call; turn 9's result
    assert [messages[i].id for i in pinned_indexes(messages)] == [23, 24, 900, 39, 40]
    result = compress(messages, POLICY, Recorder(), force=True)
    assert result.status == COMPACTED
    ids = [m.id for m in result.messages]
    at = ids.index(23)
    assert ids[at : at + 3] == [23, 24, 900], "the call and all its results"
    at = ids.index(39)
    assert ids[at : at + 2] == [39, 40], "the result with its call"
    assert is_well_paired(result.messages)
    assert not {23, 24, 900, 39, 40} & set(result.summarized_ids)
    assert result.pinned_ids == (23, 24, 900, 39, 40)


def test_a_pinned_result_that_answers_no_call_keeps_nothing() -> None:
    """No model accepts it: it is dropped like any orphan, and pins nothing else."""
    messages = conversation(3)
    orphan = Message("tool", "late", tool_call_id="gone", id=700, pinned=True)
    messages.insert(4, orphan)  # after turn 0's call and its result
    assert pinned_indexes(messages) == ()
    assert pinned_indexes([replace(messages[2], pinned=True), *messages[3:5]]) == (0, 1)


def test_pins_count_against_the_threshold() -> None:
    messages = conversation(40, user_chars=2_000, tool_chars=150)  # nothing to prune
    assert estimate_messages(messages) > POLICY.threshold_tokens
    pinned = pin(messages, *range(22, 122, 8))  # 13 user messages of the middle
    unpinned_plan = plan(messages, POLICY)
    pinned_plan = plan(pinned, POLICY)
    pin_tokens = sum(estimate_tokens(m) for m in pinned if m.pinned)
    assert pinned_plan.pin_tokens == pin_tokens
    assert pinned_plan.free_tokens == unpinned_plan.free_tokens - pin_tokens
    assert pinned_plan.estimated_tokens_after < POLICY.threshold_tokens
    result = compress(pinned, POLICY, FullBudget())
    assert result.status == COMPACTED
    assert result.tokens_after == estimate_messages(result.messages) < POLICY.threshold_tokens
    kept = {m.id for m in result.messages}
    assert all(m.id in kept for m in pinned if m.pinned)


def test_pins_that_leave_no_room_fail_with_their_own_reason() -> None:
    policy = CompactionPolicy(context_window=8_000)
    messages = conversation(30)
    messages[41] = replace(messages[41], content="P " + "p" * 4 * 5_000, pinned=True)  # U10
    planned = plan(messages, policy, force=True)
    assert planned.status == PINS_TOO_LONG and PINS_TOO_LONG in FAILURE_STATUSES
    assert planned.detail and "pinned" in planned.detail
    model = Recorder()
    result = compress(messages, policy, model, force=True)
    assert result.status == PINS_TOO_LONG
    assert result.messages == tuple(messages) and not result.summarized_ids
    assert not model.prompts, "no model call"
    # unpinned, the same conversation compacts
    unpinned = [replace(m, pinned=False) for m in messages]
    assert compress(unpinned, policy, Recorder(), force=True).status == COMPACTED


def test_pruning_never_replaces_a_pinned_tool_output() -> None:
    messages = pin(conversation(40, tool_chars=6_000), 23, 64)  # a call; a result
    estimates = [estimate_tokens(m) for m in messages]
    pruned = prune_indexes(messages, estimates, POLICY)
    unpinned = prune_indexes(conversation(40, tool_chars=6_000), estimates, POLICY)
    positions = {m.id: i for i, m in enumerate(messages)}
    assert positions[24] in unpinned and positions[64] in unpinned, "both would be pruned"
    assert positions[24] not in pruned and positions[64] not in pruned
    policy = CompactionPolicy(context_window=200_000, threshold_percent=30)
    result = compress(messages, policy, Recorder())
    assert result.status == PRUNED_ONLY
    assert by_id(result.messages, 24) == by_id(messages, 24)
    assert by_id(result.messages, 64) == by_id(messages, 64)
    assert 24 not in result.pruned_ids and 64 not in result.pruned_ids
    stub = by_id(result.messages, 28).content
    assert stub == f"{PRUNED_TOOL_PLACEHOLDER} read_file #28", "an unpinned one is"


def test_the_summarizer_does_not_read_the_pins_which_stay() -> None:
    messages = conversation(30)
    messages[40] = replace(messages[40], content="PINNED-WORDS " + "w" * 300, pinned=True)  # A9
    model = Recorder()
    result = compress(messages, POLICY, model, force=True)
    assert result.status == COMPACTED
    assert not any("PINNED-WORDS" in prompt for prompt in model.prompts)
    assert any("U12 " in prompt for prompt in model.prompts), "its neighbours are read"


def test_a_pinned_earlier_summary_is_kept_not_folded() -> None:
    messages = conversation(30)
    earlier = Message(
        "user", f"{SUMMARY_PREFIX}\n\n## Goal\nEARLIER " + "e" * 800, id=800, is_summary=True
    )
    messages.insert(20, replace(earlier, pinned=True))
    result = compress(messages, POLICY, Recorder(), force=True)
    assert result.status == COMPACTED
    assert by_id(result.messages, 800) == messages[20]
    assert 800 not in result.summarized_ids and 800 not in result.folded_summary_ids


def test_a_middle_of_pins_only_compacts_nothing() -> None:
    messages = conversation(3)
    policy = CompactionPolicy(context_window=200_000, protect_first_n=2)
    planned = plan(messages, policy, force=True)
    assert planned.span is not None
    middle = [m.id for m in planned.middle if m.id is not None]
    result = compress(pin(messages, *middle), policy, Recorder(), force=True)
    assert result.status in (NOTHING_TO_COMPACT, PRUNED_ONLY)
    assert not result.summarized_ids
