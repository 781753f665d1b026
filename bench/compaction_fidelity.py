"""What compaction keeps, measured on the 18 real transcripts (issue 13).

Every transcript in ``tests/data/transcripts`` gets facts planted in it — unique tokens
such as ``FACT00042QX`` — in user text, assistant text, tool-call arguments and long tool
outputs (each inside the part of a message the summarizer is shown: the first 4000 and
last 1500 characters, the seed's cut). It is then compacted at 8k, 32k and 128k windows
(automatically when it is over the threshold, else as a ``/compact``) with a summarizer
that repeats every fact it is given, within its output limit, so every loss measured is the
engine's own:

- the share of the middle's facts (every message that left the context or is kept as an
  anchor) that reach the summarizer;
- compactions that end above the threshold (and those that fail instead, with a reason);
- compactions whose head and tail stay byte-identical;
- the user's words: middle user messages kept verbatim, and compactions that keep their
  newest middle user message verbatim (whole, or cut in the middle into the summary);
- a 10-round chain per transcript (compact its first 30%, add the next ninth of the rest,
  compact again…): how many of the facts summarized in round 1 reach round 10's summarizer,
  with re-grounding by ``should_reground`` and, for comparison, without.

Targets: ≥ 99%, 0, 100%, 100% (and the chain's round-1 facts reaching round 10).

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
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.report import write_section
from condense import (
    COMPACTED,
    PRUNED_ONLY,
    CompactionPolicy,
    CompactionResult,
    Message,
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
WINDOWS = (8_000, 32_000, 128_000)
AUX_WINDOW = 32_000
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

    def __call__(self, request: SummaryRequest) -> SummaryReply:
        self.requests += 1
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
        return SummaryReply(text, finish_reason="stop")


# --- one compaction ----------------------------------------------------------------------


@dataclass
class Measured:
    name: str
    window: int
    forced: bool
    status: str
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


def measure(name: str, messages: list[Message], window: int, facts: Facts) -> Measured:
    policy = CompactionPolicy(context_window=window, aux_context_window=AUX_WINDOW)
    forced = estimate_messages(messages) < policy.threshold_tokens
    model = Repeater()
    result = compress(messages, policy, model, force=forced)
    row = Measured(name, window, forced, result.status, result.detail, requests=model.requests)
    if result.status != COMPACTED:
        return row
    assert result.span is not None
    row.above_threshold = result.tokens_after >= policy.threshold_tokens
    middle_ids = set(result.summarized_ids) | set(result.anchored_ids)
    middle = [m for m in messages if m.id in middle_ids]
    planted = facts_in(middle)
    row.middle_facts, row.reached = len(planted), len(planted & model.seen)
    row.missed = Counter(facts.kind[f] for f in planted - model.seen)
    row.verbatim = _verbatim(result, messages, policy)
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
        model = Repeater()
        result = compress(
            context,
            policy,
            model,
            force=True,
            original_contents=contents,
            regrounding_originals=grounding,
        )
        if result.status == COMPACTED and result.summary_message is not None:
            row.compacted += 1
            row.regrounded += result.regrounded
            row.above_threshold += result.tokens_after >= policy.threshold_tokens
            summary_id = 10_000_000 + number
            depth[summary_id] = next_chain_depth(folded, regrounded=result.regrounded)
            removed = set(result.summarized_ids)
            left = [originals[i] for i in sorted(removed) if i in originals]
            if number == 1:
                round_one = facts_in(left)
            compacted.extend(left)
            new = []
            for m in result.messages:
                if m is result.summary_message:
                    m = Message(m.role, m.content, is_summary=True, id=summary_id)
                new.append(m)
            context = new
        elif result.changed:  # pruned only: the pruned view goes on
            context = list(result.messages)
        if number == len(pieces):
            row.round_one_facts = len(round_one)
            row.reached_last = len(round_one & model.seen)
    return row


# --- the report --------------------------------------------------------------------------


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "—"


def run() -> tuple[list[Measured], list[Chain], float]:
    started = time.perf_counter()
    rows: list[Measured] = []
    chains: list[Chain] = []
    for n, path in enumerate(sorted(TRANSCRIPTS.glob("*.json"))):
        facts = Facts(seed=n)
        messages = load(path, facts)
        repaired, _ = repair_tool_pairing(messages)
        assert len(repaired) == len(messages), f"{path.name} is not well paired"
        for window in WINDOWS:
            rows.append(measure(path.stem, messages, window, facts))
            for regrounding in (True, False):
                chains.append(chain(path.stem, messages, window, regrounding=regrounding))
    return rows, chains, time.perf_counter() - started


def render(rows: list[Measured], chains: list[Chain], seconds: float, command: str) -> str:
    lines = [
        HEADING,
        "",
        f"Command: `{command}` — {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, "
        f"Python {sys.version.split()[0]}, {seconds:.1f} s. The 18 transcripts of "
        f"`tests/data/transcripts` with facts planted in user text, assistant text, tool-call "
        f"arguments and tool outputs over {LONG_OUTPUT} characters (inside the seed's "
        f"{HEAD_CHARS} + {TAIL_CHARS}-character cut), compacted with a summarizer that repeats "
        f"every fact it is given within its output limit; policy defaults (threshold 70%, "
        f"protect 3), auxiliary window {AUX_WINDOW:,}. A transcript over the threshold is "
        "compacted automatically, one under it by `/compact` (forced).",
        "",
        "| window | compacted (auto + forced) | pruned only | failed, with a reason | middle facts "
        "reaching the summarizer | above the threshold | head and tail verbatim | middle user "
        "messages kept verbatim | newest middle user message kept | requests (most round "
        "trips) |",
        "|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    totals = Counter[str]()
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
        requests = sum(r.requests for r in done)
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
    missed = Counter[str]()
    for r in rows:
        missed.update(r.missed)
    lines += [
        "",
        "Facts that did not reach the summarizer, by where they were planted: "
        + (", ".join(f"{k} {n}" for k, n in missed.most_common()) or "none")
        + ". Pruned only: an automatic compaction that phase 1 alone brought under the "
        "threshold (old tool outputs out of the model's context, kept in storage for the next "
        "summary). Failures leave the history unchanged and say why (`head_too_long`: the "
        "protected first messages alone leave no room for a summary under the threshold, e.g. "
        "a whole demonstration trajectory in the first user message of 002).",
        "",
        f"Chain: round 1 compacts (`/compact`) the first {FIRST_SHARE:.0%} of a transcript (at "
        f"least {FIRST_MIN} messages), rounds 2–{ROUNDS} each add the next ninth of the rest to "
        "the context the round before left and compact again. Round-1 facts: those in the messages round 1 "
        "summarized; reaching round 10: found in round 10's requests. With re-grounding, a "
        "compaction whose deepest folded summary has chain depth ≥ 3 (`should_reground`) is "
        "built from the kept originals instead of from that summary. Chains: the transcripts "
        "whose round 1 summarized something (the shortest have nothing to summarize yet).",
        "",
        "| window | re-grounding | chains | compactions (re-grounded) | above the threshold | "
        "round-1 facts reaching round 10 |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    for window in WINDOWS:
        for regrounding in (True, False):
            mine = [c for c in chains if c.window == window and c.regrounding == regrounding]
            mine = [c for c in mine if c.round_one_facts]
            one = sum(c.round_one_facts for c in mine)
            last = sum(c.reached_last for c in mine)
            lines.append(
                f"| {window // 1000}k | {'yes' if regrounding else 'no'} | {len(mine)} | "
                f"{sum(c.compacted for c in mine)} ({sum(c.regrounded for c in mine)}) | "
                f"{sum(c.above_threshold for c in mine)} | {last:,} of {one:,} "
                f"({_pct(last, one)}) |"
            )
            if regrounding:
                totals.update(chain_one=one, chain_last=last)
    share = totals["reached"] / totals["facts"] if totals["facts"] else 0
    chain_share = totals["chain_last"] / totals["chain_one"] if totals["chain_one"] else 0
    met = (
        share >= 0.99
        and totals["above"] == 0
        and totals["verbatim"] == totals["compacted"]
        and totals["newest"] == totals["with_users"]
    )
    lines += [
        "",
        f"Targets: middle facts reaching the summarizer ≥ 99% — {100 * share:.1f}%; compactions "
        f"above the threshold 0 — {totals['above']}; head and tail verbatim 100% — "
        f"{_pct(totals['verbatim'], totals['compacted'])}; newest middle user message kept "
        f"verbatim 100% — {_pct(totals['newest'], totals['with_users'])}; round-1 facts reaching "
        f"round 10 (re-grounding) — {100 * chain_share:.1f}%. "
        + ("**Met.**" if met else "**NOT met.**"),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="record the tables in BENCHMARKS.md")
    args = parser.parse_args(argv)
    rows, chains, seconds = run()
    text = render(
        rows,
        chains,
        seconds,
        "python -m bench.compaction_fidelity" + (" --write" if args.write else ""),
    )
    print(text)
    if args.write:
        write_section(text, HEADING)


if __name__ == "__main__":
    main()
