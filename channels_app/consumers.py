"""WebSocket consumers: authenticate, check access, validate, hand off to the gateway.

Each parsed client frame goes to its ``on_<type>`` handler (``ChatFrame`` → ``on_chat``),
as Channels sends each ``websocket.receive`` to ``websocket_receive`` and each layer event
to its method; a handler calls one function below the socket.

``ChatConsumer`` speaks JSON (CONTRACT §5) at /ws/chat/; ``ChatHtmlConsumer``
sends the same events as HTML fragments for the HTMX chat page at
/ws/chat/html/?session=<id>. Neither holds business logic.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from django.conf import settings
from django.utils import translation

from agents import replay
from agents.access import SessionNotFound, session_for_user
from agents.broadcast import apublish_to_owner, session_group
from agents.events import Delta, ErrorEvent, MessageStored, ServerEvent, TurnDone
from agents.leases import TURN, lease_seconds, new_holder, stop_here
from agents.selectors import streamed_until
from channels_app import compaction_frames
from channels_app.auth import RevocableSocket
from channels_app.consumer_base import EventSocketConsumer
from channels_app.framing import outgoing_limit
from channels_app.html_encoder import render_event_html, render_stream_html
from channels_app.protocol import (
    BranchFrame,
    ChatFrame,
    CompactFrame,
    EditFrame,
    NewChatFrame,
    PreviewAcceptFrame,
    PreviewDiscardFrame,
    RegenerateFrame,
    ResumeFrame,
    RetryFrame,
    StopFrame,
    UndoFrame,
)
from channels_app.stream_preview import StreamPreview
from chat.branching import BranchAction, accept_branch
from chat.turn import AcceptedChat, accept_chat, accept_new_chat
from runs import runner
from runs.jobs import CompactSpec

logger = logging.getLogger(__name__)

CLOSE_UNAUTHENTICATED = 4401


@database_sync_to_async
def _owned_session_id(user: Any, session_id: str) -> str | None:
    try:
        return str(session_for_user(user=user, session_id=session_id).pk)
    except SessionNotFound:
        return None


class _SessionFrame(Protocol):
    @property
    def session_id(self) -> str: ...


_Frame = TypeVar("_Frame", bound=_SessionFrame)


def _in_session(
    handler: Callable[[ChatConsumer, _Frame, str], Awaitable[None]],
) -> Callable[[ChatConsumer, _Frame], Awaitable[None]]:
    """A frame for a stored session: access through the one gate and the session's group
    joined first (the work's events go there); an unknown or someone else's session is
    refused, and the handler never runs."""

    @functools.wraps(handler)
    async def checked(consumer: ChatConsumer, frame: _Frame) -> None:
        session_id = await consumer.join_session(frame.session_id)
        if session_id is not None:
            await handler(consumer, frame, session_id)

    return checked


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
        """Each client frame, validated (``channels_app.protocol``), to its ``on_<type>``."""
        frame = await self.parse_frame(text_data)
        if frame is not None:
            await getattr(self, f"on_{frame.type}")(frame)

    # --- one handler per frame type ------------------------------------------------------

    async def on_chat(self, frame: ChatFrame) -> None:
        """The access check, the store, the session's turn lease and (when it was free) the
        turn's reads are one trip to the database; else the message is queued.

        The session's group is joined before: a worker may run the turn as soon as its job
        is stored, and its first events must find this socket listening (joined after,
        a first turn under load lost its pieces, or all of it)."""
        if not self._listening(frame.session_id):
            if await self.join_session(frame.session_id) is None:
                return
        accepted = await accept_chat(
            self.user,
            frame.session_id,
            frame.content,
            new_holder(TURN),
            lease_seconds(),
            runner.turn_deferrer(),
            self.channel_name,
            attachments=frame.attachments,
        )
        if accepted is None:
            await self.refuse_session(frame.session_id)
            return
        await self.submit_accepted(accepted)

    async def on_new_chat(self, frame: NewChatFrame) -> None:
        """The first message of a chat not stored yet: the chat is stored with it, under
        an id chosen here so this socket listens to its group before its turn can start."""
        new_id = uuid.uuid4()
        await self.join_group(str(new_id))
        accepted = await accept_new_chat(
            self.user,
            frame.agent_id,
            frame.content,
            new_holder(TURN),
            lease_seconds(),
            runner.turn_deferrer(),
            self.channel_name,
            new_id,
        )
        if accepted is None or not accepted.session_id:
            await self.leave_group(str(new_id))
        if accepted is None:
            await self.send_event(ErrorEvent("no such agent", "unknown_agent"))
            return
        await self.submit_accepted(accepted)

    async def on_stop(self, frame: StopFrame) -> None:
        """Stop the session's turn or compaction, in whichever process runs it."""
        stop = await runner.request_stop(self.user, frame.session_id)
        if stop.session_id is None:
            await self.refuse_session(frame.session_id)
            return
        await self.join_group(stop.session_id)
        if stop.refusal is not None:
            await self.send_event(stop.refusal)

    @_in_session
    async def on_resume(self, frame: ResumeFrame, session_id: str) -> None:
        """The session's group is joined (above); now what the running answer already
        streamed, then the live pieces (the base class drops a piece sent twice)."""
        await self.replay(session_id, frame.after_seq)

    async def replay(self, session_id: str, after_seq: int | None) -> None:
        found = await replay.read(session_id, 0)
        if after_seq is None:  # the page: after what it rendered from the stored answers
            after_seq = await self.stored_cutoff(session_id, found.turn_id)
        for event in replay.events_of(session_id, found, after_seq):
            await self.send_event(event)

    async def stored_cutoff(self, session_id: str, turn_id: str) -> int:
        """A program's resume without ``afterSeq`` starts at the first piece."""
        return 0

    @_in_session
    async def on_retry(self, frame: RetryFrame, session_id: str) -> None:
        await runner.submit_retry(session_id, self.channel_name)

    @_in_session
    async def on_regenerate(self, frame: RegenerateFrame, session_id: str) -> None:
        await self._branch(session_id, BranchAction("regenerate", message_id=frame.message_id))

    @_in_session
    async def on_edit(self, frame: EditFrame, session_id: str) -> None:
        action = BranchAction("edit", message_id=frame.message_id, content=frame.content)
        await self._branch(session_id, action)

    @_in_session
    async def on_branch(self, frame: BranchFrame, session_id: str) -> None:
        action = BranchAction("select", fork_id=frame.fork_id, version=frame.version)
        await self._branch(session_id, action)

    async def _branch(self, session_id: str, action: BranchAction) -> None:
        accepted = await accept_branch(
            self.user,
            session_id,
            action,
            new_holder(TURN),
            lease_seconds(),
            runner.turn_deferrer(),
            self.channel_name,
        )
        if accepted is None:
            await self.refuse_session(session_id)
            return
        await runner.submit_branch(accepted, self.channel_name)

    @_in_session
    async def on_compact(self, frame: CompactFrame, session_id: str) -> None:
        spec = CompactSpec(
            instructions=frame.instructions,
            up_to=frame.up_to,
            preview_for=self.user.pk if frame.preview else None,
        )
        await runner.submit_compact(session_id, spec, self.channel_name)

    @_in_session
    async def on_undo(self, frame: UndoFrame, session_id: str) -> None:
        await self._refused(
            await compaction_frames.undo(self.user, session_id, frame.compaction_id)
        )

    @_in_session
    async def on_preview_accept(self, frame: PreviewAcceptFrame, session_id: str) -> None:
        refusal = await compaction_frames.accept_preview(
            self.user, session_id, frame.preview_id, frame.summary
        )
        await self._refused(refusal)

    @_in_session
    async def on_preview_discard(self, frame: PreviewDiscardFrame, session_id: str) -> None:
        refusal = await compaction_frames.discard_preview(self.user, session_id, frame.preview_id)
        await self._refused(refusal)

    # --- what the handlers share ---------------------------------------------------------

    async def _refused(self, refusal: ErrorEvent | None) -> None:
        """The refusal of a compaction control frame, to this socket (what it changed went
        to the session's group: its events and the token bar)."""
        if refusal is not None:
            await self.send_event(refusal)

    async def submit_accepted(self, accepted: AcceptedChat) -> None:
        """A stored chat message (or one refused before it was stored) on its way; the
        socket that started a chat with it hears of that first, and every page of the
        owner of a chat that took its title from it."""
        if accepted.refusal is not None:
            await self.send_event(accepted.refusal)
            return
        await self.join_group(accepted.session_id)
        if accepted.created is not None:
            await self.send_event(accepted.created)
        if accepted.renamed is not None:
            await apublish_to_owner(self.user.pk, accepted.renamed)
        await runner.submit_chat(accepted, self.channel_name)

    async def session_control(self, message: dict[str, Any]) -> None:
        """Channel-layer handler: a stop for the turn that runs in this process, if it does
        (``chat.control``); nothing is sent to the client."""
        if message.get("action") == "stop":
            stop_here(str(message.get("session_id", "")), str(message.get("holder", "")))

    def _listening(self, raw_session_id: str) -> bool:
        try:
            return session_group(raw_session_id) in self.joined
        except ValueError:  # not an id: the gate refuses it
            return False

    async def join_session(self, raw_session_id: str) -> str | None:
        """Access check through the one gate; unknown and foreign look the same."""
        session_id = await _owned_session_id(self.user, raw_session_id)
        if session_id is None:
            await self.refuse_session(raw_session_id)
            return None
        await self.join_group(session_id)
        return session_id

    async def refuse_session(self, raw_session_id: str) -> None:
        await self.send_event(compaction_frames.unknown_session(raw_session_id))


class ChatHtmlConsumer(ChatConsumer):
    """The same socket for the HTMX page: one session, events as HTML fragments."""

    view = "compacted"  # the history view of the page (``?view=full``): its switches' state

    async def connect(self) -> None:
        await super().connect()
        if not getattr(self, "user", None):
            return
        query = parse_qs(self.scope.get("query_string", b"").decode("latin1"))
        self.language = _language(self.scope)
        self.view = "full" if (query.get("view") or [""])[0] == "full" else "compacted"
        session = (query.get("session") or [""])[0]
        if session:  # the page resumes on every (re)connect: its running answer, whole
            session_id = await self.join_session(session)
            if session_id is not None:
                await self.replay(session_id, None)

    async def stored_cutoff(self, session_id: str, turn_id: str) -> int:
        """The page shows the stored answers already: the pieces after them."""
        if not turn_id:
            return 0
        return await database_sync_to_async(streamed_until)(session_id=session_id, turn_id=turn_id)

    def encode(self, event: ServerEvent) -> str:
        return render_event_html(event, language=self.language, view=self.view)

    # --- the streamed answer, as Markdown (channels_app.stream_preview) ------------------

    preview: StreamPreview | None = None
    _preview_timer: asyncio.TimerHandle | None = None
    _preview_task: asyncio.Task[None] | None = None

    async def send_event(self, event: ServerEvent) -> None:
        if isinstance(event, Delta):
            if not event.turn_id or self._first_time(event):
                await self._stream(event)
            return
        if _ends_stream(event):
            self._end_stream()
        await super().send_event(event)

    async def disconnect(self, code: int) -> None:
        self._end_stream()
        await super().disconnect(code)

    async def _stream(self, event: Delta) -> None:
        if self.preview is None:
            self.preview = StreamPreview()
        loop = asyncio.get_running_loop()
        action = self.preview.add(event.text, loop.time())
        if action == "render":
            await self._send_preview(self.preview.generation)
        elif action == "later":
            delay = self.preview.due_in(loop.time())
            self._preview_timer = loop.call_later(delay, self._preview_due, self.preview.generation)
        elif action == "plain":
            await self._send_plain()
        elif action == "append":
            await super().send_event(event)

    def _preview_due(self, generation: int) -> None:
        self._preview_timer = None
        self._preview_task = asyncio.ensure_future(self._send_preview(generation))

    async def _send_preview(self, generation: int) -> None:
        """The whole answer so far, rendered; nothing once it was stored (``generation``)."""
        preview = self.preview
        if preview is None or preview.generation != generation or preview.plain:
            return
        loop = asyncio.get_running_loop()
        started = loop.time()
        html = render_stream_html(preview.text, language=self.language)
        preview.rendered(started, loop.time())
        limit = outgoing_limit(settings.NETACLAW["MAX_FRAME_BYTES"])
        if len(html.encode("utf-8", "surrogatepass")) > limit:
            preview.plain = True
            await self._send_plain()
            return
        await self.send(text_data=html)

    async def _send_plain(self) -> None:
        if self.preview is not None:
            text = self.preview.text
            await self.send(text_data=render_stream_html(text, language=self.language, plain=True))

    def _end_stream(self) -> None:
        if self._preview_timer is not None:
            self._preview_timer.cancel()
            self._preview_timer = None
        if self.preview is not None:
            self.preview.reset()


def _ends_stream(event: ServerEvent) -> bool:
    """The answer that streamed was stored (as the page's encoder empties the stream for
    it), or the turn ended."""
    if isinstance(event, MessageStored):
        return event.message.get("role") in {"assistant", "system"}
    return isinstance(event, TurnDone | ErrorEvent)


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
