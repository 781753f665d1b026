"""Issue 25: a compaction that leaves room, wastes no call, and never squeezes or starves.

Headroom: the view lands at a target below the threshold (``target_percent`` of it), the
summary, anchors, index and tail being sized from it; the tail gives up its oldest groups
to reach it, within the seed's minimum tail; a result says whether it got there. No
wasted call: pruning alone ends a run only at the target; what the plan can know (no
gain, too costly a re-grounding) is decided before any request; a pruned-only compaction
resets the chain depth. Never squeeze or starve: an earlier summary keeps the room of its
own essentials (or the summary is re-grounded from the originals, or the compaction fails
with a reason of its own); pins must leave a useful summary; a floor that cannot be met
has its own reason; the final merge holds what the parts hold. Stubs: a pruned output
says what it was and where to find it.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from bench.compaction_fidelity import TRANSCRIPTS, Facts, load, measure
from condense import (
    COMPACTED,
    EARLIER_SUMMARY_TOO_LONG,
    HEAD_TOO_LONG,
    NO_GAIN,
    NO_ROOM_FOR_SUMMARY,
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
    next_chain_depth,
    plan,
    pruned_stub,
)
from condense.pruning import prune_old_tool_outputs, stub_length
from condense.tokens import conservative_tokens
from tests.support.core_conversations import FullBudget, conversation


def earlier_summary(body: str, mid: int = 800) -> Message:
    return Message("user", f"{SUMMARY_PREFIX}\n\n{body}", is_summary=True, id=mid)


# ── headroom ──────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("window", [8_000, 16_000, 32_000, 128_000])
def test_an_automatic_compaction_lands_at_the_target_not_the_threshold(window: int) -> None:
    """A summarizer that fills every budget it is given used to leave the view a few
    tokens under the threshold (the summary took all the room left, then anchors and
    index the rest): the next message compacted again."""
    policy = CompactionPolicy(context_window=window, aux_context_window=32_000)
    messages = conversation(window // 350, user_chars=1_000, tool_chars=150)
    assert estimate_messages(messages) >= policy.threshold_tokens
    result = compress(messages, policy, FullBudget())
    assert result.status == COMPACTED
    assert result.target_tokens == policy.threshold_tokens * 60 // 100
    assert result.reached_target and result.tokens_after <= result.target_tokens
    assert plan(messages, policy).estimated_tokens_after <= result.target_tokens


@pytest.mark.parametrize("percent", [20, 40, 90])
def test_the_target_is_the_policys(percent: int) -> None:
    policy = CompactionPolicy(context_window=32_000, target_percent=percent)
    messages = conversation(90, user_chars=1_000, tool_chars=150)
    result = compress(messages, policy, FullBudget())
    assert result.status == COMPACTED and result.reached_target
    assert result.tokens_after <= policy.threshold_tokens * percent // 100


def test_the_tail_gives_up_its_oldest_groups_to_reach_the_target_within_the_minimum() -> None:
    """An earlier summary of 1,000 tokens must keep its room; a long head leaves the room
    under the target short of it, so the tail (six short groups within its budget) gives up
    its oldest ones — down to the seed's three messages, not below."""
    policy = CompactionPolicy(context_window=8_000)  # T 5,600, target 3,360
    head = [
        Message("system", "s", id=1),
        Message("user", "brief " + "b" * 7_600, id=2),  # 1,911 tokens
        Message("assistant", "ok", id=3),
    ]
    body = "## Goal\n" + "- a fact worth keeping, with its value 42\n" * 95  # ~1,000 tokens
    middle = [earlier_summary(body, 4), *conversation(12, tool_chars=150)[1:]]
    middle = [replace(m, id=100 + i) if not m.is_summary else m for i, m in enumerate(middle)]
    tail = [Message("user" if i % 2 else "assistant", "t" * 380, id=900 + i) for i in range(6)]
    messages = [*head, *middle, *tail]  # six tail messages of 105 tokens: 630 <= 672
    p = plan(messages, policy)
    assert p.status == COMPACTED and p.span is not None
    assert p.need_tokens >= 1_000 and p.reaches_target
    kept = len(messages) - p.span.end
    assert kept == policy.min_tail_messages, "gave up its oldest groups, down to the minimum"
    result = compress(messages, policy, FullBudget())
    assert result.status == COMPACTED and result.reached_target
    assert result.tokens_after <= policy.target_tokens


