"""A completion's turn as it runs: the session's events, heard on a channel of the
request's own, made into the answer's text and its end.

The request joins the session's group (``agents.broadcast.session_group``) before its
turn can publish anything, so it hears every event of the turn from whichever process runs
it — the web process itself (the in-process runner) or a worker — and never reads the
database in a loop. ``AnswerText`` is pure: events in, text pieces and the end out.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Coroutine
from dataclasses import dataclass
from typing import Any

from channels.layers import BaseChannelLayer, get_channel_layer

from agents.broadcast import session_group
from agents.events import (
    Delta,
    ErrorEvent,
    MessageStored,
    ServerEvent,
    TurnDone,
    event_from_layer,
    events_from_layer,
)
from agents.reasons import wire_text
from web.openai_wire import STEP_SEPARATOR, OpenAIError, error_for_reason

logger = logging.getLogger(__name__)

# A comment line goes out this often while the turn is silent (a tool, a compaction), so
# proxies keep the stream open; and a turn silent for IDLE_SECONDS is given up (it may
# still run: its chat shows it).
KEEPALIVE_SECONDS = 15.0
IDLE_SECONDS = 900.0
JOIN_SECONDS = 10.0  # joining the session's group (one Redis round trip)


@dataclass(frozen=True, slots=True)
class TurnEnd:
    """How the turn ended: answered (``finish_reason``) or with ``error``."""

    finish_reason: str = "stop"  # "stop", or "length" at the agent's step limit
    error: OpenAIError | None = None


class AnswerText:
    """The turn's events as the answer: its text as it streams (each model step's text,
    steps joined by ``STEP_SEPARATOR``), then how it ended.

    The first turn after the request's message is its own (the request took the session's
    lease with it); a piece heard twice is dropped by its ``seq``."""

    def __init__(self) -> None:
        self.turn_id = ""
        self.parts: list[str] = []
        self.end: TurnEnd | None = None
        self._seq = 0
        self._step_ended = False  # a step with tool calls was stored after some text
        self._finish = "stop"
        self._failure: OpenAIError | None = None

    @property
    def content(self) -> str:
        return "".join(self.parts)

    def take(self, event: ServerEvent) -> str:
        """The text ``event`` adds to the answer ("" for none); ``end`` is set by the one
        that ends the turn."""
        if self.end is not None:
            return ""
        if isinstance(event, Delta):
            return self._delta(event)
        if isinstance(event, MessageStored):
            message = event.message
            if message.get("role") == "assistant" and message.get("tool_calls") and self.parts:
                self._step_ended = True
        elif isinstance(event, ErrorEvent):
            self._error(event)
        elif isinstance(event, TurnDone):
            self._done(event)
        return ""

    def give_up(self, seconds: float) -> None:
        """Nothing was heard of the turn for ``seconds``."""
        message = f"the agent's turn sent nothing for {int(seconds)} s; its chat shows it"
        self.end = TurnEnd(error=OpenAIError(504, "timeout", message))

    def _delta(self, event: Delta) -> str:
        if event.turn_id:
            if self.turn_id and event.turn_id != self.turn_id:
                return ""
            self.turn_id = event.turn_id
            if event.seq and event.seq <= self._seq:
                return ""
            self._seq = event.seq or self._seq
        if not event.text:
            return ""
        piece = (STEP_SEPARATOR if self._step_ended else "") + event.text
        self._step_ended = False
        self.parts.append(piece)
        return piece

    def _error(self, event: ErrorEvent) -> None:
        if event.reason == "step_limit":  # the turn ends at its step limit, answered so far
            self._finish = "length"
            return
        failure = error_for_reason(event.reason, event.error)
        if event.recorded:  # a failed turn's record: turn_done follows
            self._failure = failure
        else:  # refused, or the turn's job failed before it ran: nothing follows
            self.end = TurnEnd(error=failure)

    def _done(self, event: TurnDone) -> None:
        self.turn_id = self.turn_id or event.turn_id
        if event.interrupted:
            failure = error_for_reason("interrupted", wire_text("interrupted"))
            self.end = TurnEnd(error=failure)
        else:
            self.end = TurnEnd(self._finish, self._failure)


class SessionEvents:
    """A channel of the request's own in one session's group, left when it is closed."""

    def __init__(self, layer: BaseChannelLayer, channel: str) -> None:
        self.layer = layer
        self.channel = channel
        self.group = ""
        self._loop = asyncio.get_running_loop()  # the request's, where the layer lives
        # the receive in flight: a timeout leaves it waiting rather than cutting it off
        self._receiving: asyncio.Task[dict[str, Any]] | None = None

    @classmethod
    async def open(cls) -> SessionEvents:
        layer = get_channel_layer()
        if layer is None:
            raise RuntimeError("the OpenAI-compatible API needs a channel layer")
        return cls(layer, await layer.new_channel())

    def join(self, session_id: str) -> None:
        """From the database thread that stores the message (``openai_chats.start_turn``),
        before its transaction commits: on the request's event loop, waited for. A plain
        hop, not asgiref's ``async_to_sync``, whose context (its thread executor) would
        flow back into the request and on into the turn the request starts."""
        group = session_group(session_id)
        if group == self.group:
            return
        if self.group:  # an earlier try's chat (the request tries again when it is busy)
            self._hop(self.layer.group_discard(self.group, self.channel))
            self.group = ""
        self._hop(self.layer.group_add(group, self.channel))
        self.group = group

    def _hop(self, work: Coroutine[Any, Any, None]) -> None:
        asyncio.run_coroutine_threadsafe(work, self._loop).result(timeout=JOIN_SECONDS)

    async def close(self) -> None:
        if self._receiving is not None:
            self._receiving.cancel()
            self._receiving = None
        if self.group:
            group, self.group = self.group, ""
            try:
                await self.layer.group_discard(group, self.channel)
            except Exception:
                logger.warning("could not leave %s", group, exc_info=True)

    async def receive(self, wait: float) -> list[ServerEvent] | None:
        """The events of the next layer message on the channel (None: none in ``wait`` s)."""
        while True:
            if self._receiving is None:
                self._receiving = asyncio.ensure_future(self.layer.receive(self.channel))
            done, _ = await asyncio.wait({self._receiving}, timeout=wait)
            if not done:
                return None
            message, self._receiving = self._receiving.result(), None
            kind = message.get("type")
            if kind == "session.event":
                return [event_from_layer(message)]
            if kind == "session.events":
                return events_from_layer(message)
            # a stop for the turn's holder (``session.control``): not for a listener


async def answer_pieces(
    events: SessionEvents,
    text: AnswerText,
    *,
    keepalive: float = KEEPALIVE_SECONDS,
    idle: float = IDLE_SECONDS,
) -> AsyncIterator[str | None]:
    """The answer's text pieces as the turn streams them, until it ends (``text.end``);
    None every ``keepalive`` seconds of silence."""
    silent = 0.0
    while text.end is None:
        batch = await events.receive(keepalive)
        if batch is None:
            silent += keepalive
            if silent >= idle:
                text.give_up(silent)
                return
            yield None
            continue
        silent = 0.0
        for event in batch:
            piece = text.take(event)
            if piece:
                yield piece
            if text.end is not None:
                return
