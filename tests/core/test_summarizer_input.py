"""Issue 13, causes 1, 3, 6 and 8: what reaches the summarizer, and what the summary keeps.

The summarizer reads the originals (pruning is for the main model only), every earlier
summary wherever it sits (or, when re-grounding, the originals they stand for), and the
summary carries a mechanical index of what the summarized tool calls touched.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from condense import (
    COMPACTED,
    PRUNED_TOOL_PLACEHOLDER,
    REGROUND_DEPTH,
    SUMMARY_PREFIX,
    CompactionPolicy,
    Message,
    SummaryRequest,
    ToolCall,
    compress,
    next_chain_depth,
    plan,
    should_reground,
)
from condense.index import HEADER, parse_index
from condense.serialize import serialize_message, serialize_pieces, truncate_middle
from condense.tokens import conservative_tokens
from tests.core.cases import transcript_messages


class Recorder:
    """A summarizer that answers with a short summary and keeps every prompt."""

    def __init__(self, text: str = "## Goal\nkeep the parser working\n") -> None:
        self.text = text
        self.requests: list[SummaryRequest] = []

    def __call__(self, request: SummaryRequest) -> str:
        self.requests.append(request)
        return self.text + "- detail\n" * 30

    @property
    def prompts(self) -> str:
        return "\n".join(r.prompt for r in self.requests)


def summary(body: str, mid: int) -> Message:
    return Message("user", f"{SUMMARY_PREFIX}\n\n{body}", is_summary=True, id=mid)


def turns(first_id: int, count: int, *, tool_chars: int = 2_000) -> list[Message]:
    out: list[Message] = []
    for t in range(count):
        base = first_id + 4 * t
        call = ToolCall(
            f"k{base}", "bash", f'{{"command": "grep -rn needle{base} src/app{base}.py"}}'
        )
        out += [
            Message("user", f"question {base} " + "q" * 300, id=base),
            Message("assistant", "", (call,), id=base + 1),
            Message(
                "tool",
                f"OUTPUT-{base} see https://example.com/run/{base} " + "o" * tool_chars,
                tool_call_id=f"k{base}",
                id=base + 2,
            ),
            Message("assistant", f"answer {base} " + "a" * 300, id=base + 3),
        ]
    return out


def test_the_summarizer_reads_the_outputs_phase_1_would_prune() -> None:
    """Cause 1: phase 1 replaces old outputs with the placeholder for the main model; the
    summarizer must read the originals (within the 4000 + 1500 cut), or it never sees them."""
    policy = CompactionPolicy(context_window=16_000)
    messages = [Message("system", "sys", id=1), *turns(2, 24)]
    assert plan(messages, policy).pruned_indexes, "phase 1 would prune some of them"
    model = Recorder()
    result = compress(messages, policy, model, force=True)
    assert result.status == COMPACTED
    assert PRUNED_TOOL_PLACEHOLDER not in model.prompts
    for m in messages:
        if m.id in result.summarized_ids and m.role == "tool":
            assert m.content[:4000] in model.prompts


def test_outputs_stored_pruned_are_read_from_their_originals() -> None:
    """The service's context shows stored-pruned outputs as the placeholder; given their
    stored originals, the summarizer reads those."""
    policy = CompactionPolicy(context_window=16_000)
    messages = [Message("system", "sys", id=1), *turns(2, 24)]
    originals = {m.id: m.content for m in messages if m.role == "tool" and m.id is not None}
    stored = [
        Message("tool", PRUNED_TOOL_PLACEHOLDER, tool_call_id=m.tool_call_id, id=m.id)
        if m.id in originals and m.id < 60
        else m
        for m in messages
    ]
    model = Recorder()
    result = compress(stored, policy, model, force=True, original_contents=originals)
    assert result.status == COMPACTED
    for i in result.summarized_ids:
        if i in originals:
            assert originals[i][:200] in model.prompts
    # the context keeps what it was given: a stored-pruned message in the tail stays pruned
    assert all(
        m.content == PRUNED_TOOL_PLACEHOLDER
        for m in result.messages
        if m.id in originals and m.id < 60
    )


def test_the_head_keeps_its_tool_results_verbatim() -> None:
    """A tool result the head absorbed (its call is the protected assistant) is neither
    pruned nor summarized: it stays, byte for byte."""
    policy = CompactionPolicy(context_window=8_000, protect_first_n=3)
    call = ToolCall("h", "read_file", '{"path": "README.md"}')
    head = [
        Message("system", "sys", id=1),
        Message("user", "read the readme", id=2),
        Message("assistant", "", (call,), id=3),
        Message("tool", "README " + "r" * 3_000, tool_call_id="h", id=4),
    ]
    messages = [*head, *turns(10, 20, tool_chars=600)]
    pruned = plan(messages, policy)
    assert pruned.pruned_indexes and 3 not in pruned.pruned_indexes
    result = compress(messages, policy, Recorder(), force=True)
    assert result.status == COMPACTED
    assert result.messages[:4] == tuple(head)


def test_every_earlier_summary_is_folded_wherever_it_sits() -> None:
    """Cause 3: a summary in the head (protect_first_n raised since), one in the span and
    one among the newest messages: all three reach the summarizer and none is left."""
    policy = CompactionPolicy(context_window=16_000, protect_first_n=4)
    messages = [
        Message("system", "sys", id=1),
        Message("user", "start", id=2),
        summary("## Goal\nHEAD-SUMMARY fact-alpha", 3),
        Message("assistant", "ok", id=4),
        *turns(10, 12),
        summary("## Goal\nSPAN-SUMMARY fact-beta", 99),
        *turns(100, 10),
        summary("## Goal\nTAIL-SUMMARY fact-gamma", 199),
        Message("assistant", "latest", id=200),
    ]
    model = Recorder()
    result = compress(messages, policy, model, force=True)
    assert result.status == COMPACTED
    for fact in ("fact-alpha", "fact-beta", "fact-gamma"):
        assert fact in model.prompts
    assert set(result.folded_summary_ids) == {3, 99, 199} <= set(result.summarized_ids)
    summaries = [m for m in result.messages if m.is_summary]
    assert len(summaries) == 1 and summaries[0].id is None
    assert sum(SUMMARY_PREFIX in m.content for m in result.messages) == 1
    # the head stays verbatim around the folded summary
    assert [m.id for m in result.messages[:2]] == [1, 2]
    assert 4 in [m.id for m in result.messages]


def test_the_summary_carries_a_mechanical_index_of_the_tool_calls() -> None:
    """Cause 6: files, commands, URLs and identifiers of the summarized tool calls and
    results, with the ids of the messages they came from, in a deterministic section (here
    with room for all of them; the next test bounds it)."""
    policy = CompactionPolicy(context_window=32_000, index_ratio=0.5)
    messages = [Message("system", "sys", id=1), *turns(2, 30, tool_chars=300)]
    late = len(messages) - 8 * 4  # in the middle, among its newest calls
    messages.insert(
        late,
        Message(
            "assistant",
            "",
            (ToolCall("r1", "get_reservation", '{"reservation_id": "ZFA04Y"}'),),
            id=500,
        ),
    )
    messages.insert(late + 1, Message("tool", '{"status": "ok"}', tool_call_id="r1", id=501))
    model = Recorder()
    result = compress(messages, policy, model, force=True)
    assert result.status == COMPACTED and result.summary_message is not None
    content = result.summary_message.content
    assert HEADER["en"] in content and HEADER["en"] not in (result.summary_text or "")
    entries = {(e.kind, e.value): e.ids for e in parse_index(content)}
    assert ("id", "reservation_id=ZFA04Y") in entries and entries[
        ("id", "reservation_id=ZFA04Y")
    ] == (500,)
    summarized = [b for b in range(2, 2 + 4 * 30, 4) if b + 1 in result.summarized_ids]
    assert len(summarized) > 20
    for base in summarized:
        assert entries[("command", f"grep -rn needle{base} src/app{base}.py")] == (base + 1,)
        assert entries[("file", f"src/app{base}.py")] == (base + 1,)
        assert entries[("url", f"https://example.com/run/{base}")] == (base + 2,)
    index_part = content[content.index(HEADER["en"]) :].split("\n\n")[0]
    assert len(index_part) <= policy.index_budget * 4


def test_the_index_is_bounded_and_carried_into_the_next_summary() -> None:
    """Its size stays within 5% of the threshold; a later compaction keeps the earlier
    index's entries (with their message ids) as long as there is room after its own."""
    policy = CompactionPolicy(context_window=8_000)  # index budget: 5% of 5,600 = 280 tokens
    first = compress(
        [Message("system", "sys", id=1), *turns(2, 40, tool_chars=300)],
        policy,
        Recorder(),
        force=True,
    )
    assert first.summary_message is not None
    content = first.summary_message.content
    section = content[content.index(HEADER["en"]) :].split("\n\n")[0]
    assert len(section) <= policy.index_budget * 4
    earlier = parse_index(content)
    assert earlier
    chat = [
        Message("user" if i % 2 else "assistant", f"plain talk {i} " + "p" * 900, id=2_000 + i)
        for i in range(1, 40)
    ]
    stored = Message("user", content, is_summary=True, id=1_000)
    second = compress([Message("system", "sys", id=1), stored, *chat], policy, Recorder())
    assert second.status == COMPACTED and second.summary_message is not None
    assert parse_index(second.summary_message.content) == earlier


