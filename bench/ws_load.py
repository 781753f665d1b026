"""WebSocket load: N concurrent chat sockets against NetaClaw, next to an echo yardstick.

    DATABASE_URL=postgres://… REDIS_URL=redis://… .venv/bin/python -m bench.ws_load \
        [--levels 100,250,500] [--turns 3] [--repeat 1] [--write] [--py-spy FILE.svg|.txt|.json]

Needs ``DATABASE_URL`` (PostgreSQL) and ``REDIS_URL``: the production shape. The run

1. starts the scripted model (``python -m tests.support.llm_server --responder echo``,
   streaming over the OpenAI SSE wire) in its own process;
2. creates a throwaway database ``netaclaw_bench_ws_load`` on that server, migrates it and
   creates, with a small Django script in a subprocess, one user + token + session per
   client and round, and one agent whose model channel points at the scripted model
   (window 10 M tokens: no compaction, this measures the chat path);
3. starts one Daphne serving NetaClaw (``DJANGO_DEBUG=0``, its own Redis key prefix) and
   one Daphne serving ``bench/echo_asgi.py``: the yardstick (``/ws/chat/``: the same
   consumer base class and channel layer, the same six events per turn through Redis, no
   authentication, database or model) and the bare echo (``/ws/direct/``: no layer);
4. warms each server up with one turn per client at the largest level (a just-started
   process grows its pools, caches and heap in that first burst; reported apart, not
   pooled), then for each level N, on each server in turn: N ``websockets`` clients connect (token
   header), then all at once each sends ``--turns`` chat frames, each after the previous
   ``turn_done``, and times send → first ``delta`` and send → ``turn_done``; a turn counts
   only with a delta, the stored answer (``message`` from the assistant) and
   ``turn_done``. Every other outcome is an error: a failed connect (all its turns), an
   ``error`` event, a closed socket (1011…), a timeout, a missing delta or answer, every
   turn a failed client could not run, and every socket the server closes while the
   clients idle for a few seconds after their turns;
5. prints p50/p99 per level and server, the errors, the server's CPU time per turn,
   p99(NetaClaw) / p99(echo yardstick) against the target (≤ 3×, no errors), that ratio
   in each round, and each turn's stages by its index in the session.

Every loop is bounded (a timeout per turn and per level), all traffic stays on
127.0.0.1, and every process it starts is stopped and the database dropped at the end.
``--write`` records the tables, date, core count and command in BENCHMARKS.md
("WebSocket load"), leaving the other sections alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from bench.report import write_section

ROOT = Path(__file__).resolve().parents[1]
DB_NAME = "netaclaw_bench_ws_load"
HEADING = "## WebSocket load"
TURN_TIMEOUT = 60.0  # seconds one chat turn may take before it counts as an error
CONNECT_CONCURRENCY = 50  # handshakes in flight at once (Daphne's listen backlog is 50)
IDLE_SECONDS = 6.0  # idle after the turns: longer than channels-redis's 5 s blocking pop
WARM_UP_TURNS = 1  # per client, at the largest level, before the recorded rounds
TARGET_CLIENTS = 500  # the requirement: 500 clients, no errors, p99 ≤ 3× the echo yardstick


# ---------------------------------------------------------------------------
# processes


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_listening(port: int, proc: subprocess.Popen[Any], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the process for port {port} exited with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listens on {port} after {timeout}s")


@contextmanager
def _process(cmd: list[str], *, env: dict[str, str], log: Path, port: int) -> Iterator[int]:
    """Start ``cmd``, wait until it listens on ``port``; terminate (then kill) it after."""
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_listening(port, proc)
        yield proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def _base_env(var_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env.update(
        {
            "DATABASE_URL": _bench_db_url(),
            "REDIS_URL": os.environ["REDIS_URL"],
            "NETACLAW_CHANNEL_PREFIX": f"netaclaw_bench_ws_{os.getpid()}",
            "NETACLAW_VAR_DIR": str(var_dir),
            "DJANGO_DEBUG": "0",
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
            "NETACLAW_LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


def _bench_db_url() -> str:
    return os.environ["DATABASE_URL"].rsplit("/", 1)[0] + "/" + DB_NAME


def _admin_db_url() -> str:
    return os.environ["DATABASE_URL"].rsplit("/", 1)[0] + "/postgres"


def _recreate_database() -> None:
    import psycopg

    with psycopg.connect(_admin_db_url(), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {DB_NAME}")


def _drop_database() -> None:
    import psycopg

    with suppress(Exception), psycopg.connect(_admin_db_url(), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")


# ---------------------------------------------------------------------------
# the Django script (runs in a subprocess against the bench database)


def setup_main(clients: int, model_url: str) -> None:
    """Migrate, then one user + token + session per client; prints JSON on the last line."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "netaclaw.settings")
    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from rest_framework.authtoken.models import Token

    from agents.models import Agent, ChatSession, ModelChannel

    call_command("migrate", verbosity=0)
    User = get_user_model()
    channel = ModelChannel.objects.create(
        name="bench scripted model",
        provider="openai_compatible",
        base_url=model_url,
        api_key="sk-bench-not-a-secret",
        model="bench-model",
        context_window=10_000_000,
    )
    agent = Agent.objects.create(name="bench", system_prompt="You help.", model_channel=channel)
    users = [User(username=f"ws{i:04d}") for i in range(clients)]
    for user in users:
        user.set_unusable_password()  # hashing 1,000 passwords would dominate the set-up
    users = User.objects.bulk_create(users)
    tokens = Token.objects.bulk_create([Token(user=u, key=Token.generate_key()) for u in users])
    sessions = ChatSession.objects.bulk_create(
        [ChatSession(owner=u, agent=agent, title=f"load {u.username}") for u in users]
    )
    pairs = [[t.key, str(s.pk)] for t, s in zip(tokens, sessions, strict=True)]
    print(json.dumps({"clients": pairs}))


