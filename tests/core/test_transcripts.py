"""The core on the real public agent transcripts (tests/data/transcripts, see SOURCES.md).

Random conversations find edge cases; these find what real agents do: SWE-agent and
mini-swe-agent loops, tau-bench tool use, Cursor and aider sessions with 80 kB tool
outputs, Chinese and Russian users. Each one is compacted at several windows with a
scripted summarizer, and the invariants of the random tests must hold on all of them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compaction.core import (
    CHANGED_STATUSES,
    COMPACTED,
    OVERSIZED_MESSAGE,
    CompactionPolicy,
    SummaryRequest,
    compress,
    detect_language,
    estimate_messages,
    is_well_paired,
)
from compaction.core.tokens import conservative_tokens
from tests.core.cases import transcript_messages
from tests.core.test_properties import _check_kept

TRANSCRIPTS = sorted((Path(__file__).parents[1] / "data" / "transcripts").glob("*.json"))
CHINESE = {
    "011_glaive-toolcall-zh",
    "012_glaive-chat-zh",
    "020_specstory-cursor-zh-radio-recognition",
}
WINDOWS = (8_000, 32_000, 128_000)
AUX_WINDOW = 32_000


class Summarizer:
    """Answers with a fixed-size summary and records what it was asked."""

    def __init__(self) -> None:
        self.requests: list[SummaryRequest] = []

    def __call__(self, request: SummaryRequest) -> str:
        self.requests.append(request)
        return f"## Goal\nsummary {len(self.requests)}\n" + "- a kept fact\n" * 40


def test_every_transcript_is_shipped() -> None:
    assert len(TRANSCRIPTS) == 18, [p.name for p in TRANSCRIPTS]


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: p.stem[:3])
def test_the_conversation_language_is_detected(path: Path) -> None:
    messages = transcript_messages(json.loads(path.read_text(encoding="utf-8")))
    assert detect_language(messages) == ("zh" if path.stem in CHINESE else "en")


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: p.stem[:3])
def test_compaction_keeps_its_invariants_on_real_transcripts(path: Path, window: int) -> None:
    messages = transcript_messages(json.loads(path.read_text(encoding="utf-8")))
    assert is_well_paired(messages), "the transcript itself is valid"
    policy = CompactionPolicy(context_window=window, aux_context_window=AUX_WINDOW)
    before = estimate_messages(messages)
    summarizer = Summarizer()
    result = compress(messages, policy, summarizer, force=True)

    assert result.tokens_before == before and result.tokens_after <= before
    if result.status == OVERSIZED_MESSAGE:
        big = next(m for m in messages if m.id == result.oversized_id)
        assert estimate_messages([big]) >= policy.threshold_tokens
        return
    assert result.status in CHANGED_STATUSES, result.status
    _check_kept(result, messages, policy)
    assert is_well_paired(result.messages)
    if result.status == COMPACTED:
        assert summarizer.requests and result.removed_count > 0
        budget = policy.input_budget(result.requests[0].max_output_tokens)
        for request in summarizer.requests:
            assert conservative_tokens(request.prompt) <= budget, "a request that cannot fit"
        if before >= policy.threshold_tokens:
            assert result.tokens_after < before
