"""The core on the real public agent transcripts (tests/data/transcripts, see SOURCES.md).

Random conversations find edge cases; these find what real agents do: SWE-agent and
mini-swe-agent loops, tau-bench tool use, Cursor and aider sessions with 80 kB tool
outputs, Chinese and Russian users (each detected as such). Each one is compacted at several windows with a
scripted summarizer, and the invariants of the random tests must hold on all of them.
"""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path

import pytest

from condense import (
    CHANGED_STATUSES,
    COMPACTED,
    HEAD_TOO_LONG,
    NO_GAIN,
    OVERSIZED_MESSAGE,
    CompactionPolicy,
    SummaryRequest,
    compress,
    detect_language,
    estimate_messages,
    is_well_paired,
)
from condense.boundaries import find_compress_start
from condense.tokens import conservative_tokens
from tests.core.cases import transcript_messages
from tests.core.kept import check_kept

TRANSCRIPTS = sorted((Path(__file__).parents[1] / "data" / "transcripts").glob("*.json"))
LANGUAGES = {
    "011_glaive-toolcall-zh": "zh",
    "012_glaive-chat-zh": "zh",
    "014_aider-mozgoslav-ru": "ru",
    "020_specstory-cursor-zh-radio-recognition": "zh",
}
WINDOWS = (8_000, 32_000, 128_000)
AUX_WINDOW = 32_000


class Summarizer:
    """Answers with a summary of about half the length it is asked for (never over it)
    and records what it was asked; thread-safe."""

    def __init__(self) -> None:
        self.requests: list[SummaryRequest] = []
        self._lock = threading.Lock()

    def __call__(self, request: SummaryRequest) -> str:
        with self._lock:
            self.requests.append(request)
            n = len(self.requests)
        if request.language == "zh":  # a token a character
            return (f"## 目标\n摘要 {n}\n" + "- 保留的事实\n" * 80)[: request.target_tokens // 2]
        text = f"## Goal\nsummary {n}\n" + "- a kept fact\n" * 40
        return text[: max(40, request.target_tokens * 2)]


def test_every_transcript_is_shipped() -> None:
    assert len(TRANSCRIPTS) == 18, [p.name for p in TRANSCRIPTS]


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: p.stem[:3])
def test_the_conversation_language_is_detected(path: Path) -> None:
    messages = transcript_messages(json.loads(path.read_text(encoding="utf-8")))
    assert detect_language(messages) == LANGUAGES.get(path.stem, "en")


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
    if result.status == HEAD_TOO_LONG:  # e.g. 002: a whole demonstration in the first turn
        start = find_compress_start(messages, policy.protect_first_n)
        head = estimate_messages(messages[:start])
        assert head + policy.summary_floor_tokens >= policy.threshold_tokens - 60, result.detail
        assert result.messages == tuple(messages) and not summarizer.requests
        return
    if result.status == NO_GAIN:  # 011, 012: tiny; 001: its head is two thirds of it
        # what stays (the head, the seed's last three messages, the summary message's
        # framing) and the smallest summary (256, or half the rest) leave no 20% gain
        start = find_compress_start(messages, policy.protect_first_n)
        kept = estimate_messages(messages[:start]) + estimate_messages(messages[-3:])
        smallest = min(256, (before - kept) // 2)
        ceiling = before - math.ceil(before * policy.min_gain_percent / 100)
        assert kept + 29 + smallest > ceiling
        assert result.messages == tuple(messages) and not summarizer.requests, "decided first"
        return
    assert result.status in CHANGED_STATUSES, (result.status, result.detail)
    check_kept(result, messages, policy)
    assert is_well_paired(result.messages)
    if result.status == COMPACTED:
        assert summarizer.requests and result.removed_count > 0
        assert result.tokens_after < policy.threshold_tokens, "over the threshold"
        for request in summarizer.requests:
            limit = policy.input_budget(request.max_output_tokens)
            assert conservative_tokens(request.prompt) <= limit, "a request that cannot fit"
        if before >= policy.threshold_tokens:
            assert result.tokens_after < before