def _create_fixtures(env: dict[str, str], clients: int, model_url: str) -> list[tuple[str, str]]:
    out = subprocess.run(
        [sys.executable, "-m", "bench.ws_load", "--_setup", str(clients), "--model-url", model_url],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"set-up failed:\n{out.stderr[-3000:]}")
    data = json.loads(out.stdout.strip().splitlines()[-1])
    return [(token, sid) for token, sid in data["clients"]]


# ---------------------------------------------------------------------------
# the clients


@dataclass
class LevelResult:
    server: str
    clients: int
    turns: int
    round: int = 0
    first_delta: list[float] = field(default_factory=list)
    done: list[float] = field(default_factory=list)
    # per completed turn: (turn index, seconds from the send to each stage it reached)
    stages: list[tuple[int, dict[str, float]]] = field(default_factory=list)
    errors: int = 0  # turns that did not complete, plus sockets the server closed
    error_kinds: dict[str, int] = field(default_factory=dict)
    error_samples: list[str] = field(default_factory=list)
    connect_seconds: float = 0.0
    wall_seconds: float = 0.0
    server_cpu_seconds: float = 0.0  # user + system
    server_sys_seconds: float = 0.0
    model_cpu_seconds: float = 0.0  # the scripted model's process, over the same turns

    def error(self, kind: str, text: str, count: int = 1) -> None:
        self.errors += count
        self.error_kinds[kind] = self.error_kinds.get(kind, 0) + count
        if len(self.error_samples) < 5:
            self.error_samples.append(f"{self.server}: {text[:200]}")


def percentile(samples: list[float], q: float) -> float:
    """Nearest-rank percentile (the smallest sample with ≥ q % at or below it), in ms."""
    if not samples:
        return float("nan")
    ordered = sorted(samples)
    rank = max(1, min(len(ordered), math.ceil(q / 100 * len(ordered))))
    return ordered[rank - 1] * 1000


