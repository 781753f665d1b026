"""Who keeps a socket (issue 15, item 6): a deactivated, deleted or re-passworded user's open
sockets are closed, an expired token opens none, and only the page's own origin (host *and*
port) or a trusted one may open a cookie socket — another local port is a foreign site."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.authtoken.models import Token

from tests.factories import make_user
from tests.support.sockets import connect, token_for

pytestmark = pytest.mark.django_db(transaction=True)

REVOKED = 4401


@database_sync_to_async
def _user():
    return make_user()


@database_sync_to_async
def _cookie(user) -> str:
    client = Client()
    client.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"


async def _closed_with(communicator: WebsocketCommunicator) -> int | None:
    output = await communicator.receive_output(timeout=5)
    assert output["type"] == "websocket.close", output
    return output.get("code")


def _deactivate(user) -> None:
    user.is_active = False
    user.save()


def _new_password(user) -> None:
    user.set_password("a-brand-new-password-77")
    user.save()


def _delete(user) -> None:
    get_user_model().objects.filter(pk=user.pk).delete()


@pytest.mark.parametrize("change", [_deactivate, _new_password, _delete])
async def test_ending_a_users_access_closes_their_open_sockets(change) -> None:
    user = await _user()
    by_token, connected = await connect(token=await token_for(user), origin=None)
    assert connected
    by_cookie, connected = await connect(cookie=await _cookie(user), path="/ws/chat/html/")
    assert connected
    bystander = await _user()
    other, connected = await connect(token=await token_for(bystander), origin=None)
    assert connected
    await database_sync_to_async(change)(user)
    assert await _closed_with(by_token) == REVOKED
    assert await _closed_with(by_cookie) == REVOKED
    assert await other.receive_nothing(timeout=0.3), "another user's socket stays open"
    await other.disconnect()


async def test_a_password_change_ends_the_token_for_new_sockets_too() -> None:
    user = await _user()
    token = await token_for(user)
    await database_sync_to_async(_new_password)(user)
    communicator, connected = await connect(token=token, origin=None)
    assert not connected
    await communicator.disconnect()


async def test_an_expired_token_serves_no_socket() -> None:
    user = await _user()
    token = await token_for(user)

    @database_sync_to_async
    def age() -> None:
        ttl = settings.NETACLAW["TOKEN_TTL_SECONDS"]
        assert ttl > 0
        created = Token.objects.get(key=token).created
        Token.objects.filter(key=token).update(created=created - timedelta(seconds=ttl + 1))

    await age()
    communicator, _ = await connect(token=token, origin=None)
    # told token_expired, then closed with 4401 (tests/gateway/test_socket_revalidation.py)
    assert json.loads(await communicator.receive_from(timeout=5))["reason"] == "token_expired"
    assert await _closed_with(communicator) == REVOKED


async def _open(cookie: str, origin: bytes, host: bytes | None) -> bool:
    from netaclaw.asgi import application

    headers = [(b"origin", origin), (b"cookie", cookie.encode())]
    if host is not None:
        headers.append((b"host", host))
    communicator = WebsocketCommunicator(application, "/ws/chat/", headers=headers)
    connected, _ = await communicator.connect(timeout=5)
    await communicator.disconnect()
    return connected


@pytest.mark.parametrize(
    ("origin", "host", "allowed"),
    [
        (b"http://localhost:8000", b"localhost:8000", True),
        (b"http://127.0.0.1:8000", b"127.0.0.1:8000", True),
        (b"https://localhost", b"localhost:443", True),
        (b"http://localhost:9999", b"localhost:8000", False),  # another local server
        (b"http://127.0.0.1:5173", b"127.0.0.1:8000", False),
        (b"http://localhost:8000", b"127.0.0.1:8000", False),  # another host
        (b"http://evil.example:8000", b"evil.example:8000", False),  # not an allowed host
        (b"http://localhost", None, True),  # no Host: the scheme's default port only
        (b"http://localhost:9999", None, False),
        (b"null", b"localhost:8000", False),
    ],
)
async def test_a_cookie_socket_needs_the_pages_own_origin(origin, host, allowed) -> None:
    cookie = await _cookie(await _user())
    assert await _open(cookie, origin, host) is allowed


async def test_a_trusted_origin_is_allowed(settings) -> None:
    settings.CSRF_TRUSTED_ORIGINS = ["https://chat.example.com", "https://*.corp.example"]
    cookie = await _cookie(await _user())
    assert await _open(cookie, b"https://chat.example.com", b"127.0.0.1:8000")
    assert await _open(cookie, b"https://team.corp.example", b"127.0.0.1:8000")
    assert not await _open(cookie, b"http://chat.example.com", b"127.0.0.1:8000")
    assert not await _open(cookie, b"https://chat.example.com:8443", b"127.0.0.1:8000")
