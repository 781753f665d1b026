"""What compaction keeps, where it lands and what it wastes, on the 18 real transcripts
(issues 13 and 25).

Every transcript in ``tests/data/transcripts`` gets facts planted in it — unique tokens
such as ``FACT00042QX`` — in user text, assistant text, tool-call arguments and long tool
outputs (each inside the part of a message the summarizer is shown: the first 4000 and
last 1500 characters, the seed's cut). It is then compacted at 8k, 16k, 32k and 128k
windows (automatically when it is over the threshold, else as a ``/compact``) with a
summarizer that writes what it is asked for: every fact it is given, within the length the
request asks for, so every loss measured is the engine's own:

- the share of the middle's facts (every message that left the context or is kept as an
  anchor) that reach the summarizer;
- compactions that end above the threshold (and those that fail instead, with a reason);
- compactions whose head and tail stay byte-identical;
- the user's words: middle user messages kept verbatim, and compactions that keep their
  newest middle user message verbatim (whole, or cut in the middle into the summary);
- landing: where the view ends after an automatic compaction, as a share of the threshold
  (the target: the policy's ``target_percent``, 60% of it);
- storm: replaying each transcript turn by turn (a turn: a user message, or a model step
  with its tool results) with automatic compaction at the threshold, the compactions per
  100 turns; and in the chains, compactions that save less than 20%;
- waste: requests whose answer was thrown away (a retried answer, or a whole summary
  discarded because it was no better than pruning), with their input tokens;
- 16k against 128k: the facts of the summarized messages still alive in the compacted view
  (in the summary or kept verbatim) with a 16k auxiliary model and with a 128k one;
- a 10-round chain per transcript (compact its first 30%, add the next ninth of the rest,
  compact again…): how many of the facts summarized in round 1 reach round 10's summarizer,
  with re-grounding by ``should_reground`` and, for comparison, without.

Targets: ≥ 99%, 0, 100%, 100%; median landing ≤ 60% of the threshold at 8k, 16k and 32k;
0 chain compactions saving < 20%; 0 discarded requests in the chains; facts alive with a
16k auxiliary model within 5 points of a 128k one.

    .venv/bin/python -m bench.compaction_fidelity [--write]

Only the pure core and the standard library: no Django, no model.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.report import write_section
from condense import (
    COMPACTED,
    PRUNED_ONLY,
    CompactionPolicy,
    CompactionResult,
    Message,
    SummaryRejected,
    SummaryReply,
    SummaryRequest,
    ToolCall,
    compress,
    estimate_messages,
    next_chain_depth,
    plan,
    repair_tool_pairing,
    should_reground,
)
from condense.boundaries import find_compress_start

HEADING = "## Compaction fidelity"
TRANSCRIPTS = Path(__file__).resolve().parents[1] / "tests" / "data" / "transcripts"
WINDOWS = (8_000, 16_000, 32_000, 128_000)
LANDING_WINDOWS = (8_000, 16_000, 32_000)  # the landing and storm targets' windows
AUX_WINDOW = 32_000
AUX_SMALL, AUX_LARGE = 16_000, 128_000  # the facts-alive comparison
LANDING_TARGET = 0.60  # of the threshold: the median view after an automatic compaction
SMALL_SAVING = 0.20  # a chain compaction saving less than this is a storm's seed
# The same command on the core before issue 25 (condense as of e82ded4, this benchmark as
# of 38cec70), 2026-12-04: recorded so the section shows before and after side by side.
BEFORE_ISSUE_25 = (
    "Before issue 25 (the same command on the core as it was, condense at e82ded4): median "
    "view after an automatic compaction 68.0% / 49.8% / 60.6% of the threshold at 8k / 16k "
    "/ 32k (5 of 13, 8 of 12, 4 of 8 at or under 60%); replayed turn by turn, 26.3 / 12.6 / "
    "5.4 automatic compactions per 100 turns, landing at a median 92.8% / 84.3% / 75.2% (34 "
    "of 327, 47 of 156, 20 of 67 at or under 60%); 252 chain compactions saving less than "
    "20%; 9 discarded requests in the chains (a summary found no better than pruning after "
    "it was written); facts alive 65.5% with a 16k auxiliary model against 94.4% with a "
    "128k one (51.9 / 64.4 / 71.5 / 77.7% against 80.1 / 100 / 100 / 100% at 8k / 16k / "
    "32k / 128k)."
)
ROUNDS = 10
FIRST_SHARE, FIRST_MIN = 0.3, 10  # round 1's share of a transcript (the rest: 9 pieces)
FACT = re.compile(r"FACT\d{5}[A-Z]{2}")
HEAD_CHARS, TAIL_CHARS = 4_000, 1_500  # the seed's serialization cut
LONG_OUTPUT = 500  # tool outputs longer than this get facts


# --- the transcripts and their facts ---------------------------------------------------


class Facts:
    """Unique, reproducible tokens, and where each was planted."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.count = 0
        self.kind: dict[str, str] = {}

    def new(self, kind: str) -> str:
        self.count += 1
        letters = "".join(self.rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(2))
        token = f"FACT{self.count:05d}{letters}"
        self.kind[token] = kind
        return token


