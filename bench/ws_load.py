"""WebSocket load: N concurrent chat sockets against NetaClaw, next to a bare echo yardstick.

    .venv/bin/python -m bench.ws_load [--levels 100,250,500] [--turns 3] [--write]
        [--py-spy FILE.svg]

Needs ``DATABASE_URL`` (PostgreSQL) and ``REDIS_URL``: the production shape. The run

1. starts the scripted model (``python -m tests.support.llm_server --responder echo``,
   streaming over the OpenAI wire) in its own process;
2. creates a throwaway database ``netaclaw_bench_ws_load`` on that server, migrates it and
   creates, with a small Django script in a subprocess, one user + token + session per
   client and one agent whose model channel points at the scripted model (window 10 M
   tokens: no compaction, this measures the chat path);
3. starts one Daphne serving NetaClaw (``DJANGO_DEBUG=0``, its own Redis key prefix) and
   one Daphne serving ``bench/echo_asgi.py`` (same server and framework, no work);
4. for each level N, on each server in turn: N ``websockets`` clients connect (token
   header), then all at once each sends ``--turns`` chat frames one after the other and
   times send → first ``delta`` and send → ``turn_done``;
5. prints p50/p99 per level and server, the error count and p99(NetaClaw)/p99(echo).

Every loop is bounded (a timeout per turn and per level), all traffic stays on
127.0.0.1, and every process it starts is stopped and the database dropped at the end.
``--write`` records the table, date, nproc and command in BENCHMARKS.md ("WebSocket load").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DB_NAME = "netaclaw_bench_ws_load"
HEADING = "## WebSocket load"
TURN_TIMEOUT = 60.0  # seconds one chat turn may take before it counts as an error
CONNECT_CONCURRENCY = 50  # handshakes in flight at once (Daphne's listen backlog is 50)


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
    first_delta: list[float] = field(default_factory=list)
    done: list[float] = field(default_factory=list)
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)
    connect_seconds: float = 0.0
    wall_seconds: float = 0.0

    def error(self, text: str) -> None:
        self.errors += 1
        if len(self.error_samples) < 5:
            self.error_samples.append(text[:200])


def percentile(samples: list[float], q: float) -> float:
    """Nearest-rank percentile in milliseconds; NaN when there is no sample."""
    if not samples:
        return float("nan")
    ordered = sorted(samples)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1] * 1000


async def _connect(port: int, token: str, gate: asyncio.Semaphore) -> Any:
    import websockets

    async with gate:
        return await websockets.connect(
            f"ws://127.0.0.1:{port}/ws/chat/",
            additional_headers={"Authorization": f"Token {token}"},
            open_timeout=30,
            max_size=2**22,
            ping_interval=None,  # the benchmark times frames, not keep-alives
        )


async def _client(
    ws: Any, session_id: str, turns: int, start: asyncio.Event, result: LevelResult
) -> None:
    await start.wait()
    for turn in range(turns):
        frame = json.dumps({"type": "chat", "sessionId": session_id, "content": f"hello {turn}"})
        sent = time.perf_counter()
        first: float | None = None
        try:
            await ws.send(frame)
            async with asyncio.timeout(TURN_TIMEOUT):
                while True:
                    event = json.loads(await ws.recv())
                    kind = event.get("type")
                    if kind == "delta" and first is None:
                        first = time.perf_counter() - sent
                    elif kind == "error":
                        result.error(f"error event: {event.get('reason')}: {event.get('error')}")
                        return
                    elif kind == "turn_done":
                        break
        except TimeoutError:
            result.error(f"turn {turn} timed out after {TURN_TIMEOUT}s")
            return
        except Exception as exc:  # a closed socket, a bad frame: counted, not fatal
            result.error(f"{type(exc).__name__}: {exc}")
            return
        if first is None:
            result.error("turn_done without any delta")
            return
        result.first_delta.append(first)
        result.done.append(time.perf_counter() - sent)


async def run_level(
    server: str, port: int, pairs: list[tuple[str, str]], turns: int
) -> LevelResult:
    result = LevelResult(server=server, clients=len(pairs), turns=turns)
    gate = asyncio.Semaphore(CONNECT_CONCURRENCY)
    began = time.perf_counter()
    opened = await asyncio.gather(
        *(_connect(port, token, gate) for token, _ in pairs), return_exceptions=True
    )
    result.connect_seconds = time.perf_counter() - began
    start = asyncio.Event()
    tasks = []
    for ws, (_, sid) in zip(opened, pairs, strict=True):
        if isinstance(ws, BaseException):
            result.error(f"connect: {type(ws).__name__}: {ws}")
            continue
        tasks.append(asyncio.create_task(_client(ws, sid, turns, start, result)))
    began = time.perf_counter()
    start.set()
    try:
        async with asyncio.timeout(TURN_TIMEOUT * turns + 30):
            await asyncio.gather(*tasks)
    except TimeoutError:
        result.error("the level did not finish in time")
        for task in tasks:
            task.cancel()
    result.wall_seconds = time.perf_counter() - began
    await asyncio.gather(
        *(ws.close() for ws in opened if not isinstance(ws, BaseException)),
        return_exceptions=True,
    )
    return result


# ---------------------------------------------------------------------------
# report


def render(results: list[LevelResult], *, command: str, turns: int) -> str:
    lines = [
        HEADING,
        "",
        f"Command: `{command}` — {time.strftime('%Y-%m-%d')}, nproc {os.cpu_count()}, "
        "PostgreSQL + Redis, one Daphne per server, clients in one asyncio process on the "
        f"same machine; each client sends {turns} chat frames one after the other, all "
        "clients at once. Latencies in ms from `send` to the first `delta` / to `turn_done`.",
        "",
        "| clients | server | turns ok | errors | first delta p50 | first delta p99 "
        "| turn_done p50 | turn_done p99 | turns/s |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    by_level: dict[int, dict[str, LevelResult]] = {}
    for r in results:
        by_level.setdefault(r.clients, {})[r.server] = r
        rate = len(r.done) / r.wall_seconds if r.wall_seconds else 0.0
        lines.append(
            f"| {r.clients} | {r.server} | {len(r.done)} | {r.errors} "
            f"| {percentile(r.first_delta, 50):.0f} | {percentile(r.first_delta, 99):.0f} "
            f"| {percentile(r.done, 50):.0f} | {percentile(r.done, 99):.0f} | {rate:.0f} |"
        )
    lines += [
        "",
        "| clients | p99 ratio NetaClaw / echo (turn_done) | target ≤ 3× |",
        "|---:|---:|---|",
    ]
    for clients, pair in sorted(by_level.items()):
        if "netaclaw" in pair and "echo" in pair:
            ratio = percentile(pair["netaclaw"].done, 99) / percentile(pair["echo"].done, 99)
            ok = "met" if ratio <= 3 and pair["netaclaw"].errors == 0 else "**missed**"
            lines.append(f"| {clients} | {ratio:.1f}× | {ok} |")
    samples = [s for r in results for s in r.error_samples]
    if samples:
        lines += ["", "Error samples: " + "; ".join(f"`{s}`" for s in samples[:5])]
    return "\n".join(lines) + "\n"


def write_section(text: str) -> None:
    """Replace (or append) only this benchmark's section of BENCHMARKS.md."""
    path = ROOT / "BENCHMARKS.md"
    current = path.read_text() if path.exists() else "# Benchmarks\n"
    start = current.find(HEADING + "\n")
    if start == -1:
        current = current.rstrip() + "\n\n" + text
    else:
        end = current.find("\n## ", start + len(HEADING))
        current = current[:start] + text.rstrip() + "\n" + ("" if end == -1 else current[end:])
    path.write_text(current)


