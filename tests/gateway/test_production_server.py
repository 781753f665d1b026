"""Daphne as production runs it (``python -m netaclaw.serve``, README "Running in
production"): a client frame over Daphne's 8 MiB limit is closed with 1009 as README says,
not reset (issue 27 item 13), and behind a trusted proxy login throttling sees the address
the proxy appended, not one the client wrote (item 8)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import urllib.request

import pytest
import websockets
from axes.models import AccessAttempt
from django.conf import settings
from rest_framework.authtoken.models import Token

from tests.factories import make_user
from tests.support.daphne import ROOT, running_daphne

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

OVER_DAPHNES_LIMIT = settings.DAPHNE_WEBSOCKET_MAX_MESSAGE_SIZE + 1024 * 1024


async def _send_too_much(url: str, token: str) -> int | None:
    """The close code the client receives after one frame over Daphne's limit (None: the
    connection was dropped without a close frame)."""
    ws = await websockets.connect(
        url, additional_headers={"Authorization": f"Token {token}"}, open_timeout=20
    )
    try:
        await ws.send("x" * OVER_DAPHNES_LIMIT)
        async with asyncio.timeout(20):
            while True:
                await ws.recv()
    except websockets.ConnectionClosed as closed:
        return closed.rcvd.code if closed.rcvd is not None else None
    finally:
        await ws.close()


def test_a_frame_over_daphnes_limit_is_closed_with_1009(tmp_path) -> None:
    token = Token.objects.create(user=make_user()).key
    with running_daphne(tmp_path / "var") as server:
        codes = [asyncio.run(_send_too_much(server.ws_url, token)) for _ in range(2)]
        log = server.log
    assert codes == [1009, 1009], log.read_text()[-2000:]


def _login(url: str, username: str, password: str, forwarded: str) -> int:
    body = json.dumps({"username": username, "password": password}).encode()
    request = urllib.request.Request(
        url + "/api/auth/token/",
        data=body,
        headers={"Content-Type": "application/json", "X-Forwarded-For": forwarded},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_behind_a_trusted_proxy_throttling_sees_the_appended_address(tmp_path) -> None:
    make_user("carol", password="the-right-password-93")
    env = {"NETACLAW_TRUSTED_PROXIES": "127.0.0.1"}  # the test is the proxy
    with running_daphne(tmp_path / "var", env=env) as server:
        for n in range(settings.AXES_FAILURE_LIMIT):
            _login(server.http_url, "carol", "wrong", f"203.0.113.{n}, 198.51.100.7")
        locked = _login(server.http_url, "carol", "the-right-password-93", "198.51.100.7")
        elsewhere = _login(server.http_url, "carol", "the-right-password-93", "198.51.100.8")
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"198.51.100.7"}
    assert (locked, elsewhere) == (429, 200)


def test_proxy_headers_are_refused() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "netaclaw.serve", "--proxy-headers", "netaclaw.asgi:application"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "NETACLAW_TRUSTED_PROXIES" in result.stderr
