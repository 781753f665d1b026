"""Properties of ``compress`` over random conversations and policies.

Conversations start with a system message and mix user and assistant turns,
tool groups (an assistant with 1–3 calls followed by their results), long tool
outputs, English and Chinese text, sometimes an earlier summary right after the
head and, in some runs, orphans (results without a call, calls without results).
Windows are drawn around the conversation's size so that most runs compact.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from compaction.core import (
    CHANGED_STATUSES,
    COMPACTED,
    NO_GAIN,
    NOTHING_TO_COMPACT,
    ORPHAN_CALL_PLACEHOLDER,
    OVERSIZED_MESSAGE,
    PRUNED_ONLY,
    PRUNED_TOOL_PLACEHOLDER,
    SUMMARY_PREFIX,
    UNDER_THRESHOLD,
    CompactionPolicy,
    CompactionResult,
    Message,
    SummaryRequest,
    ToolCall,
    compress,
    estimate_messages,
    estimate_tokens,
    is_well_paired,
    plan,
)
from compaction.core.prompts import update_prompt
from compaction.core.pruning import prune_old_tool_outputs
from compaction.core.tokens import conservative_tokens

SETTINGS = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

UNITS = (
    "parse the file ",
    "error: src/app.py value 42 ",
    "run tests ",
    "解析器文件",
    "错误：测试通过。",
    "配置关键值",
    "parse 解析器 ",
)


def _repeat(unit: str, n: int) -> str:
    return (unit * (n // len(unit) + 1))[:n]


def texts(max_len: int, min_len: int = 0) -> st.SearchStrategy[str]:
    """Cheap long strings: a unit of English, Chinese or both, repeated to a drawn length."""
    return st.builds(_repeat, st.sampled_from(UNITS), st.integers(min_len, max_len))


# Built once: strategies made inside a draw are validated again on every example.
SYSTEM_TEXT, USER_TEXT, ASSISTANT_TEXT = texts(300), texts(1200), texts(800)
SHORT_TEXT, ORPHAN_TEXT, FOCUS_TEXT = texts(200), texts(600), texts(600)
LONG_OUTPUT, SUMMARY_BODY = texts(3000, 201), texts(1500, 200)
KINDS = st.sampled_from(("user", "assistant", "tools", "tools"))
KINDS_WITH_ORPHANS = st.sampled_from(
    ("user", "assistant", "tools", "tools", "orphan_result", "interrupted")
)
CALL_COUNT, ONE_IN_FOUR = st.integers(1, 3), st.integers(0, 3)
AUX_SMALL = st.integers(3500, 8000)  # tokens one summary request may carry
LONG_ZH_FOCUS = st.builds(_repeat, st.just("重点关注解析器。"), st.integers(300, 600))


@dataclass
class Scenario:
    messages: list[Message]
    policy: CompactionPolicy
    force: bool
    focus: str | None
    summary_chars: int
    summary_lang: str
    well_paired_input: bool


@st.composite
def conversations(draw: st.DrawFn, *, orphans: bool) -> list[Message]:
    msgs: list[Message] = []
    next_id = iter(range(1, 10_000))
    calls = iter(range(1, 10_000))

    def add(message: Message) -> None:
        msgs.append(replace(message, id=next(next_id)))

    add(Message(role="system", content=draw(SYSTEM_TEXT)))
    for kind in draw(st.lists(KINDS_WITH_ORPHANS if orphans else KINDS, min_size=4, max_size=30)):
        if kind == "user":
            add(Message(role="user", content=draw(USER_TEXT)))
        elif kind == "assistant":
            add(Message(role="assistant", content=draw(ASSISTANT_TEXT)))
        elif kind == "orphan_result":
            add(Message(role="tool", content=draw(ORPHAN_TEXT), tool_call_id=f"gone{next(calls)}"))
        else:
            ids = [f"call{next(calls)}" for _ in range(draw(CALL_COUNT))]
            tool_calls = tuple(
                ToolCall(id=i, name="read_file", arguments=json.dumps({"q": draw(SHORT_TEXT)}))
                for i in ids
            )
            add(Message(role="assistant", content=draw(SHORT_TEXT), tool_calls=tool_calls))
            answered = ids
            if kind == "interrupted":
                answered = draw(st.lists(st.sampled_from(ids), unique=True, max_size=len(ids) - 1))
            for call_id in answered:
                content = draw(LONG_OUTPUT if draw(st.booleans()) else SHORT_TEXT)
                add(Message(role="tool", content=content, tool_call_id=call_id))
    return msgs


def _with_earlier_summary(msgs: list[Message], protect: int, body: str) -> list[Message]:
    """An earlier compaction's summary sits right after the head (past its tool results)."""
    at = min(protect, len(msgs))
    while at < len(msgs) and msgs[at].role == "tool":
        at += 1
    summary = Message(role="user", content=f"{SUMMARY_PREFIX}\n\n{body}", is_summary=True, id=9_999)
    return [*msgs[:at], summary, *msgs[at:]]


