"""Phase 3's model calls: which requests, in what order, and what is accepted.

A middle that fits one request is summarized in one (the seed's first or update
prompt). A middle of two chunks is folded sequentially, as DESIGN 8 says: each update
carries the running summary. From ``policy.parallel_min_chunks`` chunks on, sequential
folding costs one model round trip per chunk, so the chunks are summarized
concurrently instead (at most ``policy.summary_concurrency`` at a time, each with a
*part* prompt) and the partial summaries are merged, in order, with the previous
summary if any (merging in rounds when they do not fit one request). Results keep the
conversation's order whatever order the answers arrive in.

Every answer is checked (``checks.rejection``). The first rejected answer of a
compaction is asked for once more with a note saying what was wrong; any further
rejection, of that request or another, raises ``SummaryRejected``: at most one answer is
thrown away per compaction (issue 25), counted in ``RunResult.discarded``.

Issue 25, never starve: a part's budget is sized from the parts there really are, so that
all of them together fill what the final merge can read (and at least its budget), and a
merge asks for what its inputs hold (up to its budget), not half of it — the final
merge keeps what the parts kept.
"""

from __future__ import annotations

import _thread
import math
import threading
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from itertools import accumulate

from condense.checks import (
    NOT_A_SUMMARY_REASONS,
    SUMMARY_CUT_OFF,
    SUMMARY_LONGER_THAN_INPUT,
    SUMMARY_OVER_BUDGET,
    SUMMARY_TOO_SHORT,
    SummaryReply,
    as_reply,
    rejected,
    rejection,
    strip_reasoning,
)
from condense.language import Language
from condense.policy import CompactionPolicy
from condense.prompts import (
    first_prompt,
    merge_prompt,
    part_prompt,
    retry_note,
    update_prompt,
)
from condense.serialize import truncate_middle
from condense.tokens import conservative_tokens

SUMMARY = "summary"  # the seed's first or update prompt (one request, or a sequential fold)
PART = "part"  # one chunk of a long middle, summarized concurrently with the others
MERGE = "merge"  # partial summaries (and the previous summary) into one

# the retry note's kind for each rejection reason
_NOTE = {
    SUMMARY_CUT_OFF: "cut",
    SUMMARY_LONGER_THAN_INPUT: "long",
    SUMMARY_OVER_BUDGET: "long",
    SUMMARY_TOO_SHORT: "short",
    **dict.fromkeys(NOT_A_SUMMARY_REASONS, "structure"),
}
_PART_HEADING_TOKENS = 16
_MARGIN_TOKENS = 200  # a retry note and rounding


@dataclass(frozen=True, slots=True)
class SummaryRequest:
    prompt: str
    max_output_tokens: int
    language: Language
    is_update: bool  # the prompt carries a previous summary
    chunk_index: int = 0  # this request's place among ``chunk_count`` planned requests
    chunk_count: int = 1
    kind: str = SUMMARY
    attempt: int = 0  # 1 for the one retry after a rejected answer
    target_tokens: int = 0  # the "~N tokens" the prompt asks for


Summarize = Callable[[SummaryRequest], "str | SummaryReply"]
FinalCheck = Callable[[str], "tuple[str, str] | None"]


@dataclass(frozen=True, slots=True)
class RequestPlan:
    """The requests a middle needs, decided before any is sent."""

    chunk_pieces: tuple[tuple[str, ...], ...]  # each chunk: its serialized messages
    chunk_tokens: tuple[int, ...]  # conservative tokens of each chunk (upper side)
    previous: str | None
    budget: int  # max output tokens of the final summary
    language: Language
    focus: str | None
    parallel: bool = False
    part_budget: int = 0  # max output tokens of a partial (and intermediate merged) summary
    merge_batch: int = 2  # partial summaries one merge request can carry

    @property
    def chunks(self) -> tuple[str, ...]:
        """Each chunk's text, as the prompts carry it."""
        return tuple("\n\n".join(pieces) for pieces in self.chunk_pieces)

    def chunk_chars(self, index: int) -> int:
        pieces = self.chunk_pieces[index]
        return sum(map(len, pieces)) + 2 * max(0, len(pieces) - 1)

    @property
    def merge_rounds(self) -> tuple[int, ...]:
        """How many merge requests each round sends (the last round is the final merge)."""
        if not self.parallel:
            return ()
        rounds = []
        count = len(self.chunk_pieces)
        while count > self.merge_batch:
            count = math.ceil(count / self.merge_batch)
            rounds.append(count)
        rounds.append(1)
        return tuple(rounds)

    @property
    def request_count(self) -> int:
        return len(self.chunk_pieces) + sum(self.merge_rounds)

    def round_trips(self, concurrency: int) -> int:
        """Model round trips of wall time at ``concurrency`` requests at once (no retries)."""
        if not self.parallel:
            return len(self.chunk_pieces)
        waves = math.ceil(len(self.chunk_pieces) / concurrency)
        return waves + sum(math.ceil(n / concurrency) for n in self.merge_rounds)


