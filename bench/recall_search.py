"""search_history on 100,000 stored messages: p50 / p99 per query, SQLite and PostgreSQL.

    .venv/bin/python -m bench.recall_search [--messages 100000] [--database-url URL] [--write]

SQLite always (a throwaway file); PostgreSQL when ``DATABASE_URL`` or ``--database-url``
points at a server (a fresh database of its own on it, ``bench.databases``, dropped
after). Each database runs in a child process of its own (Django is configured once per
process).

The corpus (seeded, the same on both databases): 40 sessions of 2,500 messages each, all
but the last 20 of each compacted. Agent-shaped traffic: short user turns (a quarter in
Chinese), assistant turns with tool calls (paths, commands), tool outputs of 100 to 4,000
characters (code, logs, listings). Twelve facts are planted in tool outputs of each of the
searched sessions. A timed query is what the tool does (``recall.search.search_result``:
the passes, the row fetch, the snippets), in one of the searched sessions, through the
index of ``recall.index``; the mix covers planted facts, common and very common words,
identifiers and paths, Chinese words of two and four characters, words that never occur
together (the any-term pass) and words that occur nowhere (every pass runs).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench import databases
from bench.report import write_section

HEADING = "## Recall search (search_history)"
TARGET_P99_MS = 50.0
SESSIONS = 40
TAIL = 20  # newest messages of a session left uncompacted
SEARCHED = 8  # sessions queried
FACTS = 12  # planted per searched session
ROUNDS = 6  # of the whole query mix, after one untimed warm-up round

WORDS = (
    "the of and to in is that for it with as was on be by this are from or have an not "
    "file error test function value return class import module config server request "
    "response data user path line build run check update result output input string list "
    "type name method call object default option parse load save read write query index "
    "table column field model view cache token session message event handler thread lock "
    "timeout retry connection socket client stream buffer queue worker task job schedule "
    "deploy release version branch commit merge patch diff review issue bug fix feature "
    "support docs example case state status count size limit offset page filter sort key "
    "hash secret auth login logout permission role group admin owner system process memory"
).split()
RARE = (
    "axolotl bergamot cassowary dirigible escarpment fennec gossamer halyard isthmus "
    "jackdaw kumquat lamprey marmoset nautilus ocelot pangolin quokka rambutan sassafras "
    "tamarin umbra vicuna wolverine xylem yarrow zeppelin"
).split()
ZH = "的一是了我不人在他有这个上们来到时大地为子中你说生国年着就那和要她出也得里后自以会"
ZH_WORDS = (
    "配置 部署 服务 接口 数据 测试 日志 错误 文件 目录 用户 权限 缓存 队列 任务 "
    "线程 内存 网络 端口 密钥 版本 分支 提交 合并 回滚 监控 告警 识别 模型 训练"
).split()
PATH_PARTS = "src app core utils api models views tests config lib server client".split()


def _zipf_word(rng: random.Random) -> str:
    return WORDS[min(int(rng.paretovariate(1.1)) - 1, len(WORDS) - 1)]


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(_zipf_word(rng) for _ in range(n))


def _chinese(rng: random.Random, n: int) -> str:
    out = []
    for _ in range(n):
        out.append(rng.choice(ZH_WORDS) if rng.random() < 0.4 else rng.choice(ZH))
    return "".join(out) + "。"


def _path(rng: random.Random) -> str:
    parts = [rng.choice(PATH_PARTS) for _ in range(rng.randint(1, 3))]
    return "/".join(parts) + "/" + _zipf_word(rng) + rng.choice((".py", ".ts", ".toml", ".md"))


def _tool_output(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.4:  # code
        lines = [
            f"def {_zipf_word(rng)}_{_zipf_word(rng)}({_zipf_word(rng)}):",
            *(f"    {_sentence(rng, rng.randint(3, 9))}" for _ in range(rng.randint(3, 60))),
        ]
    elif kind < 0.7:  # a log
        lines = [
            f"2026-12-0{rng.randint(1, 4)} {rng.randint(10, 23)}:{rng.randint(10, 59)} "
            f"{rng.choice(('INFO', 'WARN', 'ERROR'))} {_sentence(rng, rng.randint(4, 12))}"
            for _ in range(rng.randint(2, 50))
        ]
    elif kind < 0.85:  # a listing
        lines = [_path(rng) for _ in range(rng.randint(3, 40))]
    else:  # a Chinese document
        lines = [_chinese(rng, rng.randint(8, 30)) for _ in range(rng.randint(2, 20))]
    return "\n".join(lines)[:4000]


def corpus(session: int, size: int, seed: int = 18) -> list[dict]:
    """One session's messages: user, assistant with a tool call, tool output, repeated."""
    rng = random.Random(f"{seed}:{session}")
    rows: list[dict] = []
    call = 0
    while len(rows) < size:
        phase = len(rows) % 3
        if phase == 0:
            text = _chinese(rng, rng.randint(6, 25)) if rng.random() < 0.25 else None
            rows.append({"role": "user", "content": text or _sentence(rng, rng.randint(5, 25))})
        elif phase == 1:
            call += 1
            arguments = json.dumps({"path": _path(rng), "pattern": _zipf_word(rng)})
            rows.append(
                {
                    "role": "assistant",
                    "content": _sentence(rng, rng.randint(3, 20)),
                    "tool_calls": [
                        {
                            "id": f"c{call}",
                            "name": rng.choice(("read_file", "grep")),
                            "arguments": arguments,
                        }
                    ],
                }
            )
        else:
            rows.append(
                {
                    "role": "tool",
                    "content": _tool_output(rng),
                    "tool_call_id": f"c{call}",
                    "metadata": {"toolName": "read_file"},
                }
            )
    return rows[:size]


