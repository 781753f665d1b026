"""Chat search latency (issue 26 item 2): a user's search over their own chats, by title and
message text, over 100,000 messages — p99 under 100 ms on SQLite and on PostgreSQL.

    python -m bench.chat_search [--messages 100000] [--write]
    DATABASE_URL=postgres://… python -m bench.chat_search --write   # both databases

The corpus is ``bench.recall_search``'s (agent-shaped, a quarter of the user turns in
Chinese), in 40 chats of the searching user plus a fifth as many messages of another user
(never found: the search joins on the owner). Each query is what the sidebar's search box
and ``GET /api/search/`` do (``recall.chats.search_chats``: the passes, the title match, the
rows and snippets). Each database runs in a child process of its own.
"""

from __future__ import annotations

import os
import sys
import time

from bench import recall_search

HEADING = "## Chat search (the sidebar's search box, GET /api/search/)"
TARGET_P99_MS = 100.0
CHATS = 40
ROUNDS = 5  # of the query mix, after one untimed warm-up round
QUERIES = (
    ("two common words", "error timeout"),
    ("one very common word", "file"),
    ("identifier", "parse_config"),
    ("Chinese, 4 characters", "部署配置"),
    ("Chinese, 2 characters", "端口"),
    ("words never together (any-word pass)", "quokka retry zeppelin schedule"),
    ("no match (every pass)", "xylophone quagmire"),
)


def measure(url: str, messages: int) -> dict:
    """Load the corpus into a fresh database at ``url`` and time the query mix."""
    recall_search._configure(recall_search._fresh_database(url))
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    from django.contrib.auth import get_user_model
    from django.db import connection

    from agents.models import Agent, ChatSession, Message
    from agents.services import messages_bulk_append
    from recall.chats import search_chats

    users = get_user_model().objects
    searcher = users.create_user(username="bench", password="x" * 16)
    other = users.create_user(username="other", password="x" * 16)
    agent = Agent.objects.create(name="bench")
    per_chat = messages // CHATS
    started = time.perf_counter()
    owners = [(searcher, n) for n in range(CHATS)] + [(other, CHATS + n) for n in range(CHATS // 5)]
    for owner, n in owners:
        session = ChatSession.objects.create(owner=owner, agent=agent, title=f"chat {n} config")
        rows = recall_search.corpus(n, per_chat)
        for start in range(0, len(rows), 1000):
            messages_bulk_append(session=session, rows=rows[start : start + 1000])
    load_seconds = time.perf_counter() - started
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE agents_message")
    mine = Message.objects.filter(session__owner=searcher).count()

    timings: dict[str, list[float]] = {label: [] for label, _ in QUERIES}
    hits: dict[str, int] = {}
    for round_ in range(ROUNDS + 1):
        for label, query in QUERIES:
            began = time.perf_counter()
            found = search_chats(user=searcher, query=query)
            elapsed = (time.perf_counter() - began) * 1000
            if round_:
                timings[label].append(elapsed)
            hits[label] = len(found.messages) + len(found.titles)
    every = [t for values in timings.values() for t in values]
    return {
        "vendor": connection.vendor,
        "messages": Message.objects.count(),
        "mine": mine,
        "load_seconds": load_seconds,
        "rows": {label: recall_search._percentiles(v) for label, v in timings.items()},
        "hits": hits,
        "all": recall_search._percentiles(every),
        "queries": len(every),
    }


def render(results: list[dict], command: str, load: float) -> str:
    names = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}
    header = " | ".join(f"{names[r['vendor']]} p50 / p99 (ms) · hits" for r in results)
    first = results[0]
    lines = [
        HEADING,
        "",
        f"Command: `{command}` — {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores (load "
        f"average {load:.1f} when it started), Python {sys.version.split()[0]}; the database "
        "server on the same machine.",
        "",
        f"{first['messages']:,} stored messages: {first['mine']:,} in the searching user's "
        f"{CHATS} chats, the rest another user's (never found). Each query is "
        f"`recall.chats.search_chats` (the passes over the recall index scoped to the owner, "
        f"the title match, the rows and snippets), {ROUNDS} rounds after a warm-up round.",
        "",
        f"| query | {header} |",
        "|---|" + "---:|" * len(results),
    ]
    for label, _ in QUERIES:
        cells = " | ".join(
            f"{r['rows'][label]['p50']:.1f} / {r['rows'][label]['p99']:.1f} · {r['hits'][label]}"
            for r in results
        )
        lines.append(f"| {label} | {cells} |")
    cells = " | ".join(f"**{r['all']['p50']:.1f} / {r['all']['p99']:.1f}**" for r in results)
    lines.append(f"| all {first['queries']} queries | {cells} |")
    lines.append("")
    for r in results:
        verdict = "met" if r["all"]["p99"] < TARGET_P99_MS else "NOT met"
        lines.append(
            f"- {names[r['vendor']]}: p99 {r['all']['p99']:.1f} ms (max {r['all']['max']:.1f})"
            f" — target p99 under {TARGET_P99_MS:.0f} ms {verdict}; loading took "
            f"{r['load_seconds']:.0f} s."
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    recall_search.on_each_database("bench.chat_search", __doc__, measure, render, HEADING)


if __name__ == "__main__":
    main()
