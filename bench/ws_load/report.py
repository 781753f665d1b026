"""The statistics and the report: nearest-rank percentiles, the rounds pooled, the verdict
against the target, and the "WebSocket load" section of BENCHMARKS.md."""

from __future__ import annotations

import math
import os
import statistics
import time

from bench.report import write_section
from bench.ws_load.client import IDLE_SECONDS, TURN_TIMEOUT, LevelResult
from bench.ws_load.servers import SERVERS

HEADING = "## WebSocket load"
TARGET_CLIENTS = 500  # the requirement: 500 clients, no errors, p99 ≤ 3× the echo yardstick
TITLES = {"direct": "bare echo (no layer)", "echo": "echo yardstick", "netaclaw": "NetaClaw"}


def percentile(samples: list[float], q: float) -> float:
    """Nearest-rank percentile (the smallest sample with ≥ q % at or below it), in ms."""
    if not samples:
        return float("nan")
    ordered = sorted(samples)
    rank = max(1, min(len(ordered), math.ceil(q / 100 * len(ordered))))
    return ordered[rank - 1] * 1000


def outcome(result: LevelResult) -> str:
    return (
        f"{len(result.done)} turns ok, {result.errors} errors, turn_done p50 "
        f"{percentile(result.done, 50):.0f} / p99 {percentile(result.done, 99):.0f} ms"
    )


def pooled(results: list[LevelResult]) -> list[LevelResult]:
    """One result per level and server: the samples and errors of every round together."""
    merged: dict[tuple[int, str], LevelResult] = {}
    for r in results:
        key = (r.clients, r.server)
        if key not in merged:
            merged[key] = LevelResult(server=r.server, clients=r.clients, turns=0)
        m = merged[key]
        m.turns += r.turns
        m.first_delta += r.first_delta
        m.done += r.done
        m.stages += r.stages
        m.errors += r.errors
        for kind, n in r.error_kinds.items():
            m.error_kinds[kind] = m.error_kinds.get(kind, 0) + n
        m.error_samples += r.error_samples[: 5 - len(m.error_samples)]
        m.connect_seconds += r.connect_seconds
        m.wall_seconds += r.wall_seconds
        m.server_cpu_seconds += r.server_cpu_seconds
        m.server_sys_seconds += r.server_sys_seconds
        m.model_cpu_seconds += r.model_cpu_seconds
    return list(merged.values())


def _ms(samples: list[float], q: float) -> str:
    value = percentile(samples, q)
    return "–" if math.isnan(value) else f"{value:.0f}"


def _times(ratio: float) -> str:
    return "–" if math.isnan(ratio) else f"{ratio:.1f}×"


def _ratio(a: list[float], b: list[float]) -> float:
    top, bottom = percentile(a, 99), percentile(b, 99)
    return top / bottom if bottom and not math.isnan(top) and not math.isnan(bottom) else math.nan


def round_ratios(rounds: list[LevelResult], clients: int) -> list[float]:
    """p99 ratio NetaClaw / echo yardstick of each round at one level, in round order."""
    by_round: dict[int, dict[str, LevelResult]] = {}
    for r in rounds:
        if r.clients == clients:
            by_round.setdefault(r.round, {})[r.server] = r
    return [
        _ratio(pair["netaclaw"].done, pair["echo"].done)
        for _, pair in sorted(by_round.items())
        if {"netaclaw", "echo"} <= pair.keys()
    ]


def verdict(by_level: dict[int, dict[str, LevelResult]], clients: int) -> tuple[float, bool]:
    """p99 turn_done ratio NetaClaw / echo yardstick, and whether the target is met."""
    pair = by_level[clients]
    app, echo = pair["netaclaw"], pair["echo"]
    ratio = _ratio(app.done, echo.done)
    expected = app.clients * app.turns
    ok = ratio <= 3 and app.errors == 0 and echo.errors == 0 and len(app.done) == expected
    return ratio, ok