def plant(rows: list[dict], session: int) -> list[tuple[str, int]]:
    """Facts in tool outputs of the compacted part: (query, row index)."""
    rng = random.Random(f"plant:{session}")
    tools = [i for i, r in enumerate(rows[: len(rows) - TAIL]) if r["role"] == "tool"]
    facts = []
    for n, index in enumerate(rng.sample(tools, FACTS)):
        a, b = RARE[(session * 7 + n) % len(RARE)], RARE[(session * 11 + 3 * n + 1) % len(RARE)]
        code = f"{session:02d}{n:02d}{rng.randint(1000, 9999)}"
        rows[index]["content"] += f"\nNOTE: the {a} {b} token is FACT-{code} (owner {a}).\n"
        facts.append((f"{a} {b} token", index))
    return facts


QUERIES = (
    ("planted fact (rare words)", None),
    ("two common words", "error timeout"),
    ("one very common word", "file"),
    ("identifier", "parse_config"),
    ("path substring", "core/utils"),
    ("Chinese, 4 characters", "部署配置"),
    ("Chinese, 2 characters", "端口"),
    ("words never together (any-term pass)", "quokka retry zeppelin schedule"),
    ("no match (every pass)", "xylophone quagmire"),
)


def _configure(url: str) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "netaclaw.settings")


def _fresh_database(url: str) -> str:
    if not url.startswith("postgres"):
        folder = Path(tempfile.mkdtemp(prefix="netaclaw-bench-recall-"))
        os.environ["NETACLAW_VAR_DIR"] = str(folder / "var")
        return f"sqlite:///{folder / 'bench.sqlite3'}"
    return databases.create_unique(url, "recall")  # this run's own, dropped at exit


def measure(url: str, messages: int) -> dict:
    """Load the corpus into a fresh database at ``url`` and time the query mix."""
    _configure(_fresh_database(url))
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.utils import timezone

    from agents.models import Agent, ChatSession, Message
    from agents.services import messages_bulk_append
    from recall import search

    user = get_user_model().objects.create_user(username="bench", password="x" * 16)
    agent = Agent.objects.create(name="bench")
    per_session = messages // SESSIONS
    searched: list[tuple[ChatSession, list[tuple[str, int]]]] = []
    load_started = time.perf_counter()
    for s in range(SESSIONS):
        session = ChatSession.objects.create(owner=user, agent=agent)
        rows = corpus(s, per_session)
        facts = plant(rows, s) if s < SEARCHED else []
        stored = []
        for start in range(0, len(rows), 1000):
            stored += messages_bulk_append(session=session, rows=rows[start : start + 1000])
        Message.objects.filter(session=session, position__lt=stored[-TAIL].position).update(
            compacted_at=timezone.now()
        )
        if facts:
            searched.append((session, [(q, stored[i].pk) for q, i in facts]))
    load_seconds = time.perf_counter() - load_started
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE agents_message")
    total = Message.objects.count()

    timings: dict[str, list[float]] = {label: [] for label, _ in QUERIES}
    cpu_times: list[float] = []
    found = planted = 0
    for round_ in range(ROUNDS + 1):
        for session, facts in searched:
            for label, query in QUERIES:
                fact_id = None
                if query is None:
                    query, fact_id = facts[round_ % len(facts)]
                started, cpu_started = time.perf_counter(), time.thread_time()
                result = search.search_result(session=session, query=query)
                elapsed = (time.perf_counter() - started) * 1000
                cpu = (time.thread_time() - cpu_started) * 1000
                if round_ == 0:
                    continue  # warm-up
                timings[label].append(elapsed)
                cpu_times.append(cpu)
                if fact_id is not None:
                    planted += 1
                    hits = json.loads(result)["hits"]
                    found += bool(hits) and hits[0]["id"] == fact_id
    every = [t for values in timings.values() for t in values]
    return {
        "vendor": connection.vendor,
        "messages": total,
        "load_seconds": load_seconds,
        "rows": {label: _percentiles(values) for label, values in timings.items()},
        "all": _percentiles(every),
        "cpu": _percentiles(cpu_times),
        "queries": len(every),
        "facts_first": found,
        "facts": planted,
    }


