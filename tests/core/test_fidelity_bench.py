"""The fidelity benchmark's machinery (bench/compaction_fidelity.py): facts are planted
where it says, its summarizer repeats what it reads, and a few transcripts meet the
targets it records for all 18."""

from __future__ import annotations

import json

import pytest

from bench.compaction_fidelity import (
    FACT,
    HEAD_CHARS,
    LONG_OUTPUT,
    TAIL_CHARS,
    TRANSCRIPTS,
    Facts,
    Repeater,
    chain,
    facts_in,
    load,
    measure,
    segments,
)
from condense import SummaryRequest


def test_facts_sit_where_the_summarizer_is_shown_the_message() -> None:
    path = TRANSCRIPTS / "021_specstory-cursor-minsky-task022.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    facts = Facts(seed=0)
    messages = load(path, facts)
    assert len(messages) == len(raw)
    kinds = set(facts.kind.values())
    assert kinds == {"user", "assistant", "tool call", "tool output"}
    for m in messages:
        for match in FACT.finditer(m.content):
            in_head = match.end() <= HEAD_CHARS
            in_tail = match.start() >= len(m.content) - TAIL_CHARS
            assert in_head or in_tail, "planted outside the serializer's cut"
        if m.role == "tool" and len(m.content) > LONG_OUTPUT + 40:
            assert FACT.search(m.content)
        for call in m.tool_calls:
            assert FACT.search(call.arguments)
    assert len(facts_in(messages)) == facts.count


def test_the_summarizer_repeats_what_it_reads_within_its_limit() -> None:
    model = Repeater()
    prompt = "turns: FACT00001AB and FACT00002CD, FACT00001AB again"
    request = SummaryRequest(prompt, 100, "en", False, target_tokens=100)
    reply = model(request)
    assert FACT.findall(reply.text) == ["FACT00001AB", "FACT00002CD"]
    assert model.seen == {"FACT00001AB", "FACT00002CD"}
    tight = model(SummaryRequest(prompt, 20, "en", False, target_tokens=20))
    assert len(tight.text) <= 80


@pytest.mark.parametrize(
    "name", ["007_miniswe-deepseek-django-13964", "019_specstory-cursor-moto-kms-review"]
)
@pytest.mark.parametrize("window", [8_000, 32_000])
def test_transcripts_meet_the_targets(name: str, window: int) -> None:
    facts = Facts(seed=3)
    messages = load(TRANSCRIPTS / f"{name}.json", facts)
    row = measure(name, messages, window, facts)
    assert row.status == "compacted", row.detail
    assert row.middle_facts > 20 and row.reached == row.middle_facts
    assert not row.above_threshold and row.verbatim
    assert row.newest_user_kept in (True, None)


def test_a_chain_reaches_round_ten_with_round_one_facts() -> None:
    name = "019_specstory-cursor-moto-kms-review"
    messages = load(TRANSCRIPTS / f"{name}.json", Facts(seed=5))
    pieces = segments(messages, 10)
    assert len(pieces) == 10 and sum(map(len, pieces)) == len(messages)
    assert all(p[0].role != "tool" for p in pieces)
    row = chain(name, messages, 32_000, regrounding=True)
    assert row.compacted >= 8 and row.regrounded >= 2 and row.above_threshold == 0
    assert row.round_one_facts > 10 and row.reached_last == row.round_one_facts
