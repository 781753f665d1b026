"""The processes under test: the scripted model, NetaClaw's Daphne and the echo yardstick's
Daphne, on a throwaway database and their own Redis key prefix; their CPU time and logs."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import databases
from scripted_llm.ports import free_port, wait_listening

ROOT = Path(__file__).resolve().parents[2]
DB_NAME = databases.unique_name("ws_load")  # this run's own: never anyone else's
SERVERS = ("direct", "echo", "netaclaw")  # measured in this order at every level
# each measured server's logs (NetaClaw's turns run in its job worker)
LOGS = {
    "netaclaw": ("netaclaw.log", "worker.log"),
    "echo": ("echo.log",),
    "direct": ("echo.log",),
}


@dataclass(frozen=True)
class Target:
    """Where one measured server answers: its port, its socket path, its process."""

    port: int
    path: str
    pid: int
    # processes whose CPU counts with the server's: NetaClaw's job worker
    helper_pids: tuple[int, ...] = ()

    @property
    def pids(self) -> tuple[int, ...]:
        return (self.pid, *self.helper_pids)


@dataclass(frozen=True)
class Stack:
    """Everything started: the servers by name, the scripted model's process, and one
    (token, session id) per client of every level, round and the warm-up."""

    targets: dict[str, Target]
    model_pid: int
    pairs: list[tuple[str, str]]


RUNNERS = ("worker", "inprocess")


@contextmanager
def started(work: Path, clients: int, runner: str = "worker") -> Iterator[Stack]:
    """Create the database, start the scripted model, create ``clients`` users with a
    session each, start both Daphnes (and, with the ``worker`` runner, NetaClaw's job
    worker: the production shape, one web process and one worker); afterwards stop them
    all, drop the database and the Redis keys. Process logs go to ``work``."""
    if runner not in RUNNERS:
        raise ValueError(f"runner must be one of {RUNNERS}")
    env = _base_env(work / "var")
    env["NETACLAW_RUNNER"] = runner
    model_port, echo_port, app_port = free_port(), free_port(), free_port()
    python = [sys.executable, "-m"]
    daphne = [*python, "daphne", "-b", "127.0.0.1"]
    _recreate_database()
    try:
        with ExitStack() as stack:
            model_pid = stack.enter_context(
                _process(
                    [*python, "scripted_llm", "--port", str(model_port), "--responder", "echo"],
                    env=env,
                    log=work / "model.log",
                    port=model_port,
                )
            )
            pairs = _create_fixtures(env, clients, f"http://127.0.0.1:{model_port}/v1")
            app_pid = stack.enter_context(
                _process(
                    [*daphne, "-p", str(app_port), "netaclaw.asgi:application"],
                    env=env,
                    log=work / LOGS["netaclaw"][0],
                    port=app_port,
                )
            )
            workers = ()
            if runner == "worker":
                workers = (stack.enter_context(job_worker(env, work / LOGS["netaclaw"][1])),)
            echo_pid = stack.enter_context(
                _process(
                    [*daphne, "-p", str(echo_port), "bench.echo_asgi:application"],
                    env=env,
                    log=work / LOGS["echo"][0],
                    port=echo_port,
                )
            )
            targets = {
                "direct": Target(echo_port, "/ws/direct/", echo_pid),
                "echo": Target(echo_port, "/ws/chat/", echo_pid),
                "netaclaw": Target(app_port, "/ws/chat/", app_pid, workers),
            }
            yield Stack(targets=targets, model_pid=model_pid, pairs=pairs)
    finally:
        _drop_database()
        _flush_redis(env["NETACLAW_CHANNEL_PREFIX"])


def check_environment() -> None:
    if not os.environ.get("DATABASE_URL", "").startswith("postgres") or not os.environ.get(
        "REDIS_URL"
    ):
        raise SystemExit("bench.ws_load needs DATABASE_URL=postgres://… and REDIS_URL=redis://…")


class CpuClock:
    """User and system CPU time a process spent since the clock was made (Linux /proc);
    NaN without a process."""

    def __init__(self, *pids: int | None) -> None:
        self.pids = tuple(pid for pid in pids if pid)
        self.start = self._times()

    def spent(self) -> tuple[float, float]:
        user, system = self._times()
        return user - self.start[0], system - self.start[1]

    def _times(self) -> tuple[float, float]:
        if not self.pids:
            return float("nan"), float("nan")
        user = system = 0.0
        tick = os.sysconf("SC_CLK_TCK")
        for pid in self.pids:  # the server's processes together
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                return float("nan"), float("nan")
            user, system = user + int(fields[11]) / tick, system + int(fields[12]) / tick
        return user, system


def show_logs(work: Path, servers: set[str]) -> None:
    """The end of each named server's log (from its first traceback), before the folder goes."""
    for name in sorted({log for s in servers for log in LOGS[s]}):
        log = work / name
        if log.exists():
            lines = log.read_text(errors="replace").splitlines()
            first = next((i for i, line in enumerate(lines) if "Traceback" in line), None)
            shown = lines[first : first + 60] if first is not None else lines[-20:]
            print(f"--- from the {log.stem} server's log", *shown, sep="\n", flush=True)


def start_py_spy(pid: int, out: str) -> subprocess.Popen[Any] | None:
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


def stop(proc: subprocess.Popen[Any], sig: int = signal.SIGTERM, timeout: float = 15) -> None:
    """Signal ``proc`` and wait; kill it if it is still there after ``timeout`` seconds."""
    proc.send_signal(sig)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


@contextmanager
def _process(cmd: list[str], *, env: dict[str, str], log: Path, port: int) -> Iterator[int]:
    """Start ``cmd``, wait until it listens on ``port``; terminate (then kill) it after."""
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_listening(port, proc)
        yield proc.pid
    finally:
        stop(proc)


@contextmanager
def job_worker(env: dict[str, str], log: Path) -> Iterator[int]:
    """``manage.py run_worker`` until it says it runs; SIGTERM (its drain) after."""
    cmd = [sys.executable, "manage.py", "run_worker"]
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while "jobs at once" not in log.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the job worker did not start:\n{log.read_text()[-2000:]}")
            time.sleep(0.1)
        yield proc.pid
    finally:
        stop(proc, timeout=35)


def _base_env(var_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env.update(
        {
            "DATABASE_URL": _database_url(DB_NAME),
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


def _database_url(name: str) -> str:
    """``DATABASE_URL`` with another database name: the same server and credentials."""
    return databases.url_with_database(os.environ["DATABASE_URL"], name)


def _recreate_database() -> None:
    databases.create(os.environ["DATABASE_URL"], DB_NAME)


def _drop_database() -> None:
    databases.drop(os.environ["DATABASE_URL"], DB_NAME)


def _create_fixtures(env: dict[str, str], clients: int, model_url: str) -> list[tuple[str, str]]:
    """``bench.ws_load.fixtures`` against the bench database: (token, session id) per client."""
    out = subprocess.run(
        [sys.executable, "-m", "bench.ws_load.fixtures", str(clients), model_url],
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


def _flush_redis(prefix: str) -> None:
    with suppress(Exception):
        import redis

        client = redis.Redis.from_url(os.environ["REDIS_URL"])
        for key in client.scan_iter(match=f"{prefix}*", count=1000):
            client.delete(key)