def _insert(text: str, token: str, rng: random.Random, low: int, high: int) -> str:
    """``token`` at a word boundary between ``low`` and ``high`` (clamped to the text)."""
    high = max(0, min(high, len(text)))
    at = rng.randint(max(0, min(low, high)), high)
    space = text.rfind(" ", 0, at)
    at = space + 1 if space != -1 and at - space < 40 else at
    return f"{text[:at]}{token} {text[at:]}"


def plant(message: Message, facts: Facts) -> Message:
    """``message`` with facts in its text (within the head window), in each tool call's
    arguments, and in long tool outputs (one within the head window, one within the tail)."""
    rng = facts.rng
    content = message.content
    calls = message.tool_calls
    if message.role in ("user", "assistant") and content.strip():
        content = _insert(content, facts.new(message.role), rng, 0, HEAD_CHARS - 200)
    if message.role == "tool" and len(content) > LONG_OUTPUT:
        tail_from = max(len(content) - TAIL_CHARS + 200, HEAD_CHARS)
        if len(content) > HEAD_CHARS + TAIL_CHARS:
            content = _insert(content, facts.new("tool output"), rng, tail_from, len(content))
        content = _insert(content, facts.new("tool output"), rng, 0, HEAD_CHARS - 200)
    if calls:
        planted = []
        for call in calls:
            token = facts.new("tool call")
            try:
                args = json.loads(call.arguments or "{}")
            except ValueError:
                args = None
            if isinstance(args, dict):
                arguments = json.dumps({"fact_id": token, **args}, ensure_ascii=False)
            else:
                arguments = f"{token} {call.arguments}"
            planted.append(ToolCall(call.id, call.name, arguments))
        calls = tuple(planted)
    return Message(message.role, content, calls, message.tool_call_id, message.id)


def load(path: Path, facts: Facts) -> list[Message]:
    """A normalized OpenAI-format transcript as core messages numbered from 1, with facts."""
    out = []
    for number, data in enumerate(json.loads(path.read_text(encoding="utf-8")), start=1):
        calls = []
        for call in data.get("tool_calls") or ():
            function = call.get("function") or call
            calls.append(ToolCall(call["id"], function["name"], function.get("arguments") or ""))
        message = Message(
            role=data["role"],
            content=data.get("content") or "",
            tool_calls=tuple(calls),
            tool_call_id=data.get("tool_call_id"),
            id=number,
        )
        out.append(plant(message, facts) if message.role != "system" else message)
    return out


def facts_in(messages: Sequence[Message]) -> set[str]:
    found: set[str] = set()
    for m in messages:
        found.update(FACT.findall(m.content))
        for call in m.tool_calls:
            found.update(FACT.findall(call.arguments))
    return found


# --- the summarizer: it repeats every fact it is given ------------------------------------