def test_a_compaction_that_cannot_reach_the_target_says_so() -> None:
    """A protected head of half the threshold leaves no room under the target: the view
    lands between the target and the threshold, and the result says so."""
    policy = CompactionPolicy(context_window=8_000)  # T 5,600, target 3,360
    messages = conversation(40, tool_chars=150)
    messages[1] = Message("user", "brief " + "b" * 4 * 2_900, id=2)  # 2,911 tokens
    result = compress(messages, policy, FullBudget())
    assert result.status == COMPACTED
    assert not result.reached_target
    assert result.target_tokens < result.tokens_after < policy.threshold_tokens


def test_pruning_alone_ends_an_automatic_run_only_at_the_target() -> None:
    """Pruning that gets under the threshold but not to the target used to end the run
    (and the next turn compacted again): the summary takes it to the target. Pruning
    that reaches the target still ends it, with no request."""
    policy = CompactionPolicy(context_window=32_000)  # T 22,400, target 13,440
    messages = conversation(26, user_chars=1_200, tool_chars=3_000)
    before = estimate_messages(messages)
    p = plan(messages, policy)
    assert before >= policy.threshold_tokens > p.tokens_after_prune > policy.target_tokens
    model = FullBudget()
    result = compress(messages, policy, model)
    assert result.status == COMPACTED and model.requests and result.reached_target

    lighter = conversation(26, user_chars=400, tool_chars=4_000)
    q = plan(lighter, policy)
    assert estimate_messages(lighter) >= policy.threshold_tokens >= policy.target_tokens
    assert q.tokens_after_prune <= policy.target_tokens
    model = FullBudget()
    pruned = compress(lighter, policy, model)
    assert pruned.status == PRUNED_ONLY and not model.requests and pruned.reached_target


# ── no wasted call ────────────────────────────────────────────────────────────


def test_a_summary_that_cannot_gain_enough_sends_no_request() -> None:
    """A forced run whose head and tail leave no summary a 20% gain: no gain, decided
    before any request (it used to be asked for, then thrown away)."""
    policy = CompactionPolicy(context_window=100_000, protect_first_n=2)
    messages = [
        Message("system", "s" * 2_000, id=1),
        Message("user", "brief " + "b" * 2_000, id=2),
        *conversation(2, tool_chars=100)[1:],
        Message("user", "and the last " + "l" * 1_500, id=50),
    ]
    model = FullBudget()
    result = compress(messages, policy, model, force=True)
    assert result.status == NO_GAIN and not model.requests
    assert result.discarded_requests == 0 and result.messages == tuple(messages)


def test_a_pruned_only_compaction_resets_the_chain_depth() -> None:
    """The summary it left in place counts as freshly grounded: a chain that could not be
    improved does not re-ground (reading every original again) at every later /compact."""
    assert next_chain_depth(3, regrounded=False, status=PRUNED_ONLY) == 1
    assert next_chain_depth(5, regrounded=False, status=NO_GAIN) == 1
    assert next_chain_depth(0, regrounded=False, status=PRUNED_ONLY) == 0
    assert next_chain_depth(3, regrounded=False, status=COMPACTED) == 4
    assert next_chain_depth(3, regrounded=True, status=COMPACTED) == 1


def test_re_grounding_that_would_take_too_many_requests_updates_the_summary_instead() -> None:
    policy = CompactionPolicy(context_window=32_000, summary_input_budget=4_000)
    originals = conversation(120, tool_chars=3_000)[1:]  # about 100k tokens: 30+ requests
    messages = conversation(40, tool_chars=150)
    messages.insert(3, earlier_summary("## Goal\nEARLIER-FACT " + "e" * 800))
    regrounded = plan(
        messages,
        replace(policy, reground_max_requests=10_000),
        force=True,
        regrounding_originals=originals,
    )
    assert regrounded.regrounded and regrounded.requests is not None
    assert regrounded.requests.request_count > policy.reground_max_requests
    p = plan(messages, policy, force=True, regrounding_originals=originals)
    assert p.status == COMPACTED and not p.regrounded
    assert p.previous_summary and "EARLIER-FACT" in p.previous_summary


# ── never squeeze or starve ───────────────────────────────────────────────────