@dataclass
class RunResult:
    text: str
    requests: list[SummaryRequest] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    discarded: int = 0  # answers thrown away and asked for again (at most one)


def target_tokens(max_output: int, input_tokens: int, carried: int = 0) -> int:
    """What a prompt asks for: half its input (a summary longer than its input is
    rejected) but at least 256 tokens (or the whole input when shorter), never less than
    what an update carries over, within the output limit."""
    return min(max_output, max(min(256, input_tokens), input_tokens // 2, carried))


def merge_target(max_output: int, input_tokens: int) -> int:
    """What a merge asks for: what its partial summaries (and the previous summary) hold,
    within the output limit — they are summaries already, and halving them again is
    where a long middle's facts died (issue 25)."""
    return min(max_output, max(min(256, input_tokens), input_tokens))


def _bounds(totals: Sequence[int], room: int) -> list[tuple[int, int]]:
    """The greedy chunks within ``room`` of the pieces whose running totals of tokens are
    ``totals`` (``totals[i]``: the first ``i`` pieces): a chunk takes pieces while they fit,
    and at least one. Found by bisection, so a middle of 100k pieces costs a few hundred
    searches, not a Python step per piece."""
    bounds = []
    start, n = 0, len(totals) - 1
    while start < n:
        end = max(start + 1, bisect_right(totals, totals[start] + room, start + 1) - 1)
        bounds.append((start, end))
        start = end
    return bounds


class _Chunker:
    """Greedy chunks of whole messages that fit a room of tokens (a too-large one is cut),
    for any room; ``costs``: each piece's conservative tokens + 1. The largest cost and the
    running totals are found once, for every room tried. A chunk stays a tuple of pieces
    until its prompt is built."""

    def __init__(self, pieces: Sequence[str], costs: Sequence[int], policy: CompactionPolicy):
        self.pieces = pieces
        self.costs = costs
        self.policy = policy
        self.biggest = max(costs, default=0)
        self.totals = list(accumulate(costs, initial=0))

    def count(self, room: int) -> int:
        """How many chunks ``chunks(room)`` makes (without building them)."""
        if self.biggest <= room:
            return len(_bounds(self.totals, room))
        capped = accumulate((min(cost, room) for cost in self.costs), initial=0)
        return len(_bounds(list(capped), room))

    def chunks(self, room: int) -> tuple[tuple[tuple[str, ...], ...], tuple[int, ...]]:
        """The chunks, and each chunk's tokens."""
        pieces, totals = self.pieces, self.totals
        if self.biggest > room:  # one message alone is too large: cut it to fit
            pieces, costs = list(pieces), list(self.costs)
            cpt = self.policy.chars_per_token
            keep_chars = max(200, room * cpt // 4)
            for i, cost in enumerate(costs):
                if cost > room:
                    pieces[i] = truncate_middle(pieces[i], keep_chars * 2 // 3, keep_chars // 3)
                    costs[i] = conservative_tokens(pieces[i], cpt) + 1
            totals = list(accumulate(costs, initial=0))
        bounds = _bounds(totals, room)
        return (
            tuple(tuple(pieces[a:b]) for a, b in bounds),
            tuple(totals[b] - totals[a] for a, b in bounds),
        )


def plan_requests(
    pieces: Sequence[str],
    costs: Sequence[int],
    *,
    previous: str | None,
    budget: int,
    language: Language,
    focus: str | None,
    policy: CompactionPolicy,
) -> RequestPlan:
    """Chunk the serialized middle (``costs``: each piece's conservative tokens + 1) for the
    auxiliary model's window (DESIGN 8)."""
    cpt = policy.chars_per_token
    carried_tokens = conservative_tokens(previous or "", cpt)
    template = conservative_tokens(
        update_prompt("", "", budget=budget, language=language, focus=focus), cpt
    )
    room = policy.input_budget(budget) - template - max(budget, carried_tokens) - _MARGIN_TOKENS
    room = max(500, room)

    chunker = _Chunker(pieces, costs, policy)

    def sequential() -> RequestPlan:
        chunks, tokens = chunker.chunks(room)
        return RequestPlan(chunks or ((),), tokens or (0,), previous, budget, language, focus)

    count = chunker.count(room)
    if count < policy.parallel_min_chunks:
        return sequential()
    merge_template = conservative_tokens(
        merge_prompt([], previous_summary=previous, budget=budget, language=language, focus=focus),
        cpt,
    )
    merge_room = policy.input_budget(budget) - merge_template - _MARGIN_TOKENS
    parts, tokens, part_budget = _parts(
        chunker, count, budget=budget, merge_room=merge_room, language=language, focus=focus
    )
    if len(parts) < 2:  # only carrying the previous summary made it several chunks
        return sequential()
    batch = max(2, merge_room // (part_budget + _PART_HEADING_TOKENS))
    return RequestPlan(parts, tokens, previous, budget, language, focus, True, part_budget, batch)


def _parts(
    chunker: _Chunker,
    count: int,
    *,
    budget: int,
    merge_room: int,
    language: Language,
    focus: str | None,
) -> tuple[tuple[tuple[str, ...], ...], tuple[int, ...], int]:
    """The parts of a long middle and their budget: what lets the final merge hold what
    the parts hold — the parts there are share what one merge request reads (at most the
    final budget each, at least the floor). A larger part budget leaves each part less to
    read, so more parts: the budget is the largest that its own parts can share (found by
    bisection; the floor always can)."""
    policy, cpt = chunker.policy, chunker.policy.chars_per_token

    def share(parts: int) -> int:
        each = merge_room // max(2, parts) - _PART_HEADING_TOKENS
        return max(1, min(budget, max(policy.summary_floor_tokens, each)))

    def room(part_budget: int) -> int:
        template = conservative_tokens(
            part_prompt("", part=1, parts=1, budget=part_budget, language=language, focus=focus),
            cpt,
        )
        return max(500, policy.input_budget(part_budget) - template - _MARGIN_TOKENS)

    low, high = min(budget, share(count)), budget
    while low < high:  # share(parts at a budget) only falls as the budget grows
        middle = (low + high + 1) // 2
        if share(chunker.count(room(middle))) >= middle:
            low = middle
        else:
            high = middle - 1
    parts, tokens = chunker.chunks(room(low))
    return parts, tokens, low


class _Runner:
    """Sends one plan's requests; ``ask`` checks an answer and retries it — the first
    rejected answer of the whole run only (``retry_left``, shared by every request)."""

    def __init__(
        self, rp: RequestPlan, summarize: Summarize, policy: CompactionPolicy, final: FinalCheck
    ) -> None:
        self.rp = rp
        self.summarize = summarize
        self.policy = policy
        self.final = final
        self.retry_left = 1
        self.lock = threading.Lock()

    def _take_retry(self) -> bool:
        with self.lock:
            if not self.retry_left:
                return False
            self.retry_left -= 1
            return True

    def ask(
        self, request: SummaryRequest, *, input_chars: int, input_tokens: int, last: bool
    ) -> RunResult:
        run = RunResult("")
        while True:
            reply = as_reply(self.summarize(request))
            run.requests.append(replace(request, prompt=""))  # the prompt is not kept
            run.input_tokens += reply.input_tokens or 0
            run.output_tokens += reply.output_tokens or 0
            text = strip_reasoning(reply.text)
            problem = rejection(
                reply,
                text,
                max_output_tokens=request.max_output_tokens,
                input_chars=input_chars,
                input_tokens=input_tokens,
                policy_floor=self.policy.min_summary_tokens,
            )
            if problem is None and last:
                problem = self.final(text)
            if problem is None:
                run.text = text
                return run
            if request.attempt or not self._take_retry():
                raise rejected(*problem)
            run.discarded += 1
            request = self._again(request, problem[0], input_chars, input_tokens)

    def _again(
        self, request: SummaryRequest, reason: str, input_chars: int, input_tokens: int
    ) -> SummaryRequest:
        """The request once more, with a note saying what was wrong with its answer."""
        target = request.target_tokens
        if reason in (SUMMARY_CUT_OFF, SUMMARY_OVER_BUDGET):
            target = max(1, target // 2)
        elif reason == SUMMARY_LONGER_THAN_INPUT:
            # the check counts characters: never ask for more tokens than the input
            # has characters at the policy's rate (CJK input counts a token a
            # character in input_tokens, so a third of those can still be too long)
            cpt = self.policy.chars_per_token
            target = max(1, min(target, input_tokens // 3, input_chars // cpt))
        note = retry_note(_NOTE.get(reason, "empty"), self.rp.language, target)
        return replace(request, prompt=request.prompt + note, attempt=1, target_tokens=target)

    def map(self, jobs: Sequence[Callable[[], RunResult]]) -> list[RunResult]:
        """Run ``jobs`` at most ``summary_concurrency`` at a time, the calling thread one of
        the workers; results in job order. After a failure no new job starts, and the
        failure of the earliest job is raised (the same one whatever the timing)."""
        workers = min(self.policy.summary_concurrency, len(jobs))
        if workers <= 1:
            return [job() for job in jobs]
        pool = _Jobs(jobs, helpers=workers - 1)
        pool.work()
        pool.close()
        if pool.errors:
            raise pool.errors[min(pool.errors)]
        return [r for r in pool.results if r is not None]


class _Jobs:
    """The jobs of one ``map``, handed out in order to whichever thread asks first.

    Helper threads are started one at a time: whenever a thread takes a job and no
    started helper is waiting for one, one more is started (up to ``helpers``). A helper
    runs when the running thread lets go of the GIL, above all while a request waits for
    the model, so with a model that takes seconds every job is under way within
    microseconds, while a summarizer that answers at once costs one thread, not one per
    job. They are started with ``_thread.start_new_thread``, which returns at once
    (``threading.Thread.start`` waits until each new thread runs). ``close`` waits for
    the jobs under way and for a started helper to have asked once: left waiting for the
    GIL, it would force a switch in the middle of whatever the caller does next. Starting
    a thread per job and those late switches were a third of a 1,000-message compaction.
    When no thread can be started, the threads there are do the jobs.
    """

    def __init__(self, jobs: Sequence[Callable[[], RunResult]], *, helpers: int) -> None:
        self.jobs = jobs
        self.results: list[RunResult | None] = [None] * len(jobs)
        self.errors: dict[int, BaseException] = {}
        self.changed = threading.Condition(threading.Lock())
        self.taken = 0
        self.running = 0
        self.closed = False
        self.helpers_left = helpers
        self.waiting_helpers = 0  # started, and not yet asking for a job

    def _take(self, *, helper: bool) -> int | None:
        with self.changed:
            if helper:
                self.waiting_helpers -= 1
                self.changed.notify_all()
            if self.closed or self.errors or self.taken >= len(self.jobs):
                return None
            self.taken += 1
            self.running += 1
            if self.helpers_left and not self.waiting_helpers and self.taken < len(self.jobs):
                try:
                    _thread.start_new_thread(self._help, ())
                except RuntimeError:  # "can't start new thread"
                    self.helpers_left = 0
                else:
                    self.helpers_left -= 1
                    self.waiting_helpers += 1
            return self.taken - 1

    def _help(self) -> None:
        self.work(helper=True)  # its first _take ends its wait

    def work(self, *, helper: bool = False) -> None:
        while (index := self._take(helper=helper)) is not None:
            helper = False
            try:
                self.results[index] = self.jobs[index]()
            except BaseException as exc:  # re-raised in the calling thread
                with self.changed:
                    self.errors[index] = exc
            with self.changed:
                self.running -= 1
                self.changed.notify_all()

    def close(self) -> None:
        """No job starts any more; wait for the ones under way, and for a started helper
        to see that (left waiting for the GIL, it would interrupt whatever runs next)."""
        with self.changed:
            self.closed = True
            while self.running or self.waiting_helpers:
                self.changed.wait()


def _sequential(runner: _Runner) -> RunResult:
    rp, cpt = runner.rp, runner.policy.chars_per_token
    total = RunResult("")
    running = rp.previous
    count = len(rp.chunk_pieces)
    for index, chunk in enumerate(rp.chunk_pieces):
        carried = conservative_tokens(running, cpt) if running else 0
        input_tokens = rp.chunk_tokens[index] + carried
        target = target_tokens(rp.budget, input_tokens, carried)
        if running is None:
            prompt = first_prompt(chunk, budget=target, language=rp.language, focus=rp.focus)
        else:
            prompt = update_prompt(
                running, chunk, budget=target, language=rp.language, focus=rp.focus
            )
        request = SummaryRequest(
            prompt=prompt,
            max_output_tokens=rp.budget,
            language=rp.language,
            is_update=running is not None,
            chunk_index=index,
            chunk_count=count,
            kind=SUMMARY,
            target_tokens=target,
        )
        run = runner.ask(
            request,
            input_chars=rp.chunk_chars(index) + len(running or ""),
            input_tokens=input_tokens,
            last=index == count - 1,
        )
        _add(total, run)
        running = run.text
    total.text = running or ""
    return total


def _add(total: RunResult, run: RunResult) -> None:
    total.requests.extend(run.requests)
    total.input_tokens += run.input_tokens
    total.output_tokens += run.output_tokens
    total.discarded += run.discarded


def _parallel(runner: _Runner) -> RunResult:
    """Parts concurrently, then merge rounds. A part's prompt (one join, in C) is built by
    the worker that sends it and dropped with its answer, so a middle of many megabytes is
    never held as prompts all at once."""
    rp = runner.rp
    count = rp.request_count
    total = RunResult("")
    runs = runner.map(
        [_part_job(runner, i, chunk, count) for i, chunk in enumerate(rp.chunk_pieces)]
    )
    for run in runs:
        _add(total, run)
    texts = [run.text for run in runs]
    index = len(rp.chunk_pieces)
    for round_size in rp.merge_rounds:
        final = round_size == 1  # earlier rounds send at least two merges each
        batch = len(texts) if final else rp.merge_batch
        jobs = []
        for start in range(0, len(texts), batch):
            batch_texts = texts[start : start + batch]
            jobs.append(_merge_job(runner, index, batch_texts, start + 1, final=final, count=count))
            index += 1
        runs = runner.map(jobs)
        for run in runs:
            _add(total, run)
        texts = [run.text for run in runs]
    total.text = texts[0]
    return total


def _part_job(
    runner: _Runner, index: int, chunk: Sequence[str], count: int
) -> Callable[[], RunResult]:
    """The request for one chunk of a long middle, as a job for ``_Runner.map``."""
    rp = runner.rp

    def job() -> RunResult:  # the prompt exists only while its request is in flight
        input_tokens = rp.chunk_tokens[index]
        target = target_tokens(rp.part_budget, input_tokens)
        request = SummaryRequest(
            prompt=part_prompt(
                chunk,
                part=index + 1,
                parts=len(rp.chunk_pieces),
                budget=target,
                language=rp.language,
                focus=rp.focus,
            ),
            max_output_tokens=rp.part_budget,
            language=rp.language,
            is_update=False,
            chunk_index=index,
            chunk_count=count,
            kind=PART,
            target_tokens=target,
        )
        chars = rp.chunk_chars(index)
        return runner.ask(request, input_chars=chars, input_tokens=input_tokens, last=False)

    return job


def _merge_job(
    runner: _Runner,
    index: int,
    texts: Sequence[str],
    first_part: int,
    *,
    final: bool,
    count: int,
) -> Callable[[], RunResult]:
    """The request merging ``texts`` (partial summaries from ``first_part`` on; the final
    merge also carries the previous summary), as a job for ``_Runner.map``."""
    rp, cpt = runner.rp, runner.policy.chars_per_token
    previous = rp.previous if final else None
    carried = conservative_tokens(previous, cpt) if previous else 0
    input_tokens = sum(conservative_tokens(t, cpt) for t in texts) + carried
    budget = rp.budget if final else rp.part_budget
    target = merge_target(budget, input_tokens)
    request = SummaryRequest(
        prompt=merge_prompt(
            texts,
            previous_summary=previous,
            budget=target,
            language=rp.language,
            focus=rp.focus,
            first_part=first_part,
        ),
        max_output_tokens=budget,
        language=rp.language,
        is_update=previous is not None,
        chunk_index=index,
        chunk_count=count,
        kind=MERGE,
        target_tokens=target,
    )
    chars = sum(len(t) for t in texts) + len(previous or "")
    return lambda: runner.ask(request, input_chars=chars, input_tokens=input_tokens, last=final)


def run_requests(
    rp: RequestPlan,
    summarize: Summarize,
    policy: CompactionPolicy,
    *,
    final_check: FinalCheck = lambda text: None,
) -> RunResult:
    """Send the plan's requests and return the final summary text (checked, retried once).

    ``final_check`` adds the caller's own test of the final summary (it must fit the room).
    Exceptions raised by ``summarize`` propagate unchanged.
    """
    runner = _Runner(rp, summarize, policy, final_check)
    return _parallel(runner) if rp.parallel else _sequential(runner)