def _percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return {"p50": statistics.median(ordered), "p99": p99, "max": ordered[-1]}


def render(results: list[dict], command: str, load: float | None = None) -> str:
    names = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}
    header = " | ".join(f"{names[r['vendor']]} p50 / p99 (ms)" for r in results)
    lines = [
        HEADING,
        "",
        f"Command: `{command}` — {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores"
        + (f" (load average {load:.1f} when it started)" if load is not None else "")
        + f", Python {sys.version.split()[0]}; the database server on the same machine.",
        "",
        f"{results[0]['messages']:,} stored messages in {SESSIONS} sessions of "
        f"{results[0]['messages'] // SESSIONS:,}, all but the newest {TAIL} of each compacted; "
        f"agent-shaped (user turns, a quarter in Chinese; assistant turns with tool calls; "
        f"tool outputs of 100–4,000 characters). Each query is what the tool does "
        f"(`recall.search.search_result`: the passes, the row fetch, the snippets) in one of "
        f"{SEARCHED} sessions, {ROUNDS} rounds after a warm-up round.",
        "",
        f"| query | {header} |",
        "|---|" + "---:|" * len(results),
    ]
    for label, _ in QUERIES:
        cells = " | ".join(
            f"{r['rows'][label]['p50']:.1f} / {r['rows'][label]['p99']:.1f}" for r in results
        )
        lines.append(f"| {label} | {cells} |")
    cells = " | ".join(f"**{r['all']['p50']:.1f} / {r['all']['p99']:.1f}**" for r in results)
    lines.append(f"| all {results[0]['queries']} queries | {cells} |")
    lines.append("")
    for r in results:
        verdict = "met" if r["all"]["p99"] < TARGET_P99_MS else "NOT met"
        lines.append(
            f"- {names[r['vendor']]}: p99 {r['all']['p99']:.1f} ms (max {r['all']['max']:.1f}) "
            f"— target p99 under {TARGET_P99_MS:.0f} ms {verdict}; CPU time of the benchmark's "
            f"own thread per query p50 {r['cpu']['p50']:.1f} / p99 {r['cpu']['p99']:.1f} ms "
            f"({'SQLite runs in it: the search itself' if r['vendor'] == 'sqlite' else 'the client side only'}"
            f", without the waits a loaded machine adds); planted facts ranked first "
            f"{r['facts_first']}/{r['facts']}; loading the corpus (index kept at write time) "
            f"took {r['load_seconds']:.0f} s."
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    on_each_database("bench.recall_search", __doc__, measure, render, HEADING)


def on_each_database(
    module: str,
    doc: str | None,
    measure_one: Callable[[str, int], dict],
    render_all: Callable[[list[dict], str, float], str],
    heading: str,
) -> None:
    """A search benchmark's command: ``measure_one`` on SQLite and (with ``DATABASE_URL``)
    PostgreSQL, each in a child process of its own, rendered together; ``--write`` records
    the section."""
    parser = argparse.ArgumentParser(description=(doc or module).splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", ""))
    parser.add_argument("--write", action="store_true", help="record the table in BENCHMARKS.md")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(measure_one(args.child, args.messages)))
        return
    urls = ["sqlite://"]
    if args.database_url.startswith("postgres"):
        urls.append(args.database_url)
    else:
        print("PostgreSQL skipped: set DATABASE_URL=postgres://… or --database-url")
    load = os.getloadavg()[0]
    results = []
    for url in urls:
        print(f"== {url.split('@')[-1]}", flush=True)
        child = [sys.executable, "-m", module, "--child", url, "--messages", str(args.messages)]
        out = subprocess.run(child, check=True, capture_output=True, text=True)
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    command = f"python -m {module}" + (" --write" if args.write else "")
    text = render_all(results, command, load)
    print(text)
    if args.write:
        write_section(text, heading)


if __name__ == "__main__":
    main()