def test_an_earlier_summary_keeps_the_room_of_its_essentials() -> None:
    """A 3,000-token earlier summary folded with a short middle: the seed's formula (2,000)
    would have squeezed it; the budget is at least its essentials."""
    policy = CompactionPolicy(context_window=128_000)
    body = "## Goal\n" + "- FACT-kept with its value and the file it came from\n" * 230
    essentials = conservative_tokens(body)
    assert essentials > 2_500
    messages = conversation(30, tool_chars=150)
    messages.insert(3, earlier_summary(body))
    p = plan(messages, policy, force=True)
    assert p.status == COMPACTED
    assert p.need_tokens >= essentials and p.summary_budget >= essentials


def test_an_earlier_summary_is_never_squeezed_it_is_re_grounded_or_refused() -> None:
    """Not enough room under the threshold for what an earlier summary holds: no request
    and a reason of its own — or, given the originals it stands for, a summary re-grounded
    from them."""
    policy = CompactionPolicy(context_window=8_000)  # T 5,600
    body = "## Goal\n" + "- FACT-kept with its value and the file it came from\n" * 150
    messages = conversation(8, tool_chars=150)
    messages.insert(3, earlier_summary(body))
    messages.append(Message("user", "last " + "y" * 4 * 3_500, id=700))  # 3,511 tokens
    model = FullBudget()
    result = compress(messages, policy, model, force=True)
    assert result.status == EARLIER_SUMMARY_TOO_LONG and not model.requests
    assert result.detail and "earlier summary" in result.detail

    originals = conversation(6, tool_chars=600)[1:]
    model = FullBudget()
    regrounded = compress(
        messages,
        policy,
        model,
        force=True,
        regrounding_originals=originals,
        reground_only_if_squeezed=True,
    )
    assert regrounded.status == COMPACTED and regrounded.regrounded
    assert not any(r.is_update for r in model.requests), "built from the originals"


def test_pins_that_leave_less_than_a_useful_summary_fail() -> None:
    """Pins of 75–95% of the threshold used to "succeed" with a summary squeezed to the
    floor; a summary beside them must have a quarter of the target (or what the seed's
    formula gives what it stands for, when less)."""
    policy = CompactionPolicy(context_window=32_000)  # T 22,400, target 13,440
    messages = conversation(60, user_chars=1_000, tool_chars=150)
    big = 4 * int(policy.threshold_tokens * 0.9)
    messages[41] = replace(messages[41], content="P " + "p" * big, pinned=True)
    model = FullBudget()
    result = compress(messages, policy, model)
    assert result.status == PINS_TOO_LONG and not model.requests
    assert result.detail and "useful" in result.detail


def test_a_floor_that_cannot_be_met_has_its_own_reason() -> None:
    """The head fits under the threshold, but not with the smallest summary worth a
    request: no_room_for_summary, not head_too_long (which says the head alone is over)."""
    policy = CompactionPolicy(context_window=8_000)  # T 5,600
    messages = conversation(30, tool_chars=150)
    messages[1] = Message("user", "u" * 4 * 2_600, id=2)
    messages[2] = replace(messages[2], content="a" * 4 * 2_620)  # a head of 5,308 tokens
    result = compress(messages, policy, FullBudget())
    assert result.status == NO_ROOM_FOR_SUMMARY and result.detail
    assert "244 tokens" in result.detail and "(256 tokens)" in result.detail
    messages[1] = Message("user", "u" * 4 * 2_700, id=2)
    messages[2] = replace(messages[2], content="a" * 4 * 2_800)  # 5,588: with the framing, over
    assert compress(messages, policy, FullBudget()).status == HEAD_TOO_LONG


@pytest.mark.parametrize(
    "name", ["007_miniswe-deepseek-django-13964", "019_specstory-cursor-moto-kms-review"]
)
def test_the_final_merge_holds_what_the_parts_hold(name: str) -> None:
    """Facts of the summarized messages alive in the view with a 16k auxiliary model
    (several parts, then a merge) within 5 points of a 128k one (one request): the parts
    share what one merge reads, and the merge asks for what they hold."""
    messages = load(TRANSCRIPTS / f"{name}.json", Facts(seed=3))
    small = measure(name, messages, 16_000, Facts(seed=3), 16_000)
    large = measure(name, messages, 16_000, Facts(seed=3), 128_000)
    assert small.status == large.status == COMPACTED
    assert small.requests > large.requests, "the small model needs parts"
    assert small.summarized_facts == large.summarized_facts > 50
    assert 100 * (large.alive - small.alive) <= 5 * large.summarized_facts