def _cpu_times(pid: int) -> tuple[float, float]:
    """User and system CPU time of a process so far, in seconds (Linux /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan"), float("nan")
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


async def _connect(port: int, path: str, token: str, gate: asyncio.Semaphore) -> Any:
    import websockets

    async with gate:
        return await websockets.connect(
            f"ws://127.0.0.1:{port}{path}",
            additional_headers={"Authorization": f"Token {token}"},
            open_timeout=30,
            max_size=2**22,
            ping_interval=None,  # the benchmark times frames, not keep-alives
        )


async def _client(
    ws: Any,
    session_id: str,
    turns: int,
    start: asyncio.Event,
    result: LevelResult,
    *,
    full: bool,
) -> bool:
    """Send ``turns`` chat frames one after the other; time each to its first ``delta`` and
    to its ``turn_done``. A turn counts only if it brought a delta, ``turn_done`` and (when
    ``full``) the stored answer; anything else is an error, and so is every turn the client
    could not run after one failed."""
    await start.wait()
    for turn in range(turns):
        frame = json.dumps({"type": "chat", "sessionId": session_id, "content": f"hello {turn}"})
        sent = time.perf_counter()
        first: float | None = None
        reached: dict[str, float] = {}
        answered = not full
        failure: tuple[str, str] | None = None
        try:
            await ws.send(frame)
            async with asyncio.timeout(TURN_TIMEOUT):
                while True:
                    event = json.loads(await ws.recv())
                    kind = event.get("type")
                    if event.get("sessionId") not in (None, session_id):
                        failure = ("foreign event", f"event for another session: {kind}")
                        break
                    if kind == "delta" and first is None:
                        first = time.perf_counter() - sent
                        reached["delta"] = first
                    elif kind == "message":
                        role = event["message"].get("role")
                        reached.setdefault(role, time.perf_counter() - sent)
                        answered = answered or role == "assistant"
                    elif kind == "error":
                        failure = (
                            "error event",
                            f"error event: {event.get('reason')}: {event.get('error')}",
                        )
                        break
                    elif kind == "turn_done":
                        break
        except TimeoutError:
            failure = ("timeout", f"turn {turn}: no turn_done after {TURN_TIMEOUT:.0f}s")
        except Exception as exc:  # a closed socket (1011…), a bad frame: counted, not fatal
            code = getattr(getattr(exc, "rcvd", None), "code", None)
            failure = (f"closed {code}" if code else type(exc).__name__, f"{exc!r}")
        if failure is None and first is None:
            failure = ("no delta", f"turn {turn}: turn_done without any delta")
        if failure is None and not answered:
            failure = ("no answer", f"turn {turn}: turn_done without the stored answer")
        if failure is not None:
            kind, text = failure
            result.error(kind, text)
            if turns - turn - 1:
                result.error("not run", "turns left after a failed one", turns - turn - 1)
            return False
        assert first is not None
        result.first_delta.append(first)
        result.done.append(reached.setdefault("turn_done", time.perf_counter() - sent))
        result.stages.append((turn, reached))
    return True


async def run_level(
    server: str,
    port: int,
    pairs: list[tuple[str, str]],
    turns: int,
    *,
    path: str = "/ws/chat/",
    full: bool = True,
    pid: int | None = None,
    idle: float = 0.0,
    model_pid: int | None = None,
) -> LevelResult:
    """One level: connect every client, then all chat at once; then (``idle``) keep the
    sockets open and idle for a while and count every one the server closed."""
    result = LevelResult(server=server, clients=len(pairs), turns=turns)
    gate = asyncio.Semaphore(CONNECT_CONCURRENCY)
    began = time.perf_counter()
    opened = await asyncio.gather(
        *(_connect(port, path, token, gate) for token, _ in pairs), return_exceptions=True
    )
    result.connect_seconds = time.perf_counter() - began
    start = asyncio.Event()
    tasks: list[tuple[Any, asyncio.Task[bool]]] = []
    for ws, (_, sid) in zip(opened, pairs, strict=True):
        if isinstance(ws, BaseException):
            result.error("connect", f"connect: {type(ws).__name__}: {ws}", turns)
            continue
        task = asyncio.create_task(_client(ws, sid, turns, start, result, full=full))
        tasks.append((ws, task))
    cpu = _cpu_times(pid) if pid else (math.nan, math.nan)
    model_cpu = _cpu_times(model_pid) if model_pid else (math.nan, math.nan)
    began = time.perf_counter()
    start.set()
    try:
        async with asyncio.timeout(TURN_TIMEOUT * turns + 30):
            await asyncio.gather(*(task for _, task in tasks))
    except TimeoutError:
        for _, task in tasks:
            task.cancel()
        missing = turns * result.clients - len(result.done) - result.errors
        result.error("level timeout", "the level did not finish in time", max(missing, 0))
    result.wall_seconds = time.perf_counter() - began
    if pid:
        user, system = _cpu_times(pid)
        result.server_cpu_seconds = user - cpu[0] + system - cpu[1]
        result.server_sys_seconds = system - cpu[1]
    if model_pid:
        user, system = _cpu_times(model_pid)
        result.model_cpu_seconds = user - model_cpu[0] + system - model_cpu[1]
    if idle:
        await asyncio.sleep(idle)
    for ws, task in tasks:  # a socket closed after its turns (idle, 1011) is an error too
        done_ok = task.done() and not task.cancelled() and task.result()
        if done_ok and ws.close_code is not None:
            result.error(
                f"closed {ws.close_code}", f"server closed an idle socket: {ws.close_code}"
            )
    await asyncio.gather(*(ws.close() for ws, _ in tasks), return_exceptions=True)
    return result


# ---------------------------------------------------------------------------
# report


SERVERS = ("direct", "echo", "netaclaw")  # measured in this order at every level
TITLES = {"direct": "bare echo (no layer)", "echo": "echo yardstick", "netaclaw": "NetaClaw"}


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
        "One Daphne serves NetaClaw (`DJANGO_DEBUG=0`, channels-redis) against the scripted "
        "model (`tests.support.llm_server --responder echo`: every answer streamed over the "
        "OpenAI SSE wire); a second Daphne serves `bench/echo_asgi.py`, the yardstick: the "
        "same Channels consumer machinery and channel layer, broadcasting the same six events "
        "per turn through Redis, with no authentication, database or model. All clients are "
        "`websockets` sockets in one asyncio process on the same machine; at each level every "
        f"client connects, then all at once send {turns} chat frames, each after the previous "
        "`turn_done`. Latency: from sending the chat frame to its first `delta` and to its "
        "`turn_done`, in ms. Errors: every turn that did not bring a delta, the stored answer "
        "and `turn_done` within 60 s (failed connects, error events, closed sockets, "
        f"timeouts, and the turns a failed client could not run), and every socket the server "
        f"closed during {IDLE_SECONDS:.0f} s of idling after the turns. The bare echo answers "
        "on the socket with no channel layer: it shows what the layer itself costs. "
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
            r = by_level[clients].get(server)
            if r is None:
                continue
            rate = len(r.done) / r.wall_seconds if r.wall_seconds else 0.0
            cpu = r.server_cpu_seconds * 1000 / len(r.done) if r.done else math.nan
            lines.append(
                f"| {clients} | {TITLES[server]} | {len(r.done)} | {r.errors} "
                f"| {_ms(r.first_delta, 50)} | {_ms(r.first_delta, 99)} "
                f"| {_ms(r.done, 50)} | {_ms(r.done, 99)} | {rate:.0f} | {cpu:.1f} |"
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


# ---------------------------------------------------------------------------
# main


def run(
    levels: list[int],
    turns: int,
    py_spy: str | None,
    servers: tuple[str, ...] = SERVERS,
    repeat: int = 1,
) -> tuple[list[LevelResult], list[LevelResult]]:
    """Every recorded level of every round, and the warm-up's results."""
    if not os.environ.get("DATABASE_URL", "").startswith("postgres") or not os.environ.get(
        "REDIS_URL"
    ):
        raise SystemExit("bench.ws_load needs DATABASE_URL=postgres://… and REDIS_URL=redis://…")
    work = Path(tempfile.mkdtemp(prefix="netaclaw-ws-load-"))
    env = _base_env(work / "var")
    # fresh NetaClaw sessions for every level of every round (and the warm-up)
    warm_clients = max(levels)
    total = sum(levels) * repeat + warm_clients
    results: list[LevelResult] = []
    warm_results: list[LevelResult] = []
    model_port, echo_port, app_port = _free_port(), _free_port(), _free_port()
    _recreate_database()
    try:
        with _process(
            [
                sys.executable,
                "-m",
                "tests.support.llm_server",
                "--port",
                str(model_port),
                "--responder",
                "echo",
            ],
            env=env,
            log=work / "model.log",
            port=model_port,
        ) as model_pid:
            pairs = _create_fixtures(env, total, f"http://127.0.0.1:{model_port}/v1")
            daphne = [sys.executable, "-m", "daphne", "-b", "127.0.0.1"]
            with (
                _process(
                    [*daphne, "-p", str(app_port), "netaclaw.asgi:application"],
                    env=env,
                    log=work / "netaclaw.log",
                    port=app_port,
                ) as app_pid,
                _process(
                    [*daphne, "-p", str(echo_port), "bench.echo_asgi:application"],
                    env=env,
                    log=work / "echo.log",
                    port=echo_port,
                ) as echo_pid,
            ):
                targets = {
                    "direct": (echo_port, "/ws/direct/", echo_pid),
                    "echo": (echo_port, "/ws/chat/", echo_pid),
                    "netaclaw": (app_port, "/ws/chat/", app_pid),
                }
                # warm-up at the largest level: a just-started process grows its pools
                # (NetaClaw: a keep-alive connection to the model per concurrent call),
                # caches and heap in its first burst; the rounds measure the steady state.
                # Reported apart ("cold first burst"), not pooled.
                warm = pairs[:warm_clients]
                for server in servers:
                    result = _serve(targets, server, warm, pairs[:warm_clients], WARM_UP_TURNS)
                    warm_results.append(result)
                    print(
                        f"  warm-up  {server:8} {warm_clients:4} clients: {_outcome(result)}",
                        flush=True,
                    )
                offset = warm_clients
                rounds = [(r, level) for r in range(repeat) for level in levels]
                for round_no, level in rounds:
                    fresh = pairs[offset : offset + level]  # NetaClaw: new sessions per level
                    offset += level
                    # every other round the other way round: a slow drift in the machine's
                    # background load does not always fall on the same server
                    order = servers if round_no % 2 == 0 else servers[::-1]
                    for server in order:
                        spy = None
                        profile = py_spy and round_no == 0 and level == max(levels)
                        if profile and server != "direct":
                            out = Path(py_spy)
                            spy = _start_py_spy(
                                targets[server][2], str(out.with_stem(f"{out.stem}.{server}"))
                            )
                        result = _serve(
                            targets,
                            server,
                            fresh,
                            pairs[:level],
                            turns,
                            idle=IDLE_SECONDS,
                            model_pid=model_pid,
                        )
                        if spy is not None:
                            _stop(spy)
                        result.round = round_no
                        results.append(result)
                        print(
                            f"  {round_no + 1}/{repeat} {server:8} {level:4} clients: "
                            f"{_outcome(result)} "
                            f"(connect {result.connect_seconds:.1f}s, "
                            f"run {result.wall_seconds:.1f}s, server CPU "
                            f"{result.server_cpu_seconds:.1f}s of it system "
                            f"{result.server_sys_seconds:.1f}s; scripted model CPU "
                            f"{result.model_cpu_seconds:.1f}s)",
                            flush=True,
                        )
    finally:
        _show_logs(work, results)
        _drop_database()
        _flush_redis(env["NETACLAW_CHANNEL_PREFIX"])
        shutil.rmtree(work, ignore_errors=True)
    return results, warm_results