class Repeater:
    """Answers with every fact of its prompt, in order, as far as its output limit allows
    (``target_tokens`` at four characters a token); records what reached it."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.requests = 0
        self.log: list[tuple[SummaryRequest, int]] = []  # each request, its input tokens

    def __call__(self, request: SummaryRequest) -> SummaryReply:
        self.requests += 1
        self.log.append((replace(request, prompt=""), len(request.prompt) // 4))
        found = list(dict.fromkeys(FACT.findall(request.prompt)))
        self.seen.update(found)
        room = request.target_tokens * 4
        text = "## Goal\nContinue the work.\n## Critical context\n"
        kept = []
        used = len(text)
        for token in found:
            if used + len(token) + 1 > room:
                break
            kept.append(token)
            used += len(token) + 1
        text += " ".join(kept)
        filler = "\n- (the turns above were read; every fact is listed)"
        while len(text) < min(200, room) and len(text) + len(filler) <= room:
            text += filler
        return SummaryReply(
            text,
            finish_reason="stop",
            input_tokens=len(request.prompt) // 4,
            output_tokens=len(text) // 4,
        )


# --- what every compaction reports -----------------------------------------------------


def discarded(result: CompactionResult) -> int:
    """Requests whose answer was thrown away: a retried answer, or every request of a
    summary discarded as no better than pruning (the core's own count where it keeps one)."""
    own = getattr(result, "discarded_requests", None)
    if own is not None:
        return int(own)
    retried = sum(1 for r in result.requests if r.attempt)
    return retried if result.status == COMPACTED else len(result.requests)


def wasted_tokens(result: CompactionResult | None, model: Repeater) -> int:
    """The input tokens of the requests ``discarded`` counts (``result`` None: it failed)."""
    if result is None or result.status != COMPACTED:
        return sum(tokens for _, tokens in model.log)
    retried = {(r.kind, r.chunk_index) for r, _ in model.log if r.attempt}
    return sum(
        tokens for r, tokens in model.log if not r.attempt and (r.kind, r.chunk_index) in retried
    )


def saving(result: CompactionResult) -> float:
    return 1 - result.tokens_after / result.tokens_before if result.tokens_before else 0.0


def with_summary_id(result: CompactionResult, summary_id: int) -> list[Message]:
    """The compacted view, its new summary numbered as storage would number it."""
    out = []
    for m in result.messages:
        if m is result.summary_message:
            m = Message(m.role, m.content, is_summary=True, id=summary_id)
        out.append(m)
    return out


# --- one compaction ----------------------------------------------------------------------


@dataclass
class Measured:
    name: str
    window: int
    forced: bool
    status: str
    aux: int = AUX_WINDOW
    detail: str | None = None
    above_threshold: bool = False
    middle_facts: int = 0
    reached: int = 0
    verbatim: bool = True
    middle_users: int = 0
    users_kept: int = 0
    newest_user_kept: bool | None = None  # None: no user message in the middle
    requests: int = 0
    round_trips: int = 0
    missed: Counter[str] = field(default_factory=Counter)
    landing: float | None = None  # tokens after ÷ threshold (a changed context)
    discarded: int = 0
    summarized_facts: int = 0  # facts of the messages that left the context
    alive: int = 0  # of those, still in the compacted view (summary, index, anchors)


def _verbatim(
    result: CompactionResult, inputs: Sequence[Message], policy: CompactionPolicy
) -> bool:
    """Head and tail byte-identical (earlier summaries and orphan results excepted)."""
    assert result.span is not None
    out = {m.id: m for m in result.messages if m.id is not None}
    removed = set(result.summarized_ids)
    edges = [*inputs[: result.span.start], *inputs[result.span.end :]]
    return all(
        m.is_summary or m.id in removed or (m.id in out and out[m.id].content == m.content)
        for m in edges
    ) and all(
        m.id in out
        for m in inputs[: find_compress_start(inputs, policy.protect_first_n)]
        if m.role != "tool" and not m.is_summary
    )


def _users(row: Measured, result: CompactionResult, messages: list[Message]) -> None:
    """The middle's user messages kept verbatim, and whether the newest one is kept."""
    assert result.span is not None
    users = [m for m in messages[result.span.start : result.span.end] if m.role == "user"]
    users = [m for m in users if m.content.strip() and not m.is_summary]
    row.middle_users = len(users)
    kept = {m.id: m for m in result.messages if m.id in set(result.anchored_ids)}
    row.users_kept = sum(1 for m in users if m.id in kept and kept[m.id].content == m.content)
    if users:
        newest = users[-1]
        whole = newest.id in kept
        summary = result.summary_message.content if result.summary_message else ""
        cut = f"#{newest.id}）" in summary or f"#{newest.id})" in summary  # the label
        cut = cut and newest.content[:20] in summary and newest.content[-20:] in summary
        row.newest_user_kept = whole or cut


def measure(
    name: str, messages: list[Message], window: int, facts: Facts, aux: int = AUX_WINDOW
) -> Measured:
    policy = CompactionPolicy(context_window=window, aux_context_window=aux)
    forced = estimate_messages(messages) < policy.threshold_tokens
    model = Repeater()
    try:
        result = compress(messages, policy, model, force=forced)
    except SummaryRejected as exc:
        return Measured(name, window, forced, exc.reason, aux, str(exc), requests=model.requests)
    row = Measured(name, window, forced, result.status, aux, result.detail)
    row.requests, row.discarded = model.requests, discarded(result)
    if result.changed:
        row.landing = result.tokens_after / policy.threshold_tokens
    if result.status != COMPACTED:
        return row
    assert result.span is not None
    row.above_threshold = result.tokens_after >= policy.threshold_tokens
    middle_ids = set(result.summarized_ids) | set(result.anchored_ids)
    middle = [m for m in messages if m.id in middle_ids]
    planted = facts_in(middle)
    row.middle_facts, row.reached = len(planted), len(planted & model.seen)
    row.missed = Counter(facts.kind[f] for f in planted - model.seen)
    left = facts_in([m for m in messages if m.id in set(result.summarized_ids)])
    row.summarized_facts, row.alive = len(left), len(left & facts_in(result.messages))
    row.verbatim = _verbatim(result, messages, policy)
    _users(row, result, messages)
    planned = plan(messages, policy, force=forced).requests
    row.round_trips = planned.round_trips(policy.summary_concurrency) if planned else 0
    return row


# --- the chain ---------------------------------------------------------------------------


def segments(messages: list[Message], rounds: int) -> list[list[Message]]:
    """``messages`` in ``rounds`` consecutive pieces, cut where no tool result follows: the
    first ``FIRST_SHARE`` of them (at least ``FIRST_MIN`` messages) for round 1, so it has a
    middle to summarize, the rest in equal pieces."""
    cuts = [i for i in range(1, len(messages)) if messages[i].role != "tool"]
    first = max(FIRST_MIN, int(len(messages) * FIRST_SHARE))
    targets = [first + (len(messages) - first) * r // (rounds - 1) for r in range(rounds - 1)]
    bounds = [0]
    for target in targets:
        cut = min(cuts, key=lambda c: abs(c - target)) if cuts else len(messages)
        if bounds[-1] < cut < len(messages):
            bounds.append(cut)
    bounds.append(len(messages))
    return [messages[a:b] for a, b in itertools.pairwise(bounds)]


@dataclass
class Chain:
    name: str
    window: int
    regrounding: bool
    rounds: int = 0
    compacted: int = 0
    regrounded: int = 0
    above_threshold: int = 0
    round_one_facts: int = 0
    reached_last: int = 0
    pruned_only: int = 0
    small_saving: int = 0  # changed the context, saving less than SMALL_SAVING
    requests: int = 0
    discarded: int = 0
    wasted_tokens: int = 0
    input_tokens: int = 0
    failed: Counter[str] = field(default_factory=Counter)


def depth_after(folded: int, result: CompactionResult) -> int:
    """The chain depth the context's summaries count as after ``result``: a new summary's,
    or (issue 25) a pruned-only compaction's reset; before that rule it kept the depth."""
    try:
        return next_chain_depth(folded, regrounded=result.regrounded, status=result.status)  # type: ignore[call-arg]
    except TypeError:
        if result.status != COMPACTED:
            return folded
        return next_chain_depth(folded, regrounded=result.regrounded)


def _chain_round(
    row: Chain,
    context: list[Message],
    policy: CompactionPolicy,
    grounding: list[Message] | None,
    contents: dict[int, str],
) -> tuple[CompactionResult | None, Repeater]:
    model = Repeater()
    try:
        result = compress(
            context,
            policy,
            model,
            force=True,
            original_contents=contents,
            regrounding_originals=grounding,
        )
    except SummaryRejected as exc:
        row.failed[exc.reason] += 1
        row.requests += model.requests
        row.discarded += model.requests
        row.wasted_tokens += wasted_tokens(None, model)
        return None, model
    row.requests += len(result.requests)
    row.discarded += discarded(result)
    row.wasted_tokens += wasted_tokens(result, model)
    row.input_tokens += result.input_tokens
    if result.changed:
        row.small_saving += saving(result) < SMALL_SAVING
    elif result.status != COMPACTED:
        row.failed[result.status] += 1
    return result, model


def chain(name: str, messages: list[Message], window: int, *, regrounding: bool) -> Chain:
    policy = CompactionPolicy(context_window=window, aux_context_window=AUX_WINDOW)
    pieces = segments(messages, ROUNDS)
    row = Chain(name, window, regrounding, rounds=len(pieces))
    originals = {m.id: m for m in messages if m.id is not None}
    contents = {i: m.content for i, m in originals.items()}
    compacted: list[Message] = []  # every original that has left the context, in order
    depth: dict[int, int] = {}  # summary id → chain depth
    context: list[Message] = []
    round_one: set[str] = set()
    for number, piece in enumerate(pieces, start=1):
        context = [*context, *piece]
        folded = max((depth.get(m.id or 0, 0) for m in context if m.is_summary), default=0)
        grounding = None
        if regrounding and compacted:
            tokens = estimate_messages(compacted)
            if should_reground(folded, originals_tokens=tokens):
                grounding = list(compacted)
        result, model = _chain_round(row, context, policy, grounding, contents)
        if result is not None and result.status == COMPACTED:
            row.compacted += 1
            row.regrounded += result.regrounded
            row.above_threshold += result.tokens_after >= policy.threshold_tokens
            summary_id = 10_000_000 + number
            depth[summary_id] = depth_after(folded, result)
            removed = set(result.summarized_ids)
            left = [originals[i] for i in sorted(removed) if i in originals]
            if number == 1:
                round_one = facts_in(left)
            compacted.extend(left)
            context = with_summary_id(result, summary_id)
        elif result is not None and result.changed:  # pruned only: the pruned view goes on
            row.pruned_only += 1
            for m in context:
                if m.is_summary and m.id is not None:
                    depth[m.id] = depth_after(folded, result)
            context = list(result.messages)
        if number == len(pieces):
            row.round_one_facts = len(round_one)
            # what round 10's summarizer read; a round that sent no request (no gain)
            # leaves them where the next one will read them: in the context
            seen = model.seen if model.requests else facts_in(context)
            row.reached_last = len(round_one & seen)
    return row


# --- the replay: automatic compaction turn by turn ---------------------------------------


def turns(messages: Sequence[Message]) -> list[list[Message]]:
    """A user message, or a model step with its tool results, one turn each."""
    out: list[list[Message]] = []
    for m in messages:
        if m.role == "tool" and out:
            out[-1].append(m)
        else:
            out.append([m])
    return out


@dataclass
class Replay:
    name: str
    window: int
    turns: int = 0
    compactions: int = 0  # automatic compactions that changed the context
    landings: list[float] = field(default_factory=list)  # tokens after ÷ threshold
    short: int = 0  # compactions that said they could not reach the target
    failed: Counter[str] = field(default_factory=Counter)
    requests: int = 0
    discarded: int = 0


def replay(name: str, messages: list[Message], window: int) -> Replay:
    """The transcript turn by turn, compacted automatically whenever it reaches the
    threshold, the way a chat meets it; an earlier summary that would be squeezed is
    re-grounded from the originals it stands for (where the core can)."""
    policy = CompactionPolicy(context_window=window, aux_context_window=AUX_WINDOW)
    originals = {m.id: m for m in messages if m.id is not None}
    contents = {i: m.content for i, m in originals.items()}
    compacted: list[Message] = []  # every original that has left the context, in order
    steps = turns(messages)
    context = steps.pop(0) if steps and steps[0][0].role == "system" else []
    row = Replay(name, window, turns=len(steps))
    for number, step in enumerate(steps, start=1):
        context = [*context, *step]
        if estimate_messages(context) < policy.threshold_tokens:
            continue
        grounding = _squeeze_grounding(compacted)
        model = Repeater()
        try:
            result = compress(context, policy, model, original_contents=contents, **grounding)
        except SummaryRejected as exc:
            row.failed[exc.reason] += 1
            row.requests += model.requests
            row.discarded += model.requests
            continue
        row.requests += len(result.requests)
        row.discarded += discarded(result)
        if not result.changed:
            row.failed[result.status] += 1
            continue
        row.compactions += 1
        row.landings.append(result.tokens_after / policy.threshold_tokens)
        row.short += not getattr(result, "reached_target", True)
        left = set(result.summarized_ids)
        compacted.extend(originals[i] for i in sorted(left) if i in originals)
        context = with_summary_id(result, 20_000_000 + number)
    return row


def _squeeze_grounding(compacted: list[Message]) -> dict[str, object]:
    """The originals the context's summaries stand for, offered for re-grounding a summary
    that would otherwise be squeezed (issue 25), where the core can take them."""
    if not compacted or "reground_only_if_squeezed" not in compress.__code__.co_varnames:
        return {}
    return {"regrounding_originals": list(compacted), "reground_only_if_squeezed": True}


# --- the report --------------------------------------------------------------------------


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "—"


@dataclass
class Run:
    rows: list[Measured] = field(default_factory=list)
    chains: list[Chain] = field(default_factory=list)
    replays: list[Replay] = field(default_factory=list)
    aux_rows: list[Measured] = field(default_factory=list)  # 16k and 128k auxiliary models
    seconds: float = 0.0


def run() -> Run:
    started = time.perf_counter()
    out = Run()
    for n, path in enumerate(sorted(TRANSCRIPTS.glob("*.json"))):
        facts = Facts(seed=n)
        messages = load(path, facts)
        repaired, _ = repair_tool_pairing(messages)
        assert len(repaired) == len(messages), f"{path.name} is not well paired"
        for window in WINDOWS:
            out.rows.append(measure(path.stem, messages, window, facts))
            for aux in (AUX_SMALL, AUX_LARGE):
                out.aux_rows.append(measure(path.stem, messages, window, facts, aux))
            for regrounding in (True, False):
                out.chains.append(chain(path.stem, messages, window, regrounding=regrounding))
            if window in LANDING_WINDOWS:
                out.replays.append(replay(path.stem, messages, window))
    out.seconds = time.perf_counter() - started
    return out


def _fidelity_lines(rows: list[Measured], totals: Counter[str]) -> list[str]:
    lines = [
        "| window | compacted (auto + forced) | pruned only | failed, with a reason | middle facts "
        "reaching the summarizer | above the threshold | head and tail verbatim | middle user "
        "messages kept verbatim | newest middle user message kept | requests (most round "
        "trips) |",
        "|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for window in WINDOWS:
        mine = [r for r in rows if r.window == window]
        done = [r for r in mine if r.status == COMPACTED]
        pruned = sum(1 for r in mine if r.status == PRUNED_ONLY)
        failed = Counter(r.status for r in mine if r.status not in (COMPACTED, PRUNED_ONLY))
        auto = sum(1 for r in done if not r.forced)
        facts, reached = sum(r.middle_facts for r in done), sum(r.reached for r in done)
        above = sum(r.above_threshold for r in done)
        verbatim = sum(r.verbatim for r in done)
        users, kept = sum(r.middle_users for r in done), sum(r.users_kept for r in done)
        newest = [r.newest_user_kept for r in done if r.newest_user_kept is not None]
        requests = sum(r.requests for r in mine)
        trips = max((r.round_trips for r in done), default=0)
        failures = ", ".join(f"{status} {n}" for status, n in sorted(failed.items())) or "none"
        lines.append(
            f"| {window // 1000}k | {len(done)} ({auto} + {len(done) - auto}) | {pruned} | "
            f"{failures} | "
            f"{reached:,} of {facts:,} ({_pct(reached, facts)}) | {above} | "
            f"{verbatim} of {len(done)} | {kept} of {users} | {sum(newest)} of {len(newest)} | "
            f"{requests} ({trips}) |"
        )
        totals.update(
            facts=facts,
            reached=reached,
            above=above,
            verbatim=verbatim,
            compacted=len(done),
            newest=sum(newest),
            with_users=len(newest),
        )
    return lines


def _median(values: Sequence[float]) -> float | None:
    ordered = sorted(values)
    if not ordered:
        return None
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _share(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def _landing_lines(run: Run, totals: Counter[str]) -> list[str]:
    lines = [
        "| window | automatic compactions (one per transcript over the threshold): median "
        "view after, of the threshold | at or under 60% | replay: turns | automatic "
        "compactions | per 100 turns | median view after | at or under 60% | said the "
        "target was out of reach | failed attempts | requests (discarded) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    worst = 0.0
    for window in LANDING_WINDOWS:
        auto = [r.landing for r in run.rows if r.window == window and not r.forced]
        auto = [x for x in auto if x is not None]
        mine = [r for r in run.replays if r.window == window]
        landings = [x for r in mine for x in r.landings]
        turns_, compactions = sum(r.turns for r in mine), sum(r.compactions for r in mine)
        failed = Counter[str]()
        for r in mine:
            failed.update(r.failed)
        failures = ", ".join(f"{k} {n}" for k, n in sorted(failed.items())) or "none"
        median = _median(auto)
        worst = max(worst, median or 0.0)
        lines.append(
            f"| {window // 1000}k | {_share(median)} ({len(auto)}) | "
            f"{sum(x <= LANDING_TARGET for x in auto)} of {len(auto)} | {turns_:,} | "
            f"{compactions} | {100 * compactions / turns_ if turns_ else 0:.1f} | "
            f"{_share(_median(landings))} | {sum(x <= LANDING_TARGET for x in landings)} of "
            f"{len(landings)} | {sum(r.short for r in mine)} | {failures} | "
            f"{sum(r.requests for r in mine)} ({sum(r.discarded for r in mine)}) |"
        )
        totals.update(replay_discarded=sum(r.discarded for r in mine))
    totals["worst_landing_permille"] = round(1000 * worst)
    return lines


def _chain_lines(chains: list[Chain], totals: Counter[str]) -> list[str]:
    lines = [
        "| window | re-grounding | chains | compactions (re-grounded) | pruned only | failed "
        "| above the threshold | saving < 20% | requests (discarded, their input tokens) | "
        "auxiliary input tokens | round-1 facts reaching round 10 |",
        "|---:|---|---:|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for window in WINDOWS:
        for regrounding in (True, False):
            mine = [c for c in chains if c.window == window and c.regrounding == regrounding]
            mine = [c for c in mine if c.round_one_facts]
            one = sum(c.round_one_facts for c in mine)
            last = sum(c.reached_last for c in mine)
            failed = Counter[str]()
            for c in mine:
                failed.update(c.failed)
            failures = ", ".join(f"{k} {n}" for k, n in sorted(failed.items())) or "none"
            small = sum(c.small_saving for c in mine)
            dropped = sum(c.discarded for c in mine)
            lines.append(
                f"| {window // 1000}k | {'yes' if regrounding else 'no'} | {len(mine)} | "
                f"{sum(c.compacted for c in mine)} ({sum(c.regrounded for c in mine)}) | "
                f"{sum(c.pruned_only for c in mine)} | {failures} | "
                f"{sum(c.above_threshold for c in mine)} | {small} | "
                f"{sum(c.requests for c in mine)} ({dropped}, "
                f"{sum(c.wasted_tokens for c in mine):,}) | "
                f"{sum(c.input_tokens for c in mine):,} | {last:,} of {one:,} "
                f"({_pct(last, one)}) |"
            )
            totals.update(chain_small=small, chain_discarded=dropped)
            if regrounding:
                totals.update(chain_one=one, chain_last=last)
    return lines


def _aux_lines(rows: list[Measured], totals: Counter[str]) -> list[str]:
    lines = [
        f"| window | facts of the summarized messages alive, {AUX_SMALL // 1000}k auxiliary "
        f"model | {AUX_LARGE // 1000}k auxiliary model | difference (points) | requests "
        f"{AUX_SMALL // 1000}k / {AUX_LARGE // 1000}k |",
        "|---:|---:|---:|---:|---:|",
    ]
    for window in WINDOWS:
        cells = []
        for aux in (AUX_SMALL, AUX_LARGE):
            mine = [r for r in rows if r.window == window and r.aux == aux]
            cells.append(
                (
                    sum(r.alive for r in mine),
                    sum(r.summarized_facts for r in mine),
                    sum(r.requests for r in mine),
                )
            )
            totals.update({f"alive_{aux}": cells[-1][0], f"facts_{aux}": cells[-1][1]})
        (a, fa, ra), (b, fb, rb) = cells
        diff = 100 * (b / fb if fb else 0) - 100 * (a / fa if fa else 0)
        lines.append(
            f"| {window // 1000}k | {a:,} of {fa:,} ({_pct(a, fa)}) | {b:,} of {fb:,} "
            f"({_pct(b, fb)}) | {diff:.1f} | {ra} / {rb} |"
        )
    return lines


def _targets(totals: Counter[str]) -> list[str]:
    share = totals["reached"] / totals["facts"] if totals["facts"] else 0
    chain_share = totals["chain_last"] / totals["chain_one"] if totals["chain_one"] else 0
    small, large = (
        totals[f"alive_{aux}"] / totals[f"facts_{aux}"] if totals[f"facts_{aux}"] else 0
        for aux in (AUX_SMALL, AUX_LARGE)
    )
    landing = totals["worst_landing_permille"] / 1000
    met = (
        share >= 0.99
        and totals["above"] == 0
        and totals["verbatim"] == totals["compacted"]
        and totals["newest"] == totals["with_users"]
        and landing <= LANDING_TARGET
        and totals["chain_small"] == 0
        and totals["chain_discarded"] == 0
        and 100 * (large - small) <= 5
    )
    return [
        f"Targets: middle facts reaching the summarizer ≥ 99% — {100 * share:.1f}%; compactions "
        f"above the threshold 0 — {totals['above']}; head and tail verbatim 100% — "
        f"{_pct(totals['verbatim'], totals['compacted'])}; newest middle user message kept "
        f"verbatim 100% — {_pct(totals['newest'], totals['with_users'])}; median view after an "
        f"automatic compaction ≤ 60% of the threshold at 8k, 16k and 32k — at most "
        f"{100 * landing:.1f}%; chain compactions saving < 20%: 0 — {totals['chain_small']}; "
        f"discarded requests in the chains: 0 — {totals['chain_discarded']} (replay: "
        f"{totals['replay_discarded']}); facts alive with a {AUX_SMALL // 1000}k auxiliary "
        f"model within 5 points of a {AUX_LARGE // 1000}k one — {100 * small:.1f}% against "
        f"{100 * large:.1f}%; round-1 facts reaching round 10 (re-grounding) — "
        f"{100 * chain_share:.1f}%. " + ("**Met.**" if met else "**NOT met.**"),
    ]


def render(result: Run, command: str) -> str:
    totals = Counter[str]()
    lines = [
        HEADING,
        "",
        f"Command: `{command}` — {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, "
        f"Python {sys.version.split()[0]}, {result.seconds:.1f} s. The 18 transcripts of "
        f"`tests/data/transcripts` with facts planted in user text, assistant text, tool-call "
        f"arguments and tool outputs over {LONG_OUTPUT} characters (inside the seed's "
        f"{HEAD_CHARS} + {TAIL_CHARS}-character cut), compacted with a summarizer that writes "
        f"what it is asked for (every fact it is given, within the length the request asks "
        f"for); policy defaults (threshold 70%, protect 3), auxiliary window {AUX_WINDOW:,}. "
        "A transcript over the threshold is compacted automatically, one under it by "
        "`/compact` (forced).",
        "",
        *_fidelity_lines(result.rows, totals),
    ]
    missed = Counter[str]()
    for r in result.rows:
        missed.update(r.missed)
    lines += [
        "",
        "Facts that did not reach the summarizer, by where they were planted: "
        + (", ".join(f"{k} {n}" for k, n in missed.most_common()) or "none")
        + ". Pruned only: a compaction that phase 1 alone made (old tool outputs out of the "
        "model's context, kept in storage for the next summary). Failures leave the history "
        "unchanged and say why (e.g. `head_too_long`: the protected first messages alone "
        "leave no room for a summary under the threshold, a whole demonstration trajectory in "
        "the first user message of 002).",
        "",
        "Landing and storms: where the view ends after an automatic compaction, as a share of "
        "the threshold, for the transcripts over it (the landing target: the median at or "
        "under 60%); then each transcript replayed turn by turn (a turn: a user message, or "
        "a model step with its tool results), compacted automatically whenever it reaches "
        "the threshold, an earlier summary that would be squeezed being re-grounded from its "
        "originals (`reground_only_if_squeezed`, where the core has it). Out of reach: the "
        "protected head and the seed's last three messages leave the summary less than it "
        "needs under the target (the result says so). Failed attempts: an automatic "
        "compaction that changed nothing, and sent no request (it is tried again at the "
        "next turn).",
        "",
        *_landing_lines(result, totals),
        "",
        f"Chain: round 1 compacts (`/compact`) the first {FIRST_SHARE:.0%} of a transcript (at "
        f"least {FIRST_MIN} messages), rounds 2–{ROUNDS} each add the next ninth of the rest to "
        "the context the round before left and compact again. Round-1 facts: those in the "
        "messages round 1 summarized; reaching round 10: found in round 10's requests (or, "
        "when round 10 sent none, still in the context it leaves for the next). With "
        "re-grounding, a compaction whose deepest folded summary has chain depth ≥ 3 "
        "(`should_reground`) is built from the kept originals instead of from that summary. "
        "Saving < 20%: a compaction (or pruning) that changed the context by less. Discarded: "
        "a request whose answer was thrown away (retried, or no better than pruning). Chains: "
        "the transcripts whose round 1 summarized something.",
        "",
        *_chain_lines(result.chains, totals),
        "",
        f"Facts alive: the facts planted in the messages that left the context, found in the "
        f"compacted view (the summary, its index, kept anchors), the same compactions with a "
        f"{AUX_SMALL // 1000}k and a {AUX_LARGE // 1000}k auxiliary model, side by side.",
        "",
        *_aux_lines(result.aux_rows, totals),
        "",
        *_targets(totals),
        "",
        BEFORE_ISSUE_25,
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="record the tables in BENCHMARKS.md")
    args = parser.parse_args(argv)
    result = run()
    text = render(
        result, "python -m bench.compaction_fidelity" + (" --write" if args.write else "")
    )
    print(text)
    if args.write:
        write_section(text, HEADING)


if __name__ == "__main__":
    main()
