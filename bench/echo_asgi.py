"""The yardstick for ``bench.ws_load``: a bare echo consumer on the same stack.

Same server (Daphne), same framework (a Channels ``AsyncWebsocketConsumer``), same
JSON frames, and nothing else: no authentication, no database, no channel layer,
no model. For every ``chat`` frame it answers what NetaClaw answers at the two
points the benchmark times — one ``delta`` and then ``turn_done`` — so the ratio
p99(NetaClaw) / p99(echo) is the cost of NetaClaw's own work on a chat turn at a
given number of concurrent sockets, on this machine, in the same run.

    .venv/bin/daphne -b 127.0.0.1 -p 8901 bench.echo_asgi:application
"""

from __future__ import annotations

import json
from typing import Any

import django
from django.conf import settings

if not settings.configured:
    settings.configure(
        DEBUG=False,
        INSTALLED_APPS=[],
        CHANNEL_LAYERS={},  # no layer: a consumer gets channel_layer None
        ALLOWED_HOSTS=["127.0.0.1", "localhost"],
        USE_TZ=True,
    )
    django.setup()

from channels.generic.websocket import AsyncWebsocketConsumer
from channels.routing import ProtocolTypeRouter, URLRouter
from django.urls import path


class EchoConsumer(AsyncWebsocketConsumer):
    """Accept anyone; answer each chat frame with ``delta`` (its content) and ``turn_done``."""

    async def connect(self) -> None:
        await self.accept()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        try:
            frame: Any = json.loads(text_data or "")
        except ValueError:
            await self.send(text_data=json.dumps({"type": "error", "error": "bad json"}))
            return
        if not isinstance(frame, dict):
            frame = {}
        sid = frame.get("sessionId")
        await self.send(
            text_data=json.dumps(
                {"type": "delta", "sessionId": sid, "text": str(frame.get("content", ""))[:64]}
            )
        )
        await self.send(text_data=json.dumps({"type": "turn_done", "sessionId": sid}))


application = ProtocolTypeRouter(
    {"websocket": URLRouter([path("ws/chat/", EchoConsumer.as_asgi())])}
)
