"""`make run`: the first-run set-up, then Daphne — and how to log in, printed once Daphne
listens (issue 16 item 9: loading the model SDKs takes 10–15 s, and credentials printed
before the port opens led people to a page that did not answer)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from chat.recovery import recover_after_restart
from netaclaw.bootstrap import bootstrap
from netaclaw.management.commands.bootstrap_local import write_login

START_TIMEOUT_SECONDS = 120.0


def daphne_command(host: str, port: int) -> list[str]:
    """Daphne as production runs it (``netaclaw.serve``: a frame over the limit is closed
    with 1009, not reset) with the WebSocket limits of the settings (an oversized client
    frame is answered with an error instead of closing the socket at Daphne's default 1 MiB)."""
    return [
        sys.executable,
        "-m",
        "netaclaw.serve",
        "-b",
        host,
        "-p",
        str(port),
        "--websocket-max-message-size",
        str(settings.DAPHNE_WEBSOCKET_MAX_MESSAGE_SIZE),
        "--websocket-max-frame-size",
        str(settings.DAPHNE_WEBSOCKET_MAX_FRAME_SIZE),
        "netaclaw.asgi:application",
    ]


def wait_listening(host: str, port: int, process: subprocess.Popen[bytes], timeout: float) -> bool:
    """True once ``host:port`` accepts connections; False if ``process`` ends first or
    ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.2)
    return False


class Command(BaseCommand):
    help = "Set up a local NetaClaw (admin, demo agent), serve it with Daphne, print how to log in."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)

    def handle(self, *args: Any, host: str, port: int, **options: Any) -> None:
        report = bootstrap()
        recovered = recover_after_restart()  # what the last run left running, recorded
        if recovered:
            self.stdout.write(f"Recovered {len(recovered)} chat(s) left running by the last run.")
        url = f"http://{host}:{port}"
        self.stdout.write(f"Starting NetaClaw on {url} …")
        process = subprocess.Popen(daphne_command(host, port))
        try:
            if not wait_listening(host, port, process, START_TIMEOUT_SECONDS):
                process.terminate()
                raise CommandError(f"Daphne did not start listening on {url}.")
            self.stdout.write("")
            self.stdout.write(self.style.SUCCESS(f"NetaClaw is listening on {url}"))
            write_login(self.stdout, self.style, report, url)
            self.stdout.write("(Ctrl+C stops it.)")
            code = process.wait()
        except KeyboardInterrupt:  # Ctrl+C reached Daphne too: let it finish
            code = process.wait()
        if code not in (0, -2, 130):
            raise CommandError(f"Daphne exited with status {code}.")
