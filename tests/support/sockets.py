"""WebSocket helpers: a communicator on the real ASGI stack (auth, origin, routing)."""

from __future__ import annotations

import json
from typing import Any

from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AbstractBaseUser
from rest_framework.authtoken.models import Token


@database_sync_to_async
def token_for(user: AbstractBaseUser) -> str:
    return Token.objects.get_or_create(user=user)[0].key


async def connect(
    *,
    token: str | None = None,
    path: str = "/ws/chat/",
    origin: bytes | None = b"http://localhost",
    cookie: str | None = None,
) -> tuple[WebsocketCommunicator, bool]:
    from netaclaw.asgi import application

    headers: list[tuple[bytes, bytes]] = []
    if origin is not None:
        headers.append((b"origin", origin))
    if token is not None:
        headers.append((b"authorization", f"Token {token}".encode()))
    if cookie is not None:
        headers.append((b"cookie", cookie.encode()))
    communicator = WebsocketCommunicator(application, path, headers=headers)
    connected, _ = await communicator.connect(timeout=5)
    return communicator, connected


async def send(communicator: WebsocketCommunicator, frame: dict[str, Any]) -> None:
    await communicator.send_to(text_data=json.dumps(frame))


async def receive(communicator: WebsocketCommunicator, timeout: float = 10) -> dict[str, Any]:
    return json.loads(await communicator.receive_from(timeout=timeout))


async def receive_until(
    communicator: WebsocketCommunicator, event_type: str, timeout: float = 20
) -> list[dict[str, Any]]:
    """Every event up to and including the first of ``event_type``."""
    seen: list[dict[str, Any]] = []
    while True:
        event = await receive(communicator, timeout)
        seen.append(event)
        if event["type"] == event_type:
            return seen