def test_re_grounding_rebuilds_the_summary_from_the_originals() -> None:
    """Cause 8: given the originals an earlier summary stands for, the new summary is
    built from them (chunked like any long middle), not from the earlier summary."""
    policy = CompactionPolicy(context_window=16_000, summary_input_budget=6_000)
    originals = turns(2, 30)
    earlier = summary("## Goal\nDEEP-SUMMARY that lost things", 900)
    messages = [Message("system", "sys", id=1), earlier, *turns(1_000, 12)]
    model = Recorder()
    result = compress(messages, policy, model, force=True, regrounding_originals=originals)
    assert result.status == COMPACTED and result.regrounded
    assert "DEEP-SUMMARY" not in model.prompts
    for m in originals:
        if m.role == "tool":
            assert m.content[:300] in model.prompts
    assert len(model.requests) > 1, "many originals: chunked"
    assert 900 in result.summarized_ids and 900 in result.folded_summary_ids
    assert not any(m.id in result.summarized_ids for m in originals), "already compacted"

    plain = Recorder()
    folded = compress(messages, policy, plain, force=True)
    assert not folded.regrounded and "DEEP-SUMMARY" in plain.prompts


@pytest.mark.parametrize(
    ("depth", "tokens", "always", "expected"),
    [
        (0, 0, False, False),
        (1, 1_000, False, False),
        (REGROUND_DEPTH - 1, 1_000, False, False),
        (REGROUND_DEPTH, 1_000, False, True),
        (REGROUND_DEPTH + 5, 1_000, False, True),
        (REGROUND_DEPTH, 3_000_000, False, False),
        (1, 1_000, True, True),
        (0, 1_000, True, False),
    ],
)
def test_the_re_grounding_rule(depth: int, tokens: int, always: bool, expected: bool) -> None:
    assert should_reground(depth, originals_tokens=tokens, always=always) is expected