def _serve(
    targets: dict[str, tuple[int, str, int]],
    server: str,
    sessions: list[tuple[str, str]],
    echo_pairs: list[tuple[str, str]],
    turns: int,
    *,
    idle: float = 0.0,
    model_pid: int | None = None,
) -> LevelResult:
    """One level on one server: NetaClaw chats in ``sessions`` (fresh ones), the echoes
    take any ids; the bare echo sends no stored answer and is not idled."""
    port, path, pid = targets[server]
    return asyncio.run(
        run_level(
            server,
            port,
            sessions if server == "netaclaw" else echo_pairs,
            turns,
            path=path,
            full=server != "direct",
            pid=pid,
            idle=idle if server != "direct" else 0.0,
            model_pid=model_pid if server == "netaclaw" else None,
        )
    )


def _outcome(result: LevelResult) -> str:
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


def _show_logs(work: Path, results: list[LevelResult]) -> None:
    """A server that erred: the end of its log (tracebacks), before the folder goes."""
    erred = {r.server for r in results if r.errors}
    for name in sorted({"netaclaw" if s == "netaclaw" else "echo" for s in erred}):
        log = work / f"{name}.log"
        if log.exists():
            lines = log.read_text(errors="replace").splitlines()
            first = next((i for i, line in enumerate(lines) if "Traceback" in line), None)
            shown = lines[first : first + 60] if first is not None else lines[-20:]
            print(f"--- from the {name} server's log", *shown, sep="\n", flush=True)


