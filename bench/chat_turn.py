"""SQL queries and server overhead per chat turn, by history length (issue: gateway §9).

Runs a real chat turn through the gateway (prepare, meter, auto-compaction check,
context build, the ReAct runtime through the OpenAI SDK, persistence, events)
against the scripted model server on loopback. "Model time excluded": the same
run wraps the provider's stream and clocks the time spent waiting on the model
(request serialization by the SDK and the scripted server's work); the overhead
is the rest of the turn. The query count must not grow with the
history.

    .venv/bin/python -m bench.chat_turn [--sizes 10,1000,10000] [--turns 5] [--write]

Uses a throwaway SQLite file unless DATABASE_URL is set (then a fresh database of this
run's own on that server, ``bench.databases``, dropped at exit).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench import databases
from bench.report import write_section
from scripted_llm import ScriptedLLMServer


def _configure_database(*, keep_redis: bool = False) -> None:
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith("postgres"):  # a database of this run, dropped at exit
        os.environ["DATABASE_URL"] = databases.create_unique(url, "chat_turn")
    else:
        folder = Path(tempfile.mkdtemp(prefix="netaclaw-bench-"))
        os.environ["DATABASE_URL"] = f"sqlite:///{folder / 'bench.sqlite3'}"
        os.environ["NETACLAW_VAR_DIR"] = str(folder / "var")
    if not keep_redis:
        os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "netaclaw.settings")


class QueryCounter:
    """Counts SQL statements on every connection of every thread."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    def __call__(self, execute, sql, params, many, context):  # type: ignore[no-untyped-def]
        with self._lock:
            self.count += 1
        return execute(sql, params, many, context)

    def install(self) -> None:
        from django.db import connections
        from django.db.backends.signals import connection_created

        def on_created(sender, connection, **kwargs):  # type: ignore[no-untyped-def]
            if self not in connection.execute_wrappers:
                connection.execute_wrappers.append(self)

        connection_created.connect(on_created, weak=False)
        for conn in connections.all():
            if self not in conn.execute_wrappers:
                conn.execute_wrappers.append(self)


def _prepare_database() -> None:
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def _make_session(size: int, base_url: str):  # type: ignore[no-untyped-def]
    from django.contrib.auth import get_user_model

    from agents.models import Agent, ChatSession, ModelChannel
    from agents.services import messages_bulk_append

    user = get_user_model().objects.create_user(username=f"bench{size}", password="x" * 16)
    channel = ModelChannel.objects.create(
        name=f"bench {size}",
        provider="openai_compatible",
        base_url=base_url,
        api_key="bench",
        model="bench-model",
        context_window=10_000_000,  # never compacts: this measures the plain turn
    )
    agent = Agent.objects.create(
        name=f"bench {size}", system_prompt="You help.", model_channel=channel
    )
    session = ChatSession.objects.create(owner=user, agent=agent)
    rows = []
    for i in range(size):
        role = "user" if i % 2 == 0 else "assistant"
        rows.append({"role": role, "content": f"message {i} " + "lorem ipsum " * 8})
    messages_bulk_append(session=session, rows=rows)
    return session


class ModelClock:
    """Wraps every provider's stream so the time spent waiting on the model is known."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def install(self) -> None:
        from chat import turn

        real = turn.get_provider
        clock = self

        class Timed:
            def __init__(self, inner):  # type: ignore[no-untyped-def]
                self.inner = inner
                self.config = inner.config

            async def stream(self, request):  # type: ignore[no-untyped-def]
                start = time.perf_counter()
                try:
                    async for event in self.inner.stream(request):
                        clock.seconds += time.perf_counter() - start
                        yield event
                        start = time.perf_counter()
                finally:
                    clock.seconds += time.perf_counter() - start

        turn.get_provider = lambda config: Timed(real(config))  # what a turn calls


async def _one_turn(session_id: str, content: str = "next step please", owner: Any = None) -> None:
    """One chat frame's work as the socket does it: accept (access check, store, lease, the
    turn's reads), then the in-process runner's job runs the turn. ``owner``: the session's, when the caller
    looked it up already (then no query here counts against the turn)."""
    from channels.db import database_sync_to_async

    from agents.events import MessageStored
    from agents.leases import TURN, lease_seconds, new_holder
    from agents.models import ChatSession
    from chat.turn import accept_chat
    from runs import jobs

    if owner is None:
        owner = await database_sync_to_async(
            lambda: ChatSession.objects.select_related("owner").get(pk=session_id).owner
        )()
    accepted = await accept_chat(owner, session_id, content, new_holder(TURN), lease_seconds())
    assert accepted is not None and accepted.holder, "the session's lease was busy"
    opening = tuple(MessageStored(session_id, m) for m in accepted.messages)
    await asyncio.wait_for(
        jobs.run_turn(session_id, accepted.holder, prepared=accepted.prepared, opening=opening),
        timeout=120,
    )


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def run(sizes: list[int], turns: int) -> list[dict[str, float]]:
    _configure_database()
    _prepare_database()
    counter = QueryCounter()
    counter.install()
    clock = ModelClock()
    clock.install()
    rows: list[dict[str, float]] = []
    with ScriptedLLMServer() as server:
        for size in sizes:
            session = _make_session(size, server.openai_base_url)
            sid, owner = str(session.pk), session.owner
            asyncio.run(_one_turn(sid, owner=owner))  # warm-up: imports, connections, SDK
            turn_times, model_times, overheads, queries = [], [], [], []
            for _ in range(turns):
                before, model_before = counter.count, clock.seconds
                start = time.perf_counter()
                asyncio.run(_one_turn(sid, owner=owner))
                elapsed = time.perf_counter() - start
                in_model = clock.seconds - model_before
                turn_times.append(elapsed)
                model_times.append(in_model)
                overheads.append(elapsed - in_model)
                queries.append(counter.count - before)
            rows.append(
                {
                    "history": size,
                    "queries": statistics.median(queries),
                    "turn_ms": _median_ms(turn_times),
                    "model_ms": _median_ms(model_times),
                    "overhead_ms": _median_ms(overheads),
                }
            )
    return rows


def render(rows: list[dict[str, float]], command: str) -> str:
    lines = [
        "## Chat turn (queries and overhead per turn)",
        "",
        f"Command: `{command}` — {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, "
        f"database {os.environ['DATABASE_URL'].split(':', 1)[0]}.",
        "",
        "| history messages | SQL queries per turn | turn median (ms) | of it waiting on the model (ms) | server overhead (ms) |",
        "|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {int(r['history'])} | {r['queries']:.0f} | {r['turn_ms']:.1f} | "
            f"{r['model_ms']:.1f} | {r['overhead_ms']:.1f} |"
        )
    first, last = rows[0], rows[-1]
    lines += [
        "",
        f"Query count ratio {int(last['history'])} vs {int(first['history'])} messages: "
        f"{last['queries'] / first['queries']:.2f}× (must stay 1.00×); overhead ratio "
        f"{last['overhead_ms'] / max(first['overhead_ms'], 0.001):.1f}×.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,1000,10000")
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--write", action="store_true", help="record the table in BENCHMARKS.md")
    args = parser.parse_args()
    rows = run([int(s) for s in args.sizes.split(",")], args.turns)
    text = render(rows, "python -m bench.chat_turn" + (" --write" if args.write else ""))
    print(text)
    if args.write:
        write_section(text, "## Chat turn")


if __name__ == "__main__":
    main()
