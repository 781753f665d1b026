"""The consumer machinery every chat socket shares (no models here: the load benchmark's echo
yardstick, ``bench/echo_asgi.py``, runs on it without a database).

Channels' ``AsyncConsumer.dispatch`` runs ``close_old_connections`` in the thread-sensitive
executor before *every* handler — one thread hop per client frame and per layer event,
queued behind all the ORM work of the process (the same single thread). Our handlers never
touch the ORM themselves: every query goes through ``database_sync_to_async``, which closes
stale connections around each call, so the extra hop only delayed event delivery under load
(``bench.ws_load``).
"""

from __future__ import annotations

import json
from typing import Any

from channels.consumer import get_handler_name
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from agents.broadcast import session_group
from agents.events import Delta, ErrorEvent, ServerEvent, event_from_layer, events_from_layer
from channels_app.framing import frames, outgoing_limit
from channels_app.protocol import ClientFrame, ProtocolError, parse_client_frame


class EventSocketConsumer(AsyncWebsocketConsumer):
    """Dispatch without the per-message connection check; parse client frames; join
    session groups; send typed events as JSON."""

    joined: frozenset[str] | set[str] = frozenset()  # the session groups this socket is in

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # per session: the turn and the last ``seq`` of its pieces this socket has sent
        self._delta_seen: dict[str, tuple[str, int]] = {}

    async def dispatch(self, message: dict[str, Any]) -> None:
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)

    async def session_event(self, message: dict[str, Any]) -> None:
        """Channel-layer handler for events broadcast to a session's group."""
        await self.send_event(event_from_layer(message))

    async def session_events(self, message: dict[str, Any]) -> None:
        """Channel-layer handler for several events published together
        (``agents.broadcast.apublish``): each its own frame, in order."""
        for event in events_from_layer(message):
            await self.send_event(event)

    async def send_event(self, event: ServerEvent) -> None:
        """``event`` in frames that fit the frame limit (``channels_app.framing``): a frame
        over Daphne's 1 MiB would close the socket. A piece of an answer this socket has
        sent already (a resume replays what may also arrive live) is not sent again."""
        if isinstance(event, Delta) and event.turn_id and not self._first_time(event):
            return
        limit = outgoing_limit(settings.NETACLAW["MAX_FRAME_BYTES"])
        for frame in frames(event, self.encode, limit):
            await self.send(text_data=frame)

    def _first_time(self, delta: Delta) -> bool:
        seen = self._delta_seen.get(delta.session_id)
        if seen is not None and seen[0] == delta.turn_id and delta.seq <= seen[1]:
            return False
        self._delta_seen[delta.session_id] = (delta.turn_id, delta.seq)
        return True

    def encode(self, event: ServerEvent) -> str:
        return json.dumps(event.to_json(), ensure_ascii=False)

    async def parse_frame(self, text_data: str | None) -> ClientFrame | None:
        """The frame, or None once the client has been told what was wrong with it."""
        try:
            return parse_client_frame(text_data, max_bytes=settings.NETACLAW["MAX_FRAME_BYTES"])
        except ProtocolError as exc:
            await self.send_event(ErrorEvent(exc.error, exc.reason, exc.session_id))
            return None

    async def join_group(self, session_id: str) -> None:
        group = session_group(session_id)
        if group not in self.joined:
            await self.channel_layer.group_add(group, self.channel_name)
            self.joined = {*self.joined, group}

    async def leave_group(self, session_id: str) -> None:
        group = session_group(session_id)
        if group in self.joined:
            await self.channel_layer.group_discard(group, self.channel_name)
            self.joined = self.joined - {group}

    async def leave_groups(self) -> None:
        for group in self.joined:
            await self.channel_layer.group_discard(group, self.channel_name)
        self.joined = frozenset()
