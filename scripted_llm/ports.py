"""Loopback ports for the servers tests and benchmarks start (Daphne, the scripted model)."""

from __future__ import annotations

import socket
import subprocess
import time
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_listening(
    port: int, proc: subprocess.Popen[Any], timeout: float = 30, describe: str = ""
) -> None:
    """Until something accepts on ``port``; fails at once when ``proc`` exits first.
    ``describe``: appended to the error (e.g. the process's log)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"the process for port {port} exited with {proc.returncode}{describe}"
            )
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listens on {port} after {timeout}s{describe}")
