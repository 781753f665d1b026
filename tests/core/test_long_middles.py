"""Issue 13, cause 9: a middle of many chunks is summarized concurrently, then merged.

At most ``policy.summary_concurrency`` requests are in flight; the result follows the
conversation's order whatever order the answers arrive in; the model round trips of wall
time fall from one per chunk to a few.
"""

from __future__ import annotations

import random
import re
import sys
import threading
import time
from collections.abc import Callable

import pytest

from condense import (
    COMPACTED,
    SUMMARY_CUT_OFF,
    CompactionPolicy,
    Message,
    SummaryRejected,
    SummaryReply,
    SummaryRequest,
    compress,
    plan,
    summarizing,
)


def long_middle(chunks: int) -> list[Message]:
    """About ``chunks`` requests' worth of turns at a 6,000-token request budget."""
    msgs = [Message("system", "sys", id=1), Message("user", "Read the reports.", id=2)]
    for i in range(chunks * 4):
        msgs.append(
            Message("assistant" if i % 2 else "user", f"REPORT-{i:03d} " + "r" * 4_000, id=3 + i)
        )
    return [*msgs, Message("user", "Which is worst?", id=999)]


class Slow:
    """Answers after a random short pause; records the most requests in flight at once.

    With ``hold``, the first requests wait (up to 5 s) until ``hold`` are in flight together,
    so a loaded machine that starts the pool's threads late cannot hide the concurrency; a
    pool that never runs ``hold`` at once still shows fewer."""

    def __init__(self, seed: int = 1, *, hold: int = 0) -> None:
        self.rng = random.Random(seed)
        self.lock = threading.Condition()
        self.in_flight = 0
        self.most = 0
        self.hold = hold
        self.requests: list[SummaryRequest] = []

    def __call__(self, request: SummaryRequest) -> str:
        with self.lock:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
            self.requests.append(request)
            pause = self.rng.uniform(0.001, 0.03)
            if self.most < self.hold:
                if not self.lock.wait_for(lambda: self.most >= self.hold, timeout=5):
                    self.hold = 0  # waited once: the rest go at the pool's own pace
            else:
                self.lock.notify_all()
        time.sleep(pause)
        with self.lock:
            self.in_flight -= 1
        if request.kind == "part":
            reports = sorted(set(re.findall(r"REPORT-\d{3}", request.prompt)))
        else:
            reports = re.findall(r"- read (REPORT-\d{3})", request.prompt)
        detail = ": the details that matter, with the numbers and the file names it gave"
        return "## Goal\n" + "\n".join(f"- read {r}{detail * 3}" for r in reports)


POLICY = CompactionPolicy(context_window=1_000_000, summary_input_budget=6_000)


@pytest.mark.parametrize("concurrency", [2, 4])
def test_chunks_go_concurrently_within_the_bound_and_merge_in_order(concurrency: int) -> None:
    policy = CompactionPolicy(
        context_window=1_000_000, summary_input_budget=6_000, summary_concurrency=concurrency
    )
    messages = long_middle(12)
    model = Slow(hold=concurrency)
    result = compress(messages, policy, model, force=True)
    assert result.status == COMPACTED
    parts = [r for r in model.requests if r.kind == "part"]
    assert len(parts) >= 6
    assert model.most == concurrency, "concurrent, never above the bound"
    assert result.span is not None
    middle = messages[result.span.start : result.span.end]  # the anchors are read too
    expected = [m.content.split()[0] for m in middle if m.content.startswith("REPORT-")]
    assert re.findall(r"REPORT-\d{3}", result.summary_text or "") == expected, "in order"
    # the same answers in any arrival order give the same summary
    again = compress(messages, policy, Slow(seed=7), force=True)
    assert again.summary_text == result.summary_text and again.messages == result.messages


def test_fewer_round_trips_than_chunks() -> None:
    planned = plan(long_middle(12), POLICY, force=True)
    requests = planned.requests
    assert requests is not None and requests.parallel
    chunks = len(requests.chunks)
    assert requests.round_trips(POLICY.summary_concurrency) <= chunks // 4 + 2 < chunks
    one_at_a_time = CompactionPolicy(
        context_window=1_000_000, summary_input_budget=6_000, parallel_min_chunks=10_000
    )
    sequential = plan(long_middle(12), one_at_a_time, force=True).requests
    assert sequential is not None and not sequential.parallel
    assert sequential.round_trips(4) == len(sequential.chunks) > chunks


def test_partial_summaries_that_do_not_fit_one_merge_are_merged_in_rounds() -> None:
    policy = CompactionPolicy(
        context_window=10_000_000, summary_input_budget=6_000, summary_floor_tokens=1_000
    )
    planned = plan(long_middle(30), policy, force=True)
    requests = planned.requests
    assert requests is not None and len(requests.merge_rounds) >= 2
    model = Slow()
    result = compress(long_middle(30), policy, model, force=True)
    assert result.status == COMPACTED
    merges = [r for r in model.requests if r.kind == "merge"]
    assert len(merges) == sum(requests.merge_rounds)
    assert sorted(r.chunk_index for r in model.requests) == list(range(requests.request_count))


def test_a_failed_part_fails_the_compaction_cleanly() -> None:
    def cut(request: SummaryRequest) -> SummaryReply:
        if request.kind == "part" and request.chunk_index == 2:
            return SummaryReply("## Goal\n- partial", finish_reason="length")
        return SummaryReply("## Goal\n" + "- kept detail\n" * 30)

    with pytest.raises(SummaryRejected) as raised:
        compress(long_middle(12), POLICY, cut, force=True)
    assert raised.value.reason == SUMMARY_CUT_OFF


def test_an_instant_summarizer_costs_one_helper_thread_and_none_are_waited_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Helpers start one at a time, each once the last one has taken a job: a summarizer
    that answers at once (the calling thread never lets go of the GIL) leaves the one
    started helper nothing to do, whatever the number of parts."""
    started: list[Callable[..., object]] = []
    real = summarizing._thread.start_new_thread

    def counting(function: Callable[..., object], args: tuple[object, ...]) -> int:
        started.append(function)
        return real(function, args)

    monkeypatch.setattr(summarizing._thread, "start_new_thread", counting)
    answer = "## Goal\n" + "- read the reports, with the numbers and the file names\n" * 8
    interval = sys.getswitchinterval()
    sys.setswitchinterval(60)  # no forced switch to a waiting helper on a slow machine
    try:
        result = compress(long_middle(12), POLICY, lambda request: answer, force=True)
    finally:
        sys.setswitchinterval(interval)
    assert result.status == COMPACTED
    assert len([r for r in result.requests if r.kind == "part"]) >= 6
    assert len(started) == 1


def test_when_no_thread_can_start_the_calling_thread_does_every_job(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(function: Callable[..., object], args: tuple[object, ...]) -> int:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(summarizing._thread, "start_new_thread", refuse)
    model = Slow()
    result = compress(long_middle(12), POLICY, model, force=True)
    assert result.status == COMPACTED
    assert model.most == 1