def test_a_merge_asks_for_what_the_parts_hold() -> None:
    policy = CompactionPolicy(context_window=1_000_000, summary_input_budget=6_000)
    messages = [Message("system", "sys", id=1), Message("user", "Read the reports.", id=2)]
    messages += [
        Message("assistant" if i % 2 else "user", f"REPORT-{i:03d} " + "r" * 4_000, id=3 + i)
        for i in range(48)
    ]
    messages.append(Message("user", "Which is worst?", id=999))
    p = plan(messages, policy, force=True)
    assert p.requests is not None and p.requests.parallel
    rp = p.requests
    parts = len(rp.chunk_pieces)
    assert rp.part_budget * parts >= rp.budget, "the parts can fill the final summary"
    requests: list[SummaryRequest] = []

    def full(request: SummaryRequest) -> str:
        requests.append(request)
        return ("## Goal\n" + "- a kept fact\n" * 2_000)[: request.target_tokens * 4]

    compress(messages, policy, full, force=True)
    merge = next(r for r in requests if r.kind == "merge" and r.max_output_tokens == rp.budget)
    assert merge.target_tokens == rp.budget, "not half of what it reads"


# ── stubs ─────────────────────────────────────────────────────────────────────


def test_a_pruned_output_leaves_a_one_line_stub_pointing_to_the_recall_tools() -> None:
    policy = CompactionPolicy(context_window=32_000, recall_hint=True)
    messages = conversation(26, user_chars=400, tool_chars=4_000)
    result = compress(messages, policy, FullBudget())
    assert result.status == PRUNED_ONLY and result.pruned_ids
    by_id = {m.id: m for m in result.messages}
    for pruned in result.pruned_ids:
        stub = by_id[pruned].content
        assert stub.startswith(PRUNED_TOOL_PLACEHOLDER) and "\n" not in stub
        assert "read_file" in stub and f"#{pruned}" in stub
        assert f'read_history_message {{"id": {pruned}}}' in stub and "search_history" in stub
        assert estimate_tokens(by_id[pruned]) < 40
    assert pruned_stub("bash", 7, recall_hint=False) == f"{PRUNED_TOOL_PLACEHOLDER} bash #7"


def test_a_stored_bare_placeholder_still_counts_as_pruned() -> None:
    policy = CompactionPolicy(context_window=32_000)
    messages = conversation(26, user_chars=400, tool_chars=4_000)
    first = compress(messages, policy, FullBudget())
    stored = [
        replace(m, content=PRUNED_TOOL_PLACEHOLDER) if m.id in first.pruned_ids else m
        for m in messages
    ]
    again = plan(stored, policy, force=True)
    assert not set(again.pruned_indexes) & {
        i for i, m in enumerate(stored) if m.id in first.pruned_ids
    }


def test_a_call_without_a_name_gets_a_stub_without_one() -> None:
    assert pruned_stub(None, 9, recall_hint=True).startswith(f"{PRUNED_TOOL_PLACEHOLDER} #9 —")
    assert pruned_stub("grep", None, recall_hint=True) == f"{PRUNED_TOOL_PLACEHOLDER} grep"
    assert ToolCall("c", "grep").name == "grep"


@pytest.mark.parametrize("recall", [False, True])
def test_a_stub_is_counted_as_it_is_written(recall: bool) -> None:
    """Phase 1 counts stubs without building them (a long history has tens of thousands):
    the count is the built stub's, with or without a tool name, an id, the recall tools."""
    policy = CompactionPolicy(context_window=32_000, recall_hint=recall)
    messages = conversation(26, user_chars=400, tool_chars=4_000)
    messages[7] = replace(messages[7], tool_call_id="no-such-call")  # an orphan: no name
    messages[11] = replace(messages[11], id=None)
    out, estimates, pruned = prune_old_tool_outputs(
        messages, [estimate_tokens(m) for m in messages], policy
    )
    assert {7, 11} <= set(pruned)
    assert estimates == [estimate_tokens(m) for m in out]
    assert out[7].content.startswith(f"{PRUNED_TOOL_PLACEHOLDER} #8")
    assert out[11].content == f"{PRUNED_TOOL_PLACEHOLDER} read_file"
    for name in (None, "", "bash", "a_long_tool_name"):
        for message_id in (None, 0, 7, 123_456_789):
            stub = pruned_stub(name, message_id, recall_hint=recall)
            assert stub_length(name, message_id, recall_hint=recall) == len(stub)