def test_the_chain_depth_restarts_when_re_grounded() -> None:
    assert next_chain_depth(0, regrounded=False) == 1
    assert next_chain_depth(2, regrounded=False) == 3
    assert next_chain_depth(REGROUND_DEPTH, regrounded=True) == 1


def test_the_fast_serializer_writes_what_serialize_message_writes() -> None:
    """``serialize_pieces`` (the one pass over a middle) and ``serialize_message`` agree,
    byte for byte, on real transcripts (tool calls, CJK, Cyrillic, 80 kB outputs)."""
    for path in sorted((Path(__file__).parents[1] / "data" / "transcripts").glob("*.json")):
        messages = transcript_messages(json.loads(path.read_text(encoding="utf-8")))
        pieces, costs = serialize_pieces(
            messages, [m.content for m in messages], head=4000, tail=1500, chars_per_token=4
        )
        assert pieces == [serialize_message(m) for m in messages], path.name
        assert costs == [conservative_tokens(p) + 1 for p in pieces], path.name


@pytest.mark.parametrize(("head", "tail"), [(4000, 1500), (300, 0), (0, 200), (1, 1)])
def test_the_fast_serializer_agrees_at_any_cut(head: int, tail: int) -> None:
    """Also with a cut that keeps no tail (``text[-0:]`` is the whole text, not none of
    it) and at every policy rate, for costs with emoji (four UTF-8 bytes) as well."""
    messages = [
        Message("user", "word " * 500, id=1),
        Message("assistant", "解析器" * 400, (ToolCall("c", "run", "x" * 900),), id=2),
        Message("tool", "😀" * 700, tool_call_id="c", id=3),
    ]
    for cpt in (1, 3, 4):
        pieces, costs = serialize_pieces(
            messages, [m.content for m in messages], head=head, tail=tail, chars_per_token=cpt
        )
        assert pieces == [serialize_message(m, head=head, tail=tail) for m in messages]
        assert costs == [conservative_tokens(p, cpt) + 1 for p in pieces]
        for piece in pieces:
            assert len(piece) < head + tail + 200 + 2 * len("x" * 900)


def test_a_cut_that_keeps_no_tail_keeps_none() -> None:
    assert truncate_middle("abcdefgh", 2, 0) == "ab\n...[truncated 6 chars]...\n"
    assert truncate_middle("abcdefgh", 0, 2) == "\n...[truncated 6 chars]...\ngh"
