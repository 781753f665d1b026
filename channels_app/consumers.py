"""WebSocket consumers: authenticate, check access, validate, hand off to the gateway.

``ChatConsumer`` speaks JSON (CONTRACT §5) at /ws/chat/; ``ChatHtmlConsumer``
sends the same events as HTML fragments for the HTMX chat page at
/ws/chat/html/?session=<id>. Neither holds business logic.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from django.conf import settings
from django.utils import translation

from agents.access import SessionNotFound, session_for_user
from agents.events import ErrorEvent, ServerEvent
from channels_app.auth import RevocableSocket
from channels_app.consumer_base import EventSocketConsumer
from channels_app.gateway import gateway
from channels_app.html_encoder import render_event_html
from channels_app.protocol import ChatFrame, RetryFrame, StopFrame
from chat import control
from chat.turn import accept_chat

logger = logging.getLogger(__name__)

CLOSE_UNAUTHENTICATED = 4401


@database_sync_to_async
def _owned_session_id(user: Any, session_id: str) -> str | None:
    try:
        return str(session_for_user(user=user, session_id=session_id).pk)
    except SessionNotFound:
        return None


class ChatConsumer(RevocableSocket, EventSocketConsumer):
    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        self.user = user
        await self.join_user_group(user)  # closed when the user's access ends
        await self.accept()

    async def disconnect(self, code: int) -> None:
        await self.leave_user_group()
        await self.leave_groups()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        frame = await self.parse_frame(text_data)
        if frame is None:
            return
        if isinstance(frame, ChatFrame):
            # The access check, the store, the session's turn lease and (when it was free)
            # the turn's reads are one trip to the database; else the message is queued.
            accepted = await accept_chat(
                self.user,
                frame.session_id,
                frame.content,
                control.new_holder(control.TURN),
                control.lease_seconds(),
            )
            if accepted is None:
                await self.refuse_session(frame.session_id)
                return
            await self.join_group(accepted.session_id)
            await gateway.submit_chat(accepted, self.send_event)
            return
        if isinstance(frame, StopFrame):
            stop = await control.request_stop(self.user, frame.session_id)
            if stop.session_id is None:
                await self.refuse_session(frame.session_id)
                return
            await self.join_group(stop.session_id)
            if stop.refusal is not None:
                await self.send_event(stop.refusal)
            return
        session_id = await self.join_session(frame.session_id)
        if session_id is None:
            return
        if isinstance(frame, RetryFrame):
            await gateway.submit_retry(session_id=session_id, reply=self.send_event)
            return
        await gateway.submit_compact(
            session_id=session_id, instructions=frame.instructions, reply=self.send_event
        )

    async def session_control(self, message: dict[str, Any]) -> None:
        """Channel-layer handler: a stop for the turn that runs in this process, if it does
        (``chat.control``); nothing is sent to the client."""
        if message.get("action") == "stop":
            control.stop_here(str(message.get("session_id", "")), str(message.get("holder", "")))

    async def join_session(self, raw_session_id: str) -> str | None:
        """Access check through the one gate; unknown and foreign look the same."""
        session_id = await _owned_session_id(self.user, raw_session_id)
        if session_id is None:
            await self.refuse_session(raw_session_id)
            return None
        await self.join_group(session_id)
        return session_id

    async def refuse_session(self, raw_session_id: str) -> None:
        await self.send_event(ErrorEvent("no such session", "unknown_session", raw_session_id[:64]))


class ChatHtmlConsumer(ChatConsumer):
    """The same socket for the HTMX page: one session, events as HTML fragments."""

    async def connect(self) -> None:
        await super().connect()
        if not getattr(self, "user", None):
            return
        query = parse_qs(self.scope.get("query_string", b"").decode("latin1"))
        self.language = _language(self.scope)
        session = (query.get("session") or [""])[0]
        if session:
            await self.join_session(session)

    def encode(self, event: ServerEvent) -> str:
        return render_event_html(event, language=self.language)


def _language(scope: dict[str, Any]) -> str:
    """The page's language: the django_language cookie, else Accept-Language, else default."""
    cookies = scope.get("cookies") or {}
    code = cookies.get(settings.LANGUAGE_COOKIE_NAME)
    supported = {c for c, _ in settings.LANGUAGES}
    if code in supported:
        return code
    for key, value in scope.get("headers", []):
        if key == b"accept-language":
            for part in value.decode("latin1").split(","):
                tag = part.split(";")[0].strip().lower()
                try:
                    found = translation.get_supported_language_variant(tag)
                except LookupError:
                    continue
                if found in supported:
                    return found
    return settings.LANGUAGE_CODE