def _start_py_spy(pid: int, out: str) -> subprocess.Popen[Any] | None:
    exe = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(exe).exists():
        print("  (py-spy not installed: pip install py-spy)", flush=True)
        return None
    fmt = {".json": "speedscope", ".txt": "raw"}.get(Path(out).suffix, "flamegraph")
    cmd = [
        exe,
        "record",
        "--pid",
        str(pid),
        "-o",
        out,
        "-f",
        fmt,
        "-r",
        "50",
        "--nonblocking",
        "--gil",  # only samples holding the GIL: CPU work, not threads waiting for it
    ]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _stop(proc: subprocess.Popen[Any]) -> None:
    import signal

    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()


def _flush_redis(prefix: str) -> None:
    with suppress(Exception):
        import redis

        client = redis.Redis.from_url(os.environ["REDIS_URL"])
        for key in client.scan_iter(match=f"{prefix}*", count=1000):
            client.delete(key)


def _shown_url(url: str) -> str:
    """The URL as the command was given, without a password."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.ws_load", description=__doc__)
    parser.add_argument("--levels", default="100,250,500", help="concurrent clients per level")
    parser.add_argument("--turns", type=int, default=3, help="chat frames per client")
    parser.add_argument(
        "--repeat", type=int, default=1, help="rounds over all levels, samples pooled"
    )
    parser.add_argument("--write", action="store_true", help="record the table in BENCHMARKS.md")
    parser.add_argument(
        "--py-spy",
        metavar="FILE",
        help="profile each server at the top level (FILE.netaclaw.txt, FILE.echo.txt…)",
    )
    parser.add_argument(
        "--servers",
        default=",".join(SERVERS),
        help="which of direct,echo,netaclaw to measure (investigation; --write wants all)",
    )
    parser.add_argument("--_setup", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--model-url", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args._setup is not None:
        setup_main(args._setup, args.model_url)
        return
    levels = [int(x) for x in args.levels.split(",") if x.strip()]
    if not levels or min(levels) < 1 or max(levels) > 2000 or not 1 <= args.turns <= 20:
        raise SystemExit("levels must be 1..2000 clients and --turns 1..20")
    if not 1 <= args.repeat <= 10:
        raise SystemExit("--repeat must be 1..10")
    command = " ".join(
        [
            f"DATABASE_URL={_shown_url(os.environ.get('DATABASE_URL', ''))}",
            f"REDIS_URL={_shown_url(os.environ.get('REDIS_URL', ''))}",
            ".venv/bin/python -m bench.ws_load",
            *(argv if argv is not None else sys.argv[1:]),
        ]
    )
    servers = tuple(x for x in SERVERS if x in args.servers.split(","))
    if args.write and servers != SERVERS:
        raise SystemExit("--write records all three servers; drop --servers")
    load = os.getloadavg()
    rounds, warm = run(levels, args.turns, args.py_spy, servers, args.repeat)
    text = render(
        pooled(rounds),
        command=command,
        turns=args.turns,
        load=load,
        repeat=args.repeat,
        rounds=rounds,
        warm=warm,
    )
    print(text)
    if args.write:
        write_section(text, HEADING)


if __name__ == "__main__":
    main()