@st.composite
def scenarios(
    draw: st.DrawFn, *, below_threshold: bool = False, small_aux: bool = False
) -> Scenario:
    messages = draw(conversations(orphans=draw(ONE_IN_FOUR) == 0))
    # mostly a head shorter than the conversation (the rest: nothing to compact)
    longest = max(1, min(10, len(messages) - 3)) if draw(ONE_IN_FOUR) else 10
    protect = draw(st.integers(1, longest))
    if draw(ONE_IN_FOUR) == 0:
        messages = _with_earlier_summary(messages, protect, draw(SUMMARY_BODY))
    total = estimate_messages(messages)
    threshold = draw(st.integers(30, 95))
    if below_threshold:
        # the smallest window whose threshold is above the total, and some more
        smallest = (total + 1) * 100 // threshold + 1
        window = draw(st.integers(smallest, smallest * 3))
    else:
        # mostly a system prompt and messages under the threshold (their golden cases cover
        # system_prompt_too_long and oversized_message)
        biggest = max(estimate_tokens(m) for m in messages)
        fits = (max(biggest, 2 * estimate_tokens(messages[0])) + 1) * 100 // threshold + 1
        low = max(10, total // 3, fits if draw(ONE_IN_FOUR) else 0)
        window = draw(st.integers(low, max(low, total * 2)))
    policy = CompactionPolicy(
        context_window=window,
        threshold_percent=threshold,
        protect_first_n=protect,
        summary_input_budget=draw(AUX_SMALL if small_aux else st.none() | AUX_SMALL),
    )
    return Scenario(
        messages=messages,
        policy=policy,
        force=False if below_threshold else draw(st.booleans()),
        focus=draw(LONG_ZH_FOCUS if small_aux else st.none() | FOCUS_TEXT),
        # with a small auxiliary window, answers near the budget (Chinese: a token a character)
        summary_chars=draw(st.integers(1800 if small_aux else 200, 1900)),
        summary_lang=draw(st.just("zh") if small_aux else st.sampled_from(("en", "zh"))),
        well_paired_input=is_well_paired(messages),
    )


class ScriptedModel:
    """Answers every request with a distinct summary of the drawn length (≤ its budget)."""

    def __init__(self, chars: int, lang: str) -> None:
        self.chars = chars
        self.unit = "关键值。" if lang == "zh" else "key_fact;"
        self.requests: list[SummaryRequest] = []
        self.answers: list[str] = []

    def __call__(self, request: SummaryRequest) -> str:
        self.requests.append(request)
        head = f"## Goal\nSUMMARY-{len(self.requests)}\n"
        text = (head + self.unit * self.chars)[: max(self.chars, len(head) + 200)]
        self.answers.append(text)
        return text


def _run(s: Scenario) -> tuple[CompactionResult, ScriptedModel]:
    model = ScriptedModel(s.summary_chars, s.summary_lang)
    result = compress(s.messages, s.policy, model, force=s.force, focus=s.focus)
    return result, model


def _check_kept(
    result: CompactionResult, inputs: Sequence[Message], policy: CompactionPolicy
) -> None:
    """Every input message is kept (verbatim or as a reported pruned copy) or reported removed,
    never both, never silently dropped; kept ones keep their order."""
    by_id = {m.id: m for m in inputs}
    position = {m.id: i for i, m in enumerate(inputs)}
    out_ids = [m.id for m in result.messages if m.id is not None]
    assert len(out_ids) == len(set(out_ids)), "a message appears twice"
    kept, summarized, pruned = set(out_ids), set(result.summarized_ids), set(result.pruned_ids)
    assert len(summarized) == len(result.summarized_ids)
    assert len(pruned) == len(result.pruned_ids)
    assert kept | summarized == set(by_id), "an input message was silently dropped"
    assert not kept & summarized, "an id is both kept and summarized"
    assert pruned <= kept, "a pruned id is not in the result"
    # order kept; phase 4 may put a group's results in the order of its calls
    group, anchor = {}, -1
    for i, m in enumerate(inputs):
        anchor = anchor if m.role == "tool" else i
        group[m.id] = anchor
    assert [group[i] for i in out_ids] == sorted(group[i] for i in out_ids)
    for out in result.messages:
        if out.id is None:
            continue
        original = by_id[out.id]
        if out.id in pruned:
            assert original.role == "tool" and len(original.content) > policy.prune_min_chars
            assert out == replace(original, content=PRUNED_TOOL_PLACEHOLDER)
            assert position[out.id] >= policy.protect_first_n, "the protected head was pruned"
        else:
            assert out == original, f"message {out.id} changed without being reported"


@SETTINGS
@given(scenarios())
def test_compress_invariants(s: Scenario) -> None:
    result, model = _run(s)
    event(f"{result.status}, {len(model.requests)} request(s)")
    policy, inputs = s.policy, s.messages
    n, protect = len(inputs), policy.protect_first_n
    before = estimate_messages(inputs)
    assert result.tokens_before == before
    assert result.tokens_after == estimate_messages(result.messages)
    assert result.tokens_after <= result.tokens_before

    if not s.force and before < policy.threshold_tokens:
        assert result.status in (UNDER_THRESHOLD, NOTHING_TO_COMPACT)
    if n <= protect:
        assert result.status != COMPACTED and result.status != PRUNED_ONLY
    if result.status not in CHANGED_STATUSES:
        assert result.messages == tuple(inputs)
        assert result.tokens_after == before
        assert not result.summarized_ids and not result.pruned_ids
        assert result.status == NO_GAIN or not model.requests
        if result.status == OVERSIZED_MESSAGE:
            big = {m.id for m in inputs if estimate_tokens(m) >= policy.threshold_tokens}
            assert result.oversized_id in big
        return

    _check_kept(result, inputs, policy)
    summaries = [m for m in result.messages if m.is_summary]
    estimates = [estimate_tokens(m) for m in inputs]
    _, pruned_estimates, pruned = prune_old_tool_outputs(inputs, estimates, policy)
    if pruned and not s.force and sum(pruned_estimates) < policy.threshold_tokens:
        assert result.status == PRUNED_ONLY, "phase 1 alone was enough"
    if result.status == PRUNED_ONLY:
        assert not model.requests and not result.summarized_ids and result.pruned_ids
        assert len(result.messages) == n
        if s.well_paired_input:
            assert is_well_paired(result.messages)
        return

    # compacted: head, one summary, tail
    assert result.status == COMPACTED and result.span is not None
    new = [m for m in summaries if m.id is None]
    assert len(new) == 1 and summaries == new, "exactly one summary, the new one"
    summary = new[0]
    assert summary.role == "user" and summary.content.startswith(SUMMARY_PREFIX)
    assert model.answers[-1] in summary.content
    assert is_well_paired(result.messages)

    start, end = result.span.start, result.span.end
    assert min(protect, n) <= start < end <= n - policy.min_tail_messages
    assert all(m.role == "tool" for m in inputs[protect:start]), "start skips only tool results"
    assert inputs[start].role != "tool" and inputs[end].role != "tool", "a tool group was split"
    middle_ids = {m.id for m in inputs[start:end]}
    assert middle_ids <= set(result.summarized_ids)
    at = result.messages.index(summary)
    # removed besides the middle: only orphan tool results (phase 4)
    for i in set(result.summarized_ids) - middle_ids:
        assert next(m for m in inputs if m.id == i).role == "tool"
    # head before the summary, tail after it; what the core adds is only orphan-call results
    head_ids = [m.id for m in result.messages[:at] if m.id is not None]
    tail_ids = [m.id for m in result.messages[at + 1 :] if m.id is not None]
    assert set(head_ids) <= {m.id for m in inputs[:start]}
    assert set(tail_ids) <= {m.id for m in inputs[end:]}
    assert all(m.id in head_ids for m in inputs[:protect] if m.role != "tool")
    assert all(m.id in tail_ids for m in inputs[end:] if m.role != "tool")
    for m in result.messages:
        if m.id is None and m is not summary:
            assert m.role == "tool" and m.content == ORPHAN_CALL_PLACEHOLDER

    # the summarizer saw the middle, an earlier summary only in the update slot (DESIGN 12)
    earlier = [m for m in inputs[start:end] if m.is_summary]
    assert model.requests[0].is_update == bool(earlier)
    for request in model.requests:
        assert "[CONTEXT COMPACTION]" not in request.prompt
    for index, request in enumerate(model.requests):
        assert (request.chunk_index, request.chunk_count) == (index, len(model.requests))
        if index:
            assert request.is_update and model.answers[index - 1] in request.prompt
    prompts = "\n".join(r.prompt for r in model.requests)
    for m in inputs[start:end]:
        pruned_maybe = m.role == "tool" and len(m.content) > policy.prune_min_chars
        if m.content and not m.is_summary and not pruned_maybe:
            assert m.content[:40] in prompts


@SETTINGS
@given(scenarios(small_aux=True))
def test_requests_fit_the_auxiliary_budget(s: Scenario) -> None:
    """DESIGN 8: no request is larger than what the auxiliary model may read (conservative
    count), whenever that budget can hold the template, the focus, the running summary and
    some conversation at all."""
    result, model = _run(s)
    event(f"{len(model.requests)} request(s)")
    for request in model.requests:
        budget = request.max_output_tokens
        limit = s.policy.input_budget(budget)
        earlier = max(
            (conservative_tokens(m.content) for m in s.messages if m.is_summary), default=0
        )
        fixed = conservative_tokens(
            update_prompt("", "", budget=budget, language=request.language, focus=s.focus)
        )
        if limit - fixed - max(budget, earlier) - 200 < 500:
            event("an auxiliary window too small for any chunk")
            continue
        assert conservative_tokens(request.prompt) <= limit


@SETTINGS
@given(scenarios(below_threshold=True))
def test_nothing_changes_under_the_threshold(s: Scenario) -> None:
    assert estimate_messages(s.messages) < s.policy.threshold_tokens
    result, model = _run(s)
    assert result.status in (UNDER_THRESHOLD, NOTHING_TO_COMPACT)
    assert result.messages == tuple(s.messages)
    assert result.tokens_after == result.tokens_before
    assert not model.requests and not result.summarized_ids and not result.pruned_ids


@SETTINGS
@given(scenarios())
def test_pruning_rules_and_idempotence(s: Scenario) -> None:
    """Phase 1: only tool outputs over 200 characters, outside the protected head, older than
    the tail budget; pruning its own output prunes nothing more."""
    policy, msgs = s.policy, s.messages
    estimates = [estimate_tokens(m) for m in msgs]
    out, out_estimates, pruned = prune_old_tool_outputs(msgs, estimates, policy)
    assert out_estimates == [estimate_tokens(m) for m in out]
    for i, (old, new) in enumerate(zip(msgs, out, strict=True)):
        if i not in pruned:
            assert new == old
            continue
        assert old.role == "tool" and len(old.content) > policy.prune_min_chars
        assert i >= policy.protect_first_n
        assert sum(estimates[i + 1 :]) > policy.tail_token_budget, "inside the tail budget"
        assert new == replace(old, content=PRUNED_TOOL_PLACEHOLDER)
    # every eligible output older than the message that crosses the budget is pruned
    running, crossing = 0, -1
    for i in range(len(msgs) - 1, -1, -1):
        running += estimates[i]
        if running > policy.tail_token_budget:
            crossing = i
            break
    for i in range(policy.protect_first_n, max(crossing, 0)):
        if msgs[i].role == "tool" and len(msgs[i].content) > policy.prune_min_chars:
            assert i in pruned
    again, _, pruned_again = prune_old_tool_outputs(out, out_estimates, policy)
    assert pruned_again == [] and again == out


@SETTINGS
@given(scenarios(), st.integers(1, 8))
def test_the_dry_run_figure_counts_at_the_policys_rate(s: Scenario, chars_per_token: int) -> None:
    """``/compact --dry-run``'s "tokens after": the pruned total, less the middle it would
    summarize and plus the summary's full budget, every figure at the policy's own rate."""
    policy = replace(s.policy, chars_per_token=chars_per_token)
    planned = plan(s.messages, policy, force=True)
    if planned.span is None:
        assert planned.estimated_tokens_after == planned.tokens_after_prune
        return
    middle = sum(estimate_tokens(m, chars_per_token) for m in planned.middle)
    assert planned.tokens_after_prune == sum(
        estimate_tokens(m, chars_per_token) for m in planned.messages
    )
    assert planned.estimated_tokens_after == (
        planned.tokens_after_prune - middle + planned.summary_budget + 10
    )