def render(
    results: list[LevelResult],
    *,
    command: str,
    turns: int,
    load: tuple[float, ...],
    repeat: int = 1,
    runner: str = "worker",
    rounds: list[LevelResult] | None = None,
    warm: list[LevelResult] | None = None,
) -> str:
    by_level: dict[int, dict[str, LevelResult]] = {}
    for r in results:
        by_level.setdefault(r.clients, {})[r.server] = r
    lines = [
        HEADING,
        "",
        f"Command: `{command}` — {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores "
        f"(load average {load[0]:.1f} when it started), PostgreSQL + Redis on the same machine.",
        "",
        (
            "One Daphne serves NetaClaw's sockets and one job worker (`manage.py run_worker`) "
            "runs its turns — the production shape; the server CPU below is both processes' — "
            if runner == "worker"
            else "One Daphne serves NetaClaw and runs its turns itself (`make run`'s runner) "
        )
        + "(`DJANGO_DEBUG=0`, channels-redis) against the scripted "
        "model (`python -m scripted_llm --responder echo`: every answer streamed over the "
        "OpenAI SSE wire); a second Daphne serves `bench/echo_asgi.py`, the yardstick: the "
        "same Channels consumer machinery and channel layer, broadcasting the same six events "
        "per turn through Redis (one layer message each, where NetaClaw sends the events that "
        "are ready together as one: three per turn), with no authentication, database or "
        "model. All clients are "
        "`websockets` sockets in one asyncio process on the same machine; at each level every "
        f"client connects, then all at once send {turns} chat frames, each after the previous "
        "`turn_done`. Latency: from sending the chat frame to its first `delta` and to its "
        "`turn_done`, in ms. Errors: every turn that did not bring a delta, the stored answer "
        f"and `turn_done` within {TURN_TIMEOUT:.0f} s (failed connects, error events, closed "
        "sockets, timeouts, and the turns a failed client could not run), and every socket the "
        f"server closed during {IDLE_SECONDS:.0f} s of idling after the turns. The bare echo "
        "answers on the socket with no channel layer: it shows what the layer itself costs. "
        "Server CPU: user + system time of the server process over the turns of a level, "
        "per completed turn."
        + (
            f" {repeat} rounds over all levels (every other round NetaClaw first), each "
            "with fresh sessions; the samples of all rounds are pooled."
            if repeat > 1
            else ""
        ),
        "",
        "| clients | NetaClaw turn_done p50 / p99 | echo turn_done p50 / p99 | p99 ratio "
        "| NetaClaw errors | echo errors | ≤ 3× and no errors |",
        "|---:|---:|---:|---:|---:|---:|---|",
    ]
    for clients in sorted(by_level):
        pair = by_level[clients]
        if "netaclaw" not in pair or "echo" not in pair:
            continue
        app, echo = pair["netaclaw"], pair["echo"]
        ratio, ok = verdict(by_level, clients)
        lines.append(
            f"| {clients} | {_ms(app.done, 50)} / {_ms(app.done, 99)} "
            f"| {_ms(echo.done, 50)} / {_ms(echo.done, 99)} | {_times(ratio)} "
            f"| {app.errors} | {echo.errors} | {'yes' if ok else '**no**'} |"
        )
    target = f"Target ({TARGET_CLIENTS} clients, no errors, p99 ≤ 3× the echo yardstick): "
    if {"netaclaw", "echo"} <= by_level.get(TARGET_CLIENTS, {}).keys():
        ratio, ok = verdict(by_level, TARGET_CLIENTS)
        target += f"**{'met' if ok else 'missed'}** ({_times(ratio)})."
    else:
        target += "not measured in this run."
    lines += ["", target]
    per_round = round_ratios(rounds or [], TARGET_CLIENTS)
    if len(per_round) > 1:
        lines += [
            "",
            f"p99 ratio of each round at {TARGET_CLIENTS} clients: "
            + ", ".join(_times(r) for r in per_round)
            + f" (median {_times(statistics.median(per_round))}); the machine's speed drifts "
            "within a run, so one round's ratio moves with it.",
        ]
    cold = {r.server: r for r in warm or [] if r.done}
    if {"netaclaw", "echo"} <= cold.keys():
        app, echo = cold["netaclaw"], cold["echo"]
        lines += [
            "",
            f"Before the rounds, each server answered one turn per client at {app.clients} "
            "clients on a just-started process (not in the tables: pools, caches and heap "
            f"grow in that first burst): turn_done p99 NetaClaw {_ms(app.done, 99)} ms, echo "
            f"yardstick {_ms(echo.done, 99)} ms ({_times(_ratio(app.done, echo.done))}); "
            f"errors {app.errors} / {echo.errors}.",
        ]
    cpu = {
        server: [
            r.server_cpu_seconds / len(r.done) * 1000
            for r in results
            if r.server == server and r.done
        ]
        for server in ("netaclaw", "echo")
    }
    app_ms = statistics.mean(cpu["netaclaw"]) if cpu["netaclaw"] else 0.0
    echo_ms = statistics.mean(cpu["echo"]) if cpu["echo"] else 0.0
    if app_ms > 0 and echo_ms > 0:
        lines += [
            "",
            f"Server CPU per turn, all levels: NetaClaw {app_ms:.0f} ms, echo yardstick "
            f"{echo_ms:.0f} ms ({app_ms / echo_ms:.1f}×). With every client sending at once "
            "each server is busy on one core for the whole level, so p99 grows with the work "
            "per turn: the p99 ratio is the CPU ratio times the ratio of the two tails (p99 / p50).",
        ]
    lines += [
        "",
        "| clients | server | turns ok | errors | first delta p50 | first delta p99 "
        "| turn_done p50 | turn_done p99 | turns/s | server CPU ms/turn |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for clients in sorted(by_level):
        for server in SERVERS:
            if server not in by_level[clients]:
                continue
            r = by_level[clients][server]
            rate = len(r.done) / r.wall_seconds if r.wall_seconds else 0.0
            per_turn = r.server_cpu_seconds * 1000 / len(r.done) if r.done else math.nan
            lines.append(
                f"| {clients} | {TITLES[server]} | {len(r.done)} | {r.errors} "
                f"| {_ms(r.first_delta, 50)} | {_ms(r.first_delta, 99)} "
                f"| {_ms(r.done, 50)} | {_ms(r.done, 99)} | {rate:.0f} | {per_turn:.1f} |"
            )
    top = max(by_level)
    lines += ["", *_stage_table(by_level[top], top)]
    kinds: dict[str, int] = {}
    for r in results:
        for kind, n in r.error_kinds.items():
            kinds[f"{r.server}: {kind}"] = kinds.get(f"{r.server}: {kind}", 0) + n
    if kinds:
        lines += ["", "Errors by kind: " + ", ".join(f"{k} {n}" for k, n in kinds.items())]
        samples = [s for r in results for s in r.error_samples]
        lines += ["", "Error samples: " + "; ".join(f"`{s}`" for s in samples[:5])]
    return "\n".join(lines) + "\n"


STAGES = (
    ("user", "user message back"),
    ("delta", "first delta"),
    ("assistant", "answer stored"),
    ("turn_done", "turn_done"),
)


def _stage_table(pair: dict[str, LevelResult], clients: int) -> list[str]:
    """p50 / p99 of each stage of a turn, by the turn's index in its session, at one level.

    The first turn of every session starts at the same instant; the later ones start as
    the earlier ones end. Split this way, the table shows which turns make the tail and,
    by stage, where a turn waited: storing the user's message, reaching the model, or
    storing the answer."""
    lines = [
        f"By turn and stage at {clients} clients (ms from the send, p50 / p99; "
        "turns that completed):",
        "",
        "| server | turn | " + " | ".join(title for _, title in STAGES) + " |",
        "|---|---:|" + "---:|" * len(STAGES),
    ]
    for server in ("echo", "netaclaw"):
        r = pair.get(server)
        if r is None:
            continue
        for turn in sorted({t for t, _ in r.stages}):
            reached = [stages for t, stages in r.stages if t == turn]
            cells = []
            for key, _ in STAGES:
                samples = [stages[key] for stages in reached if key in stages]
                cells.append(f"{_ms(samples, 50)} / {_ms(samples, 99)}")
            lines.append(f"| {TITLES[server]} | {turn + 1} | " + " | ".join(cells) + " |")
    return lines


def write(text: str) -> None:
    """Record ``text`` as this benchmark's section of BENCHMARKS.md, the others untouched."""
    write_section(text, HEADING)
