"""The pure compaction core on seeded synthetic conversations of 1k, 10k and 100k messages.

Each conversation has a system prompt, user turns in English and Chinese, assistant
turns with and without tool calls, and tool results of mixed sizes (short answers,
file reads, long logs). ``compress`` runs all four phases, as a manual ``/compact`` does (``force``:
pruning alone never ends it early), with a stub summarizer that answers at once, so the figures are the core's own work: pruning, boundaries,
serialization and chunking for the auxiliary model, assembly and pairing repair.

Machines here are noisy, so the run also times a yardstick on the same messages in
the same process, sampled in turn with ``compress``: one pass of the seed's token
estimate over every message (the least any compaction must do). ``× estimate pass`` is
the ratio of the two medians, in wall time and in CPU time (``process_time``, all
threads): on a machine busy with other work, wall time also counts the waits for a CPU,
which the summary threads (up to ``summary_concurrency`` of them) meet more often than one
loop does. The growth columns compare each size with the previous one (10× the messages
should cost about 10× the time: linear). Peak memory comes from a separate traced run.

    .venv/bin/python -m bench.compaction_core [--sizes 1000,10000,100000] [--repeat 7] [--write]

Targets: 10k messages in under 60 ms, growth linear (issue: compaction engine);
``compress`` within 15× one estimate pass at every size (issue 13).
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.report import write_section
from condense import (
    COMPACTED,
    CompactionPolicy,
    Message,
    SummaryRequest,
    ToolCall,
    compress,
    estimate_messages,
)

HEADING = "## Compaction core"
TARGET_10K_MS = 60.0
TARGET_RATIO = 15.0
STUB_SUMMARY = "## Goal\nKeep refactoring src/app.\n" + "- a decision with its reason\n" * 20

_WORDS_EN = (
    "the parser reads config values from src/app/settings.py and fails on empty lines".split()
)
_WORDS_ZH = list("请帮我检查解析器为什么在空行上失败并修复配置读取的问题")
_TOOLS = ("read_file", "search_files", "list_files", "write_file")
# (weight, characters) of tool results: short answers, file reads, long logs
_RESULT_SIZES = ((5, 80), (3, 1_500), (2, 6_000), (1, 40_000))


def _text(rng: random.Random, words: int) -> str:
    if rng.random() < 0.3:
        return "".join(rng.choice(_WORDS_ZH) for _ in range(words * 2))
    return " ".join(rng.choice(_WORDS_EN) for _ in range(words))


def _result_size(rng: random.Random) -> int:
    sizes = [size for weight, size in _RESULT_SIZES for _ in range(weight)]
    return rng.choice(sizes)


def synthetic_conversation(size: int, seed: int = 7) -> list[Message]:
    """A reproducible conversation of exactly ``size`` messages with whole tool groups."""
    rng = random.Random(seed)
    messages = [Message("system", "You are a careful coding agent. " * 30, id=1)]
    next_id = 2

    def add(message: Message) -> None:
        nonlocal next_id
        messages.append(message)
        next_id += 1

    while len(messages) < size:
        add(Message("user", _text(rng, rng.randint(8, 80)), id=next_id))
        while rng.random() < 0.6 and len(messages) < size - 4:
            calls = tuple(
                ToolCall(f"call_{next_id}_{k}", rng.choice(_TOOLS), f'{{"path": "src/m{k}.py"}}')
                for k in range(rng.choice((1, 1, 1, 2, 3)))
            )
            add(Message("assistant", _text(rng, rng.randint(0, 20)), calls, id=next_id))
            for call in calls:
                body = "x" * _result_size(rng)
                add(Message("tool", body, tool_call_id=call.id, id=next_id))
        add(Message("assistant", _text(rng, rng.randint(20, 200)), id=next_id))
    return messages[:size]


def stub_summarize(request: SummaryRequest) -> str:
    return STUB_SUMMARY


@dataclass(frozen=True, slots=True)
class Row:
    size: int
    compress_ms: float
    estimate_ms: float
    compress_cpu_ms: float
    estimate_cpu_ms: float
    peak_mib: float
    requests: int
    removed: int
    tokens_before: int
    tokens_after: int


def _interleaved_medians_ms(
    actions: Sequence[Callable[[], object]], repeat: int
) -> list[tuple[float, float]]:
    """(wall, CPU) median of each action, sampled in turn (a, b, a, b…) so drift on a noisy
    machine hits them alike."""
    wall: list[list[float]] = [[] for _ in actions]
    cpu: list[list[float]] = [[] for _ in actions]
    for _ in range(repeat):
        for action, walls, cpus in zip(actions, wall, cpu, strict=True):
            gc.collect()
            start, start_cpu = time.perf_counter(), time.process_time()
            action()
            cpus.append(time.process_time() - start_cpu)
            walls.append(time.perf_counter() - start)
    return [
        (statistics.median(w) * 1000, statistics.median(c) * 1000)
        for w, c in zip(wall, cpu, strict=True)
    ]


def measure(size: int, repeat: int) -> Row:
    messages = synthetic_conversation(size)
    policy = CompactionPolicy(context_window=200_000)
    result = compress(messages, policy, stub_summarize, force=True)
    if result.status != COMPACTED:
        raise SystemExit(f"{size} messages did not compact: {result.status}")
    # interleave the two so drift on a noisy machine hits both alike
    (compress_ms, compress_cpu), (estimate_ms, estimate_cpu) = _interleaved_medians_ms(
        [
            lambda: compress(messages, policy, stub_summarize, force=True),
            lambda: estimate_messages(messages),
        ],
        repeat,
    )
    gc.collect()
    tracemalloc.start()
    compress(messages, policy, stub_summarize, force=True)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return Row(
        size=size,
        compress_ms=compress_ms,
        estimate_ms=estimate_ms,
        compress_cpu_ms=compress_cpu,
        estimate_cpu_ms=estimate_cpu,
        peak_mib=peak / 2**20,
        requests=len(result.requests),
        removed=result.removed_count,
        tokens_before=result.tokens_before,
        tokens_after=result.tokens_after,
    )


def render(rows: list[Row], command: str) -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [
        HEADING,
        "",
        f"Command: `{command}` — {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores "
        f"(load average {load:.1f} at the end), Python {sys.version.split()[0]}. Stub "
        "summarizer; the auxiliary window is the policy default (128k), so large middles are "
        "summarized in several requests (concurrently from three on, four at a time).",
        "",
        "| messages | compress median (ms) | estimate pass (ms) | × estimate pass | "
        "× estimate pass, CPU | growth vs previous size | summary requests | summarized | "
        "tokens before → after | peak memory (MiB) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    previous: Row | None = None
    for row in rows:
        growth = "—"
        if previous is not None:
            growth = (
                f"{row.compress_ms / previous.compress_ms:.1f}× time for "
                f"{row.size / previous.size:.0f}× messages"
            )
        lines.append(
            f"| {row.size:,} | {row.compress_ms:.1f} | {row.estimate_ms:.2f} | "
            f"{row.compress_ms / row.estimate_ms:.0f}× | "
            f"{row.compress_cpu_ms / row.estimate_cpu_ms:.0f}× | {growth} | {row.requests} | "
            f"{row.removed:,} | {row.tokens_before:,} → {row.tokens_after:,} | "
            f"{row.peak_mib:.1f} |"
        )
        previous = row
    ten_k = next((r for r in rows if r.size == 10_000), None)
    if ten_k is not None:
        verdict = "met" if ten_k.compress_ms < TARGET_10K_MS else "NOT met"
        lines += [
            "",
            f"Target: 10k messages under {TARGET_10K_MS:.0f} ms — {ten_k.compress_ms:.1f} ms, "
            f"{verdict}.",
        ]
    ratios = [r.compress_ms / r.estimate_ms for r in rows]
    cpu_ratios = [r.compress_cpu_ms / r.estimate_cpu_ms for r in rows]
    if rows:
        worst, worst_cpu = max(ratios), max(cpu_ratios)
        lines.append(
            f"Target: within {TARGET_RATIO:.0f}× one estimate pass at every size — at most "
            f"{worst:.0f}× (wall), {worst_cpu:.0f}× (CPU): "
            + ("met." if worst <= TARGET_RATIO else "NOT met.")
        )
    return "\n".join(lines) + "\n"


def run(sizes: list[int], repeat: int) -> list[Row]:
    return [measure(size, repeat) for size in sizes]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--write", action="store_true", help="record the table in BENCHMARKS.md")
    args = parser.parse_args(argv)
    rows = run([int(s) for s in args.sizes.split(",")], args.repeat)
    text = render(rows, "python -m bench.compaction_core" + (" --write" if args.write else ""))
    print(text)
    if args.write:
        write_section(text, HEADING)


if __name__ == "__main__":
    main()
