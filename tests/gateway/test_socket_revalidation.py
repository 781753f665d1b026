"""Open sockets close whatever ends their credentials (issue 27 item 9): signals closed them
only for ORM saves in a process whose channel layer reaches the server. A queryset
``update(is_active=False)``, a password change or a deactivation by a command in another
process (on the in-memory layer), and a token that expires left sockets working. Now every
process checks its open sockets' credentials every ``SOCKET_RECHECK_SECONDS`` too."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from datetime import timedelta

import pytest
from channels.db import database_sync_to_async
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.authtoken.models import Token

from tests.factories import make_user
from tests.support.daphne import ROOT, database_url
from tests.support.sockets import connect, token_for

pytestmark = pytest.mark.django_db(transaction=True)

REVOKED = 4401
RECHECK = 0.2


@pytest.fixture(autouse=True)
def _quick_recheck(settings):
    settings.NETACLAW = {**settings.NETACLAW, "SOCKET_RECHECK_SECONDS": RECHECK}


@database_sync_to_async
def _user():
    return make_user()


@database_sync_to_async
def _cookie(user) -> str:
    client = Client()
    client.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"


async def _sockets(user):
    """A program's socket (token) and a page's (cookie) of ``user``, and a bystander's."""
    by_token, ok_token = await connect(token=await token_for(user), origin=None)
    by_cookie, ok_cookie = await connect(cookie=await _cookie(user), path="/ws/chat/html/")
    other, ok_other = await connect(token=await token_for(await _user()), origin=None)
    assert ok_token and ok_cookie and ok_other
    return by_token, by_cookie, other


async def _closed_with(communicator, timeout: float = 10 * RECHECK + 2) -> int | None:
    output = await communicator.receive_output(timeout=timeout)
    assert output["type"] == "websocket.close", output
    return output.get("code")


def _in_another_process(code: str) -> None:
    """``manage.py shell -c code`` on the test database, its channel layer in-memory (a
    command beside a server without Redis: no message of its reaches this process)."""
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "NETACLAW_VAR_DIR": str(settings.VAR_DIR),
    }
    for name in ("REDIS_URL", "NETACLAW_TEST_DB_NAME", "DJANGO_ALLOW_ASYNC_UNSAFE"):
        env.pop(name, None)
    subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
    )


async def test_a_queryset_deactivation_closes_the_users_sockets() -> None:
    user = await _user()
    by_token, by_cookie, other = await _sockets(user)
    await database_sync_to_async(
        lambda: get_user_model().objects.filter(pk=user.pk).update(is_active=False)
    )()
    assert await _closed_with(by_token) == REVOKED
    assert await _closed_with(by_cookie) == REVOKED
    assert await other.receive_nothing(timeout=3 * RECHECK), "another user's socket stays open"
    await other.disconnect()


@pytest.mark.parametrize(
    "change",
    [
        "u.set_password('changed-by-a-command-1'); u.save()",
        "u.is_active = False; u.save()",
    ],
)
async def test_a_command_in_another_process_closes_the_users_sockets(change) -> None:
    user = await _user()
    by_token, by_cookie, other = await _sockets(user)
    command = f"from django.contrib.auth import get_user_model; u = get_user_model().objects.get(pk={user.pk}); {change}"
    await asyncio.to_thread(_in_another_process, command)
    assert await _closed_with(by_token) == REVOKED
    assert await _closed_with(by_cookie) == REVOKED
    assert await other.receive_nothing(timeout=3 * RECHECK)
    await other.disconnect()


async def test_a_socket_closes_when_its_token_expires() -> None:
    user = await _user()
    token = await token_for(user)
    ws, connected = await connect(token=token, origin=None)
    assert connected
    assert await ws.receive_nothing(timeout=3 * RECHECK), "a valid token's socket stays open"

    @database_sync_to_async
    def expire() -> None:
        ttl = settings.NETACLAW["TOKEN_TTL_SECONDS"]
        Token.objects.filter(key=token).update(
            created=Token.objects.get(key=token).created - timedelta(seconds=ttl + 1)
        )

    await expire()
    assert await _closed_with(ws) == REVOKED


async def test_an_expired_token_is_told_so_and_closed_with_4401() -> None:
    user = await _user()
    token = await token_for(user)

    @database_sync_to_async
    def age() -> None:
        ttl = settings.NETACLAW["TOKEN_TTL_SECONDS"]
        created = Token.objects.get(key=token).created
        Token.objects.filter(key=token).update(created=created - timedelta(seconds=ttl + 1))

    await age()
    ws, connected = await connect(token=token, origin=None)
    assert connected  # accepted only to say why: a refused handshake is a bare HTTP 403
    said = json.loads(await ws.receive_from(timeout=5))
    assert said == {
        "type": "error",
        "error": "The API token has expired; request a new one.",
        "reason": "token_expired",
    }
    assert await _closed_with(ws, timeout=5) == REVOKED
