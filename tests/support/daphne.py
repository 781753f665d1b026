"""A real Daphne process serving the test database, for tests that need the real server
(its WebSocket limits, its channel layer under load) and a plain ``websockets`` client.

The test writes its data with the ORM (``django_db(transaction=True)``: committed, so the
server sees it) and talks to ``ws://127.0.0.1:<port>/ws/chat/`` with a token. The server
runs this process's settings module on the same database; its channel layer is the
in-memory one (``layer="memory"``) or Redis on ``settings.REDIS_URL`` (``layer="redis"``).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def database_url() -> str:
    """The URL of the database this process's tests use (the test database)."""
    from django.db import connection

    s = connection.settings_dict
    if s["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{s['NAME']}"
    user = quote(s.get("USER") or "", safe="")
    password = quote(s.get("PASSWORD") or "", safe="")
    auth = f"{user}:{password}@" if user or password else ""
    host = s.get("HOST") or "127.0.0.1"
    port = f":{s['PORT']}" if s.get("PORT") else ""
    return f"postgres://{auth}{host}{port}/{s['NAME']}"


def daphne_limits() -> list[str]:
    """Daphne's WebSocket limits as ``make run`` passes them (from the settings)."""
    from django.conf import settings

    return [
        "--websocket-max-message-size",
        str(settings.DAPHNE_WEBSOCKET_MAX_MESSAGE_SIZE),
        "--websocket-max-frame-size",
        str(settings.DAPHNE_WEBSOCKET_MAX_FRAME_SIZE),
    ]


@dataclass(frozen=True, slots=True)
class LiveServer:
    port: int
    log: Path
    pid: int
    process: subprocess.Popen[bytes] | None = None  # for a test that signals it itself

    def rss_mib(self) -> int:
        """The server process's resident memory, in MiB (Linux)."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
        raise RuntimeError("no VmRSS")

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws/chat/"

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _wait_listening(port: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"daphne exited with {proc.returncode}:\n{log.read_text()}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"daphne on {port} did not start:\n{log.read_text()}")


@contextmanager
def running_daphne(
    var_dir: Path,
    *,
    layer: Literal["memory", "redis"] = "memory",
    env: dict[str, str] | None = None,
    args: Sequence[str] = (),
    server: str = "netaclaw.serve",
) -> Iterator[LiveServer]:
    """``python -m netaclaw.serve netaclaw.asgi:application`` (Daphne as production runs it,
    README "Running in production"; ``server="daphne"``: Daphne's own command) on a free
    port, stopped on exit."""
    from django.conf import settings

    var_dir.mkdir(parents=True, exist_ok=True)
    full_env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        # this process's settings module (passwords, hashers), not the ASGI module's default
        "DJANGO_SETTINGS_MODULE": os.environ.get("DJANGO_SETTINGS_MODULE", "tests.settings"),
        "NETACLAW_VAR_DIR": str(var_dir),
        "PYTHONUNBUFFERED": "1",
    }
    full_env.pop("NETACLAW_TEST_DB_NAME", None)
    full_env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    if layer == "redis":
        assert settings.REDIS_URL, "layer='redis' needs REDIS_URL"
        full_env["REDIS_URL"] = settings.REDIS_URL
        full_env["NETACLAW_CHANNEL_PREFIX"] = settings.CHANNEL_LAYERS["default"]["CONFIG"]["prefix"]
    else:
        full_env.pop("REDIS_URL", None)
    full_env.update(env or {})
    port = free_port()
    log = var_dir / f"daphne-{port}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                *(sys.executable, "-m", server, "-b", "127.0.0.1", "-p", str(port)),
                *daphne_limits(),
                *args,
                "netaclaw.asgi:application",
            ],
            cwd=ROOT,
            env=full_env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_listening(port, proc, log)
        yield LiveServer(port=port, log=log, pid=proc.pid, process=proc)
    finally:
        if proc.poll() is None:
            proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
