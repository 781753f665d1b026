"""The turn that crosses the compaction threshold, against a normal turn (issue 14 item 6).

A chat is filled to just under the soft threshold (10 points below the agent's), then a user
sends a message every ``--think`` seconds (reading the answer, typing the next) until a
compaction has happened and a few turns more. The auxiliary model takes ``--aux-seconds``
to write a summary; the main model answers after ``--model-seconds`` (a fast model's time
to an answer). Each turn runs as the socket runs it (``accept_chat``, then the gateway),
against the scripted model server on loopback. Two modes in the same run, side by side:
background compaction on (the summary is prepared from the soft threshold while the user
types) and off (the compaction runs inside the turn that crosses the threshold).

    .venv/bin/python -m bench.background_compaction [--aux-seconds 5] [--think 6] [--write]
    DATABASE_URL=postgres://… REDIS_URL=redis://… .venv/bin/python -m \
        bench.background_compaction --worker [--aux-seconds 30]

``--worker``: the production shape — the summary is prepared by a job worker process
(``manage.py run_worker``), and the crossing turn runs in this process, which applies what
the worker stored (the head start is in the database, seen by every process).

Reported per mode: the median normal turn, the crossing turn, their ratio (target with
background compaction: ≤ 1.2×) and the crossing turn's extra milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.chat_turn import _configure_database, _one_turn, _prepare_database
from bench.report import write_section
from bench.ws_load.servers import job_worker
from scripted_llm import ScriptedLLMServer
from scripted_llm.server import Reply

WINDOW = 8_000  # the main model's context window, tokens
THRESHOLD_PERCENT = 80
USER_TEXT = "Please continue the migration plan and keep every detail: " + "step " * 150
ANSWER_TEXT = "Done: the next part of the plan is written down. " * 6
SUMMARY_TEXT = (
    "## Goal\nMigrate the service.\n## Progress\n"
    + "".join(f"- step {i} done\n" for i in range(40))
    + "## Next steps\n- continue\n"
)
AFTER_COMPACTION_TURNS = 3


@dataclass(frozen=True, slots=True)
class ModeResult:
    mode: str
    normal_ms: float  # median of the turns that did not compact
    crossing_ms: float  # the turn during which the compaction happened
    turns: int

    @property
    def ratio(self) -> float:
        return self.crossing_ms / self.normal_ms


def _responder(aux_seconds: float, model_seconds: float) -> Callable[[dict[str, Any], str], Reply]:
    def respond(body: dict[str, Any], wire: str) -> Reply:
        if body.get("model") == "bench-aux":
            return Reply(text=SUMMARY_TEXT, delay=aux_seconds)
        return Reply(text=ANSWER_TEXT, delay=model_seconds)

    return respond


def _make_session(base_url: str, mode: str) -> str:
    from django.contrib.auth import get_user_model

    from agents.models import Agent, ChatSession, ModelChannel
    from agents.services import messages_bulk_append
    from condense import Message, estimate_tokens

    user = get_user_model().objects.create_user(username=f"bg-{mode}", password="x" * 16)
    main = ModelChannel.objects.create(
        name=f"main {mode}",
        provider="openai_compatible",
        base_url=base_url,
        api_key="bench",
        model="bench-main",
        context_window=WINDOW,
    )
    aux = ModelChannel.objects.create(
        name=f"aux {mode}",
        provider="openai_compatible",
        base_url=base_url,
        api_key="bench",
        model="bench-aux",
        is_auxiliary=True,
    )
    agent = Agent.objects.create(
        name=f"bench {mode}",
        system_prompt="You help with migrations.",
        model_channel=main,
        auxiliary_model_channel=aux,
        compaction_threshold_percent=THRESHOLD_PERCENT,
    )
    session = ChatSession.objects.create(owner=user, agent=agent)
    soft = WINDOW * (THRESHOLD_PERCENT - 10) // 100
    per_pair = estimate_tokens(Message(role="user", content=USER_TEXT)) + estimate_tokens(
        Message(role="assistant", content=ANSWER_TEXT)
    )
    rows: list[dict[str, str]] = []
    while (len(rows) // 2 + 2) * per_pair < soft:  # one turn short of the soft threshold
        rows += [
            {"role": "user", "content": f"{len(rows)} {USER_TEXT}"},
            {"role": "assistant", "content": ANSWER_TEXT},
        ]
    messages_bulk_append(session=session, rows=rows)
    return str(session.pk)


def _compactions(session_id: str) -> int:
    from agents.models import ChatSession

    return ChatSession.objects.get(pk=session_id).compaction_count


def run_mode(mode: str, base_url: str, think: float, max_turns: int = 12) -> ModeResult:
    from django.conf import settings

    settings.NETACLAW["BACKGROUND_COMPACTION"] = mode == "background"
    session_id = _make_session(base_url, mode)
    normal: list[float] = []
    crossing: float | None = None
    after = 0
    for _ in range(max_turns):
        before = _compactions(session_id)
        start = time.perf_counter()
        asyncio.run(_one_turn(session_id, USER_TEXT))
        elapsed = (time.perf_counter() - start) * 1000
        if _compactions(session_id) > before and crossing is None:
            crossing = elapsed
        else:
            normal.append(elapsed)
            after += crossing is not None
        if after >= AFTER_COMPACTION_TURNS:
            break
        time.sleep(think)  # the user reads the answer and types the next message
    if crossing is None:
        raise SystemExit(f"{mode}: no compaction within {max_turns} turns")
    return ModeResult(mode, statistics.median(normal), crossing, len(normal) + 1)


def render(results: list[ModeResult], command: str, args: argparse.Namespace) -> str:
    where = (
        " on a worker (prepared in another process)"
        if args.worker
        else " (the turn that crosses the threshold)"
    )
    lines = [
        "## Background compaction" + where,
        "",
        f"Command: `{command}` — {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, "
        f"database {os.environ['DATABASE_URL'].split(':', 1)[0]}. Window {WINDOW} tokens, "
        f"threshold {THRESHOLD_PERCENT}% (soft threshold 10 points below); auxiliary model "
        f"{args.aux_seconds:g} s per summary, main model {args.model_seconds:g} s per answer, "
        f"{args.think:g} s between a turn's end and the next message.",
        "",
        "| mode | turns | normal turn median (ms) | crossing turn (ms) | extra (ms) | ratio |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r.mode} | {r.turns} | {r.normal_ms:.0f} | {r.crossing_ms:.0f} | "
            f"{r.crossing_ms - r.normal_ms:.0f} | {r.ratio:.2f}× |"
        )
    background = next(r for r in results if r.mode == "background")
    verdict = "met" if background.ratio <= 1.2 else "NOT met"
    lines += [
        "",
        f"Target (background compaction, crossing turn ≤ 1.2× a normal turn): **{verdict}** "
        f"({background.ratio:.2f}×).",
        "",
    ]
    return "\n".join(lines)


@contextmanager
def _worker() -> Iterator[None]:
    """A job worker on this run's database: it prepares the summaries."""
    log = Path(tempfile.mkdtemp(prefix="netaclaw-bg-")) / "worker.log"
    with job_worker(dict(os.environ), log):
        yield


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--aux-seconds", type=float, default=5.0)
    parser.add_argument("--model-seconds", type=float, default=1.0)
    parser.add_argument("--think", type=float, default=6.0)
    parser.add_argument(
        "--worker", action="store_true", help="prepare on a job worker process (PostgreSQL + Redis)"
    )
    parser.add_argument("--write", action="store_true", help="record the table in BENCHMARKS.md")
    args = parser.parse_args()
    if args.worker:
        if not os.environ.get("DATABASE_URL", "").startswith("postgres") or not os.environ.get(
            "REDIS_URL"
        ):
            raise SystemExit("--worker needs DATABASE_URL=postgres://… and REDIS_URL=redis://…")
        os.environ["NETACLAW_RUNNER"] = "worker"
    _configure_database(keep_redis=args.worker)
    _prepare_database()
    with ExitStack() as stack:
        server = stack.enter_context(
            ScriptedLLMServer(responder=_responder(args.aux_seconds, args.model_seconds))
        )
        if args.worker:
            stack.enter_context(_worker())
        results = [
            run_mode(mode, server.openai_base_url, args.think)
            for mode in ("background", "in the turn")
        ]
    flags = [f"--aux-seconds {args.aux_seconds:g}"] if args.aux_seconds != 5.0 else []
    flags += ["--worker"] * args.worker + ["--write"] * args.write
    command = " ".join(["python -m bench.background_compaction", *flags])
    if args.worker:
        command = "DATABASE_URL=postgres://… REDIS_URL=redis://… " + command
    text = render(results, command, args)
    print(text)
    if args.write:
        heading = "## Background compaction" + (" on a worker" if args.worker else "")
        write_section(text, heading)


if __name__ == "__main__":
    main()
