"""A job worker killed mid-run (issue 24): 2 web processes + 2 workers, one worker SIGKILLed
while every client's turn runs; are all turns answered, none twice, and how soon do the
killed worker's chats work again?

    DATABASE_URL=postgres://… REDIS_URL=redis://… .venv/bin/python -m bench.worker_failover \
        [--clients 40] [--turns 3] [--write]

Each client chats in a session of its own over one of the two web processes (alternately),
sending ``--turns`` messages one after the other, each once the previous one's own answer
and its ``turn_done`` have come. The
scripted model answers after 2 s, naming the question it answers. One second after the
clients start, worker A gets SIGKILL. When every chat is quiet the stored histories are read
back: a question is *answered* when an answer naming it is stored, *lost* when none is,
*answered twice* when two are; an answer naming anything but one question of its chat counts
as *mixed* (two questions under one answer). *Works again*: from the kill to the first
``turn_done`` that each client gets after it (the worst client: a chat whose turn ran on the
killed worker waits for the sweep).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import tempfile
import time
import uuid
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from bench.report import write_section
from bench.ws_load import servers
from bench.ws_load.client import connect
from scripted_llm.ports import free_port

HEADING = "## Worker failover (a job worker killed mid-run)"
KILL_AFTER = 1.0  # seconds after the clients start
TURN_TIMEOUT = 90.0  # a turn whose worker died waits for the sweep (6–10 s) and runs again
QUIET_TIMEOUT = 120.0  # until every question is answered or the run gives up


async def _client(
    index: int, port: int, token: str, sid: str, turns: int, killed: asyncio.Event
) -> dict[str, Any]:
    ws = await connect(port, "/ws/chat/", token, asyncio.Semaphore(1))
    after_kill: float | None = None
    failures: list[str] = []
    try:
        for turn in range(turns):
            question = f"q{index}-{turn}"
            await ws.send(json.dumps({"type": "chat", "sessionId": sid, "content": question}))
            answered = False  # its own answer, then the end of that turn: the next may go
            try:
                async with asyncio.timeout(TURN_TIMEOUT):
                    while True:
                        event = json.loads(await ws.recv())
                        message = event.get("message") or {}
                        if message.get("content") == f"answer to: {question}":
                            answered = True
                        elif event.get("type") == "turn_done" and answered:
                            break
            except TimeoutError:
                failures.append(f"{question}: not answered in {TURN_TIMEOUT:.0f} s")
                break
            if killed.is_set() and after_kill is None:
                after_kill = time.monotonic()
    finally:
        await ws.close()
    return {"after_kill": after_kill, "failures": failures}


async def _clients(
    ports: list[int], pairs: list[tuple[str, str]], turns: int, kill: Any
) -> tuple[list[dict[str, Any]], float]:
    killed = asyncio.Event()
    tasks = [
        asyncio.create_task(_client(i, ports[i % len(ports)], token, sid, turns, killed))
        for i, (token, sid) in enumerate(pairs)
    ]
    await asyncio.sleep(KILL_AFTER)
    kill()
    killed_at = time.monotonic()
    killed.set()
    return list(await asyncio.gather(*tasks)), killed_at


def _histories(url: str, session_ids: list[str]) -> dict[str, list[tuple[str, str]]]:
    import psycopg

    ids = [str(uuid.UUID(sid)) for sid in session_ids]
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT session_id::text, role, content FROM agents_message "
            "WHERE session_id = ANY(%s::uuid[]) "
            "ORDER BY session_id, position, id",
            (ids,),
        ).fetchall()
    out: dict[str, list[tuple[str, str]]] = {sid: [] for sid in ids}
    for sid, role, content in rows:
        out[sid].append((role, content[:80]))
    return out


def _tally(histories: dict[str, list[tuple[str, str]]]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for history in histories.values():
        questions = [c for r, c in history if r == "user"]
        answers = Counter(c.removeprefix("answer to: ") for r, c in history if r == "assistant")
        counts["questions"] += len(questions)
        for question in questions:
            got = answers.get(question, 0)
            counts["answered" if got else "lost"] += 1
            counts["answered twice"] += got > 1
        counts["mixed"] += sum(n for a, n in answers.items() if a not in questions)
    return counts


def _quiet(url: str, session_ids: list[str], deadline: float) -> dict[str, list[tuple[str, str]]]:
    """The histories once every question has its answer (or at the deadline)."""
    while True:
        histories = _histories(url, session_ids)
        if _tally(histories)["lost"] == 0 or time.monotonic() > deadline:
            return histories
        time.sleep(0.5)


def run(clients: int, turns: int) -> dict[str, Any]:
    servers.check_environment()
    work = Path(tempfile.mkdtemp(prefix="netaclaw-failover-"))
    env = servers._base_env(work / "var")
    env["NETACLAW_RUNNER"] = "worker"
    servers._recreate_database()
    url = servers._database_url(servers.DB_NAME)
    python = [sys.executable, "-m"]
    try:
        with ExitStack() as stack:
            model_port = free_port()
            stack.enter_context(
                servers._process(
                    [*python, "scripted_llm", "--port", str(model_port), "--responder", "slow"],
                    env=env,
                    log=work / "model.log",
                    port=model_port,
                )
            )
            pairs = servers._create_fixtures(env, clients, f"http://127.0.0.1:{model_port}/v1")
            ports = [free_port(), free_port()]
            for n, port in enumerate(ports):
                stack.enter_context(
                    servers._process(
                        [
                            *python,
                            "daphne",
                            "-b",
                            "127.0.0.1",
                            "-p",
                            str(port),
                            "netaclaw.asgi:application",
                        ],
                        env=env,
                        log=work / f"web{n}.log",
                        port=port,
                    )
                )
            victim = stack.enter_context(servers.job_worker(env, work / "worker-a.log"))
            stack.enter_context(servers.job_worker(env, work / "worker-b.log"))
            results, killed_at = asyncio.run(
                _clients(ports, pairs, turns, lambda: os.kill(victim, signal.SIGKILL))
            )
            session_ids = [sid for _, sid in pairs]
            histories = _quiet(url, session_ids, time.monotonic() + QUIET_TIMEOUT)
    finally:
        servers._drop_database()
    again = [r["after_kill"] - killed_at for r in results if r["after_kill"] is not None]
    return {
        "clients": clients,
        "turns": turns,
        "tally": _tally(histories),
        "works_again_max": max(again) if again else float("nan"),
        "works_again_median": sorted(again)[len(again) // 2] if again else float("nan"),
        "client_failures": [f for r in results for f in r["failures"]],
        "lost_histories": [h for h in histories.values() if _tally({"": h})["lost"]][:3],
    }


def render(result: dict[str, Any], command: str) -> str:
    t = result["tally"]
    ok = t["lost"] == 0 and t["mixed"] == 0 and result["works_again_max"] <= 15
    return "\n".join(
        [
            HEADING,
            "",
            f"Command: `{command}` — {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, "
            "PostgreSQL + Redis on the same machine.",
            "",
            "Two Daphne web processes and two job workers (`manage.py run_worker`) on one "
            f"database and one Redis; {result['clients']} clients, each in a chat of its own "
            f"over one of the two web processes, send {result['turns']} messages one after the "
            "other (each once the one before has its answer); the scripted model answers after 2 s, naming the question. One second in, "
            "worker A gets SIGKILL (every client's first turn is running, half of them on A). "
            "Then the stored histories are read back.",
            "",
            "| questions | answered | lost | answered twice | two questions under one answer "
            "| works again after the kill (median / worst client) | 0 lost, none mixed, ≤ 15 s |",
            "|---:|---:|---:|---:|---:|---:|---|",
            f"| {t['questions']} | {t['answered']} | {t['lost']} | {t['answered twice']} "
            f"| {t['mixed']} | {result['works_again_median']:.1f} s / "
            f"{result['works_again_max']:.1f} s | {'yes' if ok else 'no'} |",
            "",
            "A turn that ran on the killed worker is recorded `interrupted` by the sweep of the "
            "surviving worker (its heartbeat stalled: `runs/sweep.py`) and answered again once "
            "(`chat/interruption.py`); a message sent meanwhile waits queued and is answered "
            "after it. *Answered twice*: the interrupted turn had already stored its answer "
            "when the worker died, and the re-run answered again (the answer is never lost; "
            "it may come twice).",
        ]
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.worker_failover", description=__doc__)
    parser.add_argument("--clients", type=int, default=40)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="record it in BENCHMARKS.md")
    args = parser.parse_args(argv)
    if not 2 <= args.clients <= 500 or not 1 <= args.turns <= 10:
        raise SystemExit("--clients 2..500, --turns 1..10")
    result = run(args.clients, args.turns)
    for failure in result["client_failures"][:5]:
        print("  client:", failure)
    for history in result["lost_histories"]:
        print("  a chat with a lost question:", history)
    command = " ".join(
        [".venv/bin/python -m bench.worker_failover", *(argv if argv is not None else sys.argv[1:])]
    )
    text = render(result, "DATABASE_URL=postgres://… REDIS_URL=redis://… " + command)
    print(text)
    if args.write:
        write_section(text, HEADING)


if __name__ == "__main__":
    main()