# ---------------------------------------------------------------------------
# main


def run(levels: list[int], turns: int, py_spy: str | None) -> list[LevelResult]:
    if not os.environ.get("DATABASE_URL", "").startswith("postgres") or not os.environ.get(
        "REDIS_URL"
    ):
        raise SystemExit("bench.ws_load needs DATABASE_URL=postgres://… and REDIS_URL=redis://…")
    work = Path(tempfile.mkdtemp(prefix="netaclaw-ws-load-"))
    env = _base_env(work / "var")
    total = sum(levels) + 5  # fresh NetaClaw sessions for every level (and the warm-up)
    results: list[LevelResult] = []
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
        ):
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
                ),
            ):
                # warm-up: imports, the SDK, connections
                asyncio.run(run_level("netaclaw", app_port, pairs[:5], 1))
                asyncio.run(run_level("echo", echo_port, pairs[:5], 1))
                offset = 5
                spy = None
                for level in levels:
                    fresh = pairs[offset : offset + level]
                    offset += level
                    for server, port in (("echo", echo_port), ("netaclaw", app_port)):
                        chunk = fresh if server == "netaclaw" else pairs[:level]
                        if server == "netaclaw" and py_spy and level == max(levels):
                            spy = _start_py_spy(app_pid, py_spy)
                        result = asyncio.run(run_level(server, port, chunk, turns))
                        if spy is not None:
                            _stop(spy)
                            spy = None
                        results.append(result)
                        print(
                            f"  {server:8} {level:4} clients: {len(result.done)} turns ok, "
                            f"{result.errors} errors, p99 turn_done "
                            f"{percentile(result.done, 99):.0f} ms "
                            f"(connect {result.connect_seconds:.1f}s, "
                            f"run {result.wall_seconds:.1f}s)",
                            flush=True,
                        )
    finally:
        _drop_database()
        _flush_redis(env["NETACLAW_CHANNEL_PREFIX"])
        shutil.rmtree(work, ignore_errors=True)
    return results


def _start_py_spy(pid: int, out: str) -> subprocess.Popen[Any] | None:
    exe = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(exe).exists():
        print("  (py-spy not installed: pip install py-spy)", flush=True)
        return None
    fmt = "speedscope" if out.endswith(".json") else "flamegraph"
    cmd = [exe, "record", "--pid", str(pid), "-o", out, "-f", fmt, "-r", "50", "--nonblocking"]
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.ws_load", description=__doc__)
    parser.add_argument("--levels", default="100,250,500", help="concurrent clients per level")
    parser.add_argument("--turns", type=int, default=3, help="chat frames per client")
    parser.add_argument("--write", action="store_true", help="record the table in BENCHMARKS.md")
    parser.add_argument("--py-spy", metavar="FILE", help="profile NetaClaw at the top level")
    parser.add_argument("--_setup", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--model-url", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args._setup is not None:
        setup_main(args._setup, args.model_url)
        return
    levels = [int(x) for x in args.levels.split(",") if x.strip()]
    if not levels or min(levels) < 1 or max(levels) > 2000 or not 1 <= args.turns <= 20:
        raise SystemExit("levels must be 1..2000 clients and --turns 1..20")
    command = "python -m bench.ws_load " + " ".join(argv if argv is not None else sys.argv[1:])
    results = run(levels, args.turns, args.py_spy)
    text = render(results, command=command.strip(), turns=args.turns)
    print(text)
    if args.write:
        write_section(text)


if __name__ == "__main__":
    main()
