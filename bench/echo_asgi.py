"""The yardstick for ``bench.ws_load``: an echo consumer on the same stack, doing no work.

Same server (Daphne), same consumer base class as NetaClaw's sockets
(``channels_app.consumer_base.EventSocketConsumer``), same
channel layer (channels-redis, configured exactly as NetaClaw's settings configure it,
under its own key prefix), same event types and the same route for every event:
``group_send`` to the session's group, the layer handler, the JSON encoding of
``agents.events``. What it leaves out is NetaClaw's own work: no
authentication, no database, no model, no runner queue.

``/ws/chat/`` (the yardstick): for every ``chat`` frame it joins the session's group
(once) and broadcasts the events a NetaClaw chat turn against the benchmark's scripted
model broadcasts, in the same order — ``message`` (the user's), ``token_update``,
``delta``, ``message`` (the answer), ``token_update``, ``turn_done`` — so the ratio
p99(NetaClaw) / p99(echo) is the cost of NetaClaw's work on a turn, at the same number
of concurrent sockets, on this machine, in the same run. Each event is its own
``group_send`` here; NetaClaw sends the events that are ready together as one layer
message (``agents.broadcast.apublish``: three per turn since 2026-12-04). The yardstick
keeps six, so it stays the same reference from one record to the next: the ratio counts
that saving as NetaClaw's.

``/ws/direct/``: the bare echo — ``delta`` and ``turn_done`` sent straight back on the
socket, no channel layer. Reported beside the yardstick to show what the layer costs.

    .venv/bin/daphne -b 127.0.0.1 -p 8901 bench.echo_asgi:application
"""

from __future__ import annotations

import copy
import os
import time
from typing import Any

import django
from django.conf import settings


def _product_channel_layers() -> dict[str, Any]:
    """NetaClaw's CHANNEL_LAYERS (same hosts, timeouts, capacity), another key prefix."""
    from netaclaw import settings as product

    layers = copy.deepcopy(product.CHANNEL_LAYERS)
    config = layers["default"].get("CONFIG")
    if config is not None:
        config["prefix"] = f"{config.get('prefix', 'netaclaw')}_echo"
    return layers


if not settings.configured:
    os.environ.setdefault("DJANGO_SECRET_KEY", "bench-echo-not-a-secret")
    settings.configure(
        DEBUG=False,
        INSTALLED_APPS=[],
        CHANNEL_LAYERS=_product_channel_layers(),
        ALLOWED_HOSTS=["127.0.0.1", "localhost"],
        USE_TZ=True,
        NETACLAW={"MAX_FRAME_BYTES": 256 * 1024},
    )
    django.setup()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.urls import path  # noqa: E402

from agents.broadcast import apublish  # noqa: E402
from agents.events import (  # noqa: E402
    Delta,
    MessageStored,
    TokenUpdate,
    TurnDone,
)
from channels_app.consumer_base import EventSocketConsumer  # noqa: E402
from channels_app.protocol import ChatFrame  # noqa: E402
from netaclaw.startup_heap import freeze_startup_heap  # noqa: E402

ANSWER = "ok"  # what the scripted model (``--responder echo``) streams


def _message(position: int, role: str, content: str) -> dict[str, Any]:
    """A stored message's JSON shape (``agents.message_format``), without storing anything."""
    return {
        "id": position,
        "role": role,
        "content": content,
        "position": position,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%S+00:00"),
        "compacted_at": None,
        "compacted_into": None,
        "is_compaction_summary": False,
        "pruned": False,
        "metadata": {},
    }


def _meter(session_id: str, calls: int) -> TokenUpdate:
    return TokenUpdate(
        session_id=session_id,
        input_tokens=12 * calls,
        output_tokens=calls,
        api_calls=calls,
        used_tokens=20 * calls,
        max_tokens=10_000_000,
        threshold_percent=70,
        estimated=calls == 0,
    )


class EchoConsumer(EventSocketConsumer):
    """Accept anyone; answer each chat frame with a NetaClaw turn's events, through the layer."""

    async def connect(self) -> None:
        self.turns = 0
        await self.accept()

    async def disconnect(self, code: int) -> None:
        await self.leave_groups()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        frame = await self.parse_frame(text_data)
        if not isinstance(frame, ChatFrame):
            return
        sid = frame.session_id
        await self.join_group(sid)
        calls = self.turns
        self.turns += 1
        position = 2 * calls + 1
        await apublish(sid, MessageStored(sid, _message(position, "user", frame.content)))
        await apublish(sid, _meter(sid, calls))
        await apublish(sid, Delta(sid, ANSWER))
        await apublish(sid, MessageStored(sid, _message(position + 1, "assistant", ANSWER)))
        await apublish(sid, _meter(sid, calls + 1))
        await apublish(sid, TurnDone(sid))


class DirectEchoConsumer(EventSocketConsumer):
    """The bare echo: ``delta`` and ``turn_done`` straight back, no channel layer."""

    async def connect(self) -> None:
        await self.accept()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        frame = await self.parse_frame(text_data)
        if not isinstance(frame, ChatFrame):
            return
        sid = frame.session_id
        await self.send_event(Delta(sid, ANSWER))
        await self.send_event(TurnDone(sid))


application = ProtocolTypeRouter(
    {
        "websocket": URLRouter(
            [
                path("ws/chat/", EchoConsumer.as_asgi()),
                path("ws/direct/", DirectEchoConsumer.as_asgi()),
            ]
        )
    }
)

# the same process tuning as NetaClaw's entry point (netaclaw/asgi.py), on its own heap
freeze_startup_heap()
