"""One chat turn, end to end (the seed's handleChat, §2).

Store the user's message, read the session once, compact first when automatic compaction
is due, run the ReAct loop (compacting between its steps when the context fills up), store
what it produces and publish every event to the session's group. The socket layer only
decides *when* a turn runs: under the session's turn lease (``chat.control``), so one at a
time across every process; a message sent meanwhile is stored queued and released by the
next turn. ORM work is sync and runs through ``database_sync_to_async``; the model call is
async.

A turn ends in one of four ways: answered; failed (a record with the reason and the
channel to check, which ``retry`` runs again — the provider's "context too long" first
gets one compaction and one more try); stopped (the partial answer stored marked
``stopped``, every tool call without a result given one, ``turn_done`` with ``stopped``);
or refused before the model is called.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.db import DatabaseError, transaction

from agents import runtime, services
from agents.access import SessionNotFound, agent_for_user, session_for_user
from agents.attachments import Attachment, AttachmentRefused, attachments_found
from agents.broadcast import apublish
from agents.event_records import EventRecord
from agents.events import (
    CompactionSuggested,
    Delta,
    ErrorEvent,
    MessageStored,
    ServerEvent,
    SessionCreated,
    SessionUpdated,
    TokenUpdate,
    TurnDone,
)
from agents.leases import SessionLease
from agents.llm_channels import channel_config
from agents.message_format import message_to_json
from agents.meter import (
    VisibleTokens,
    context_reading,
    context_window,
    meter_read,
    system_prompt_tokens,
    visible_tokens,
    visible_tokens_of,
)
from agents.models import SYSTEM_TYPE_TURN, ChatSession, Role
from agents.reasons import TurnFailure, wire_text
from agents.selectors import llm_history_load, model_visible, retryable_turn_event
from agents.tools import TodoStore, ToolRegistry
from agents.tools.catalog import turn_registry
from chat.interruption import record_interruption
from compaction import background
from compaction.context import llm_context_for_session
from compaction.request import CompactionRequest
from compaction.run import acompact
from compaction.trigger import auto_compaction_due, compaction_suggest
from condense.types import Message, ToolCall, tool_calls_to_json
from llm import ToolSpec, get_provider

logger = logging.getLogger(__name__)

# The longest delta sent: a frame of it always fits the socket's limit (256 KiB by default).
MAX_DELTA_CHARS = 16_000

# The result a tool call gets when a stop ended the turn before its own (the model reads it).
STOPPED_TOOL_RESULT = "Stopped by the user before this tool call finished; it may have run in part."


@dataclass(frozen=True, slots=True)
class AcceptedChat:
    """A user's message, stored. ``holder``: it took the session's turn lease, so its turn
    starts now (``prepared`` was read in the same trip, ``messages`` are the ones released
    into the history, this one last); else it is queued (``messages``: it, marked so)."""

    session_id: str
    messages: tuple[dict[str, Any], ...]
    holder: str = ""
    prepared: PreparedTurn | None = None
    created: SessionCreated | None = None  # the chat was started by this message
    renamed: SessionUpdated | None = None  # the chat took its title from this message
    # the agent cannot answer (no model channel…): refused, nothing stored, nothing to run
    refusal: ErrorEvent | None = None


@dataclass(frozen=True, slots=True)
class PreparedTurn:
    """Everything a turn needs before the model call, read in one trip to the database."""

    session: ChatSession
    refusal: ErrorEvent | None = None
    meter: TokenUpdate | None = None  # the reading before the model call
    compact_first: bool = False  # over the threshold: compact, then read again
    messages: tuple[Message, ...] = ()  # the model's context (empty when compact_first)
    todos: tuple[dict[str, Any], ...] = field(default=())
    # the meter's figures over the visible history, which the turn keeps as it stores
    visible: VisibleTokens | None = None
    # mode ``ask`` at the threshold: the page asks whether to compact (issue 17)
    suggestion: CompactionSuggested | None = None

    @property
    def session_id(self) -> str:
        return str(self.session.pk)


def _load_session(session_id: str) -> ChatSession:
    return ChatSession.objects.select_related(
        "model_channel", "agent__model_channel", "agent__auxiliary_model_channel"
    ).get(pk=session_id)


def turn_refusal(session: ChatSession) -> ErrorEvent | None:
    """Why the model may not be called for this session, if it may not."""
    agent, session_id = session.agent, str(session.pk)
    channel = session.channel
    if channel is None or not channel.enabled:
        return ErrorEvent(wire_text("no_model_channel"), "no_model_channel", session_id)
    threshold = context_window(channel) * agent.compaction_threshold_percent // 100
    if system_prompt_tokens(agent.system_prompt) >= threshold:
        reason = "system_prompt_too_long"
        return ErrorEvent(wire_text(reason), reason, session_id)
    return None


def _prepare(session: ChatSession) -> PreparedTurn:
    """Decide whether the model may be called now, and with what: one read of the visible
    history serves the meter, the trigger and the context."""
    refusal = turn_refusal(session)
    if refusal is not None:
        return PreparedTurn(session, refusal)
    stored = llm_history_load(session=session)
    visible = visible_tokens_of(session, stored)
    reading = context_reading(session=session, visible=visible)
    compact_first = auto_compaction_due(session=session, reading=reading, visible_count=len(stored))
    suggestion = compaction_suggest(session=session, reading=reading, visible_count=len(stored))
    return PreparedTurn(
        session,
        meter=TokenUpdate.of(str(session.pk), reading),
        compact_first=compact_first,
        messages=() if compact_first else tuple(llm_context_for_session(session, stored)),
        todos=tuple(session.todos or ()),
        visible=visible,
        suggestion=suggestion,
    )


def _json(messages: list[Any]) -> tuple[dict[str, Any], ...]:
    return tuple(message_to_json(m, view="compacted") for m in messages)


# The worker runner's hook (``runs``): store the job that answers a message taken with the
# lease, in the message's transaction — (session id, lease holder, the socket to reply to).
DeferTurn = Callable[[str, str, str], None]


def _accept_chat(
    user: Any,
    raw_session_id: str,
    content: str,
    holder: str,
    seconds: float,
    defer: DeferTurn | None = None,
    reply_to: str = "",
    queue: bool = True,
    attachments: Sequence[str] = (),
) -> AcceptedChat | None:
    """The access check (the one gate), the store and, when no turn runs in the session,
    the session's lease for ``holder``, the release of what was queued and the turn's
    reads (or, with ``defer``, the job that will read and run it, in the same transaction):
    one trip to the database. None: not this user's session.

    While another turn (or a compaction) holds the lease the message is stored queued —
    durable at once, in no history view until a turn starts; then the lease is tried once
    more, since its holder may have ended and looked for queued messages just before this
    one was stored. ``queue=False`` refuses it instead (``turn_in_progress``, nothing
    stored): a caller that answers "busy" itself, as the OpenAI-compatible API does.
    ``attachments``: the paths of files uploaded to the chat's workspace that the message
    carries (``agents.attachments``; one that is not there refuses the message)."""
    try:
        session = session_for_user(user=user, session_id=raw_session_id)
    except SessionNotFound:
        return None
    sid = str(session.pk)
    refusal = turn_refusal(session)
    if refusal is not None:  # stored, it would wait to be sent beside the next message
        return AcceptedChat(sid, (), refusal=refusal)
    files = _attached(session, attachments)
    if isinstance(files, ErrorEvent):
        return AcceptedChat(sid, (), refusal=files)
    touch = services.session_touch(session=session, content=content)
    with transaction.atomic():
        if services.lease_acquire(
            session_id=session.pk, holder=holder, seconds=seconds, also=touch
        ):
            renamed = services.session_touched(session=session, changes=touch)
            released = services.turn_start(session=session)
            stored = services.user_message_append(
                session=session, content=content, touched=True, attachments=files
            )
            started = turn_started(session, holder, defer, reply_to)
            return AcceptedChat(sid, _json([*released, stored]), holder, started, renamed=renamed)
    if not queue:
        busy = ErrorEvent(wire_text("turn_in_progress"), "turn_in_progress", sid)
        return AcceptedChat(sid, (), refusal=busy)
    queued = services.user_message_append(
        session=session, content=content, queued=True, touched=True, attachments=files
    )
    renamed = services.session_touch_save(session=session, content=content)
    with transaction.atomic():
        if services.lease_acquire(session_id=session.pk, holder=holder, seconds=seconds):
            released = services.turn_start(session=session)
            started = turn_started(session, holder, defer, reply_to)
            return AcceptedChat(sid, _json(released), holder, started, renamed=renamed)
    return AcceptedChat(sid, _json([queued]), renamed=renamed)


def _attached(session: ChatSession, paths: Sequence[str]) -> list[Attachment] | ErrorEvent:
    """The files a message names, or why it is refused (nothing is stored then)."""
    try:
        return attachments_found(session=session, paths=paths) if paths else []
    except AttachmentRefused as refused:
        text = wire_text(refused.reason, refused.detail)
        return ErrorEvent(text, refused.reason, str(session.pk))


def turn_started(
    session: ChatSession, holder: str, defer: DeferTurn | None, reply_to: str
) -> PreparedTurn | None:
    """A turn taken with the message: its reads here, or its job stored (``defer``)."""
    if defer is None:
        return _prepare(session)
    defer(str(session.pk), holder, reply_to)
    return None


accept_chat = database_sync_to_async(_accept_chat)
# The same in the caller's thread, inside its transaction (a caller that stores the chat
# the message goes to in that transaction too: the OpenAI-compatible API's new chats).
accept_chat_in_transaction = _accept_chat


def _accept_new_chat(
    user: Any,
    agent_id: int,
    content: str,
    holder: str,
    seconds: float,
    defer: DeferTurn | None = None,
    reply_to: str = "",
    session_id: uuid.UUID | None = None,
) -> AcceptedChat | None:
    """The first message of a new chat with one of the user's agents: the chat and the
    message are stored together (New chat stores nothing before it), its lease is
    ``holder``'s and its turn's reads are done (or its job stored). None: not an agent of
    this user's. ``session_id``: the new chat's id, chosen by the caller."""
    try:
        agent = agent_for_user(user=user, agent_id=agent_id)
    except LookupError:
        return None
    refusal = turn_refusal(ChatSession(owner=user, agent=agent))
    if refusal is not None:  # of a chat that does not exist: no sessionId
        return AcceptedChat("", (), refusal=replace(refusal, session_id=None))
    with transaction.atomic():
        session, stored = services.session_start(
            owner=user,
            agent=agent,
            content=content,
            holder=holder,
            lease_seconds=seconds,
            session_id=session_id,
        )
        started = turn_started(session, holder, defer, reply_to)
    sid = str(session.pk)
    created = SessionCreated(sid, agent.pk, session.title, agent.name)
    return AcceptedChat(sid, _json([stored]), holder, started, created=created)


accept_new_chat = database_sync_to_async(_accept_new_chat)


@database_sync_to_async
def start_queued_turn(
    session_id: str,
) -> tuple[tuple[dict[str, Any], ...], PreparedTurn | None]:
    """Under a newly taken lease: release the queued messages and read the turn that
    answers them (None when nothing was queued any more)."""
    session = _load_session(session_id)
    released = services.turn_start(session=session)
    if not released:
        return (), None
    return _json(released), _prepare(session)


@database_sync_to_async
def prepare_now(session_id: str) -> PreparedTurn:
    """Under a lease taken with the message by another process (which released what was
    queued and stored the message): the turn that answers the history as it is."""
    session = _load_session(session_id)
    services.turn_start(session=session, release_queued=False)
    return _prepare(session)


@database_sync_to_async
def prepare_retry(session_id: str) -> PreparedTurn | None:
    """Under a newly taken lease: the turn that runs the last failed or stopped turn again,
    with the history as it is (None when there is none to retry)."""
    session = _load_session(session_id)
    services.turn_start(session=session, release_queued=False)
    if retryable_turn_event(session=session) is None:
        return None
    return _prepare(session)


@dataclass(frozen=True, slots=True)
class AfterCompaction:
    """The session (its counters changed), the meter and the context, read again."""

    session: ChatSession
    meter: TokenUpdate
    context: tuple[Message, ...]
    visible: VisibleTokens


@database_sync_to_async
def _read_after_compaction(session_id: str) -> AfterCompaction:
    session = _load_session(session_id)
    visible = visible_tokens(session)
    reading = context_reading(session=session, visible=visible)
    context = tuple(llm_context_for_session(session))
    return AfterCompaction(session, TokenUpdate.of(session_id, reading), context, visible)


@dataclass(frozen=True, slots=True)
class StepCheck:
    """What the database says between two model calls of one turn."""

    compaction_due: bool = False  # mode auto, at the threshold
    stop: bool = False  # a stop asked this turn to end
    suggestion: CompactionSuggested | None = None  # mode ask, first time at the threshold


@database_sync_to_async
def _between_steps(session_id: str, holder: str, visible: VisibleTokens | None) -> StepCheck:
    """Read together, once per step; ``visible``: the turn's own figures (else the meter
    asks the database). A long tool loop can cross the threshold mid-turn: mode ``ask``
    says so then, not only at the next user message."""
    session = _load_session(session_id)
    if holder and session.lease_stop_holder == holder:
        return StepCheck(stop=True)
    reading = meter_read(session=session, visible=visible)
    if background.preparation_due(session=session, reading=reading):
        background.start(session_id)  # the summary is ready by the threshold, or nearer
    if not reading.over_threshold:
        return StepCheck()
    visible_count = model_visible(session=session).count()
    return StepCheck(
        compaction_due=auto_compaction_due(
            session=session, reading=reading, visible_count=visible_count
        ),
        suggestion=compaction_suggest(
            session=session, reading=reading, visible_count=visible_count
        ),
    )


@database_sync_to_async
def _maybe_prepare(session: ChatSession, visible: VisibleTokens) -> None:
    reading = meter_read(session=session, visible=visible)
    if background.preparation_due(session=session, reading=reading):
        background.start(str(session.pk))


@database_sync_to_async
def _store_answer(
    session: ChatSession,
    event: runtime.AssistantMessage,
    visible: VisibleTokens | None,
    tools: tuple[ToolSpec, ...],
    streamed: dict[str, Any],
) -> tuple[list[ServerEvent], VisibleTokens | None]:
    """The assistant's message with the provider's usage, and the meter after it (from the
    turn's figures and the stored row: no query; ``tools``: the ones the turn sends, for
    the breakdown). ``streamed``: the turn and the last ``seq`` its text streamed as, so a
    page that resumes knows which pieces it already has stored."""
    usage = event.usage
    metadata = streamed if event.cut_at is None else {**streamed, "cutAt": event.cut_at}
    stored = services.message_append(
        session=session,
        role=Role.ASSISTANT,
        content=event.content,
        tool_calls=tool_calls_to_json(event.tool_calls),
        metadata=metadata,
        input_tokens=usage.input_tokens if usage else None,
        output_tokens=usage.output_tokens if usage else None,
        record_usage=usage is not None,
    )
    session_id = str(session.pk)
    events: list[ServerEvent] = [MessageStored(session_id, message_to_json(stored))]
    if visible is not None:
        visible = visible.after(stored, reported=usage is not None)
    if usage is not None:
        reading = meter_read(session=session, visible=visible, tools=tools)
        events.append(TokenUpdate.of(session_id, reading))
    return events, visible


@database_sync_to_async
def _store_tool_result(
    session: ChatSession, event: runtime.ToolResult, visible: VisibleTokens | None
) -> tuple[MessageStored, VisibleTokens | None]:
    stored = services.message_append(
        session=session,
        role=Role.TOOL,
        content=event.content,
        tool_call_id=event.call_id,
        metadata={"toolName": event.name, "isError": event.is_error},
    )
    tally = visible.after(stored) if visible is not None else None
    return MessageStored(str(session.pk), message_to_json(stored)), tally


@database_sync_to_async
def _store_stopped(
    session: ChatSession, partial: str, open_calls: list[ToolCall]
) -> list[dict[str, Any]]:
    """After a stop: the partial answer (marked stopped), a result for every tool call that
    had none (so each call keeps its result), and the record of the stopped turn."""
    stored = []
    if partial.strip():
        stored.append(
            services.message_append(
                session=session, role=Role.ASSISTANT, content=partial, metadata={"stopped": True}
            )
        )
    for call in open_calls:
        stored.append(
            services.message_append(
                session=session,
                role=Role.TOOL,
                content=STOPPED_TOOL_RESULT,
                tool_call_id=call.id,
                metadata={"toolName": call.name, "isError": True, "stopped": True},
            )
        )
    record = services.turn_event_append(
        session=session,
        record=EventRecord(
            SYSTEM_TYPE_TURN, "stopped", reason="stopped", error=wire_text("stopped")
        ),
    )
    return [message_to_json(m) for m in [*stored, record]]


@database_sync_to_async
def _store_interrupted(
    session: ChatSession, attempt: int, open_calls: list[ToolCall]
) -> list[dict[str, Any]]:
    return record_interruption(session, attempt=attempt, open_calls=open_calls)


@database_sync_to_async
def _store_failure(
    session: ChatSession, failure: runtime.RunFailed
) -> tuple[dict[str, Any], TurnFailure, str]:
    """The record of a failed turn: its reason, the provider's status and words (never an
    exception's class name) and the model channel to check."""
    channel = session.channel
    found = TurnFailure.of(
        failure.reason,
        failure.message,
        channel=channel.name if channel else "",
        model=channel.model if channel else "",
    )
    error = found.wire_text()
    record = services.turn_event_append(
        session=session,
        record=EventRecord(
            SYSTEM_TYPE_TURN,
            "failed",
            reason=found.reason,
            error=error,
            http_status=found.status,
            detail=found.detail,
            channel=found.channel,
            model=found.model,
        ),
    )
    return message_to_json(record), found, error


@database_sync_to_async
def _save_todos(session: ChatSession, items: list[dict[str, Any]]) -> None:
    services.session_todos_save(session=session, todos=items)


class TurnStopped(Exception):
    """Raised out of the turn's own steps once a stop was asked for while it was storing or
    publishing (a step is never cut in the middle of a write)."""


class ChatTurn:
    """Runs one turn of one session under its turn ``lease`` (``chat.control``); its methods
    are the turn's steps, in order.

    The lease's stop signal ends the turn; a stop flagged in the database for its holder is
    read between steps."""

    def __init__(
        self,
        prepared: PreparedTurn,
        lease: SessionLease,
        opening: tuple[ServerEvent, ...] = (),
        attempt: int = 0,
    ) -> None:
        self.prepared = prepared
        self.opening = opening  # the messages it answers, published with its first events
        self.session = prepared.session
        self.session_id = prepared.session_id
        self.lease = lease
        self.stop = lease.stop
        self.holder = lease.holder
        self.auto_compaction_failed = False
        self.failure: runtime.RunFailed | None = None
        self.stopped = False
        self.interrupted = False  # its runner stopped it (``chat.interruption``)
        self.attempt = attempt  # how many times it was run again after an interruption
        self.answered = False  # the last stored answer had no tool calls: the turn is done
        self.todos = TodoStore(items=[dict(t) for t in prepared.todos])
        self.tool_specs: tuple[ToolSpec, ...] = ()  # the tools the model was given
        self.visible = prepared.visible
        self._partial: list[str] = []  # text streamed since the last stored answer
        self.turn_id = uuid.uuid4().hex  # CONTRACT §8: its deltas' ``turnId`` …
        self.seq = 0  # … and the ``seq`` of the last one
        self._open_calls: dict[str, ToolCall] = {}  # calls of the last answer, no result yet
        self._writing = 0  # inside a store or a publish: a stop waits for it to end
        # the final answer's events, published with ``turn_done`` (one layer message)
        self._closing: list[ServerEvent] = []

    async def run(self) -> None:
        prepared = self.prepared
        sid = self.session_id
        if prepared.refusal is not None:
            await apublish(
                sid, *self.opening, prepared.refusal, TurnDone(sid, turn_id=self.turn_id)
            )
            return
        body = asyncio.ensure_future(self._body())
        stop = asyncio.ensure_future(self.stop.wait())
        try:
            await asyncio.wait({body, stop}, return_when=asyncio.FIRST_COMPLETED)
            if not body.done():  # stopped: cut the model's stream or the tool call now,
                if not self._writing:  # or let the write in progress end (TurnStopped)
                    body.cancel()
                await asyncio.wait({body})
        finally:
            stop.cancel()
            if not body.done():  # this task itself was cancelled
                body.cancel()
        self._settle(body)
        closing = [*self.opening, *self._closing]  # the opening, if the body never sent it
        try:
            closing += await self._record_ending()
            await self._prepare_next_compaction()  # before the end: the lease goes after it
        except DatabaseError:  # an outage: the turn still ends for every socket watching
            logger.exception("the end of a turn of session %s could not be stored", sid)
            closing.append(ErrorEvent(wire_text("storage_error"), "storage_error", sid))
        done = TurnDone(
            sid,
            stopped=self.stopped and not self.interrupted,
            turn_id=self.turn_id,
            interrupted=self.interrupted,
        )
        await apublish(sid, *closing, done)

    async def _record_ending(self) -> list[ServerEvent]:
        """What the turn's end stores: an interruption, a stop or a failure, and the todos."""
        sid = self.session_id
        events: list[ServerEvent] = []
        if self.stopped and self.stop.interrupted:  # the runner's stop, not the user's
            self.interrupted = True
            calls = list(self._open_calls.values())
            for message in await _store_interrupted(self.session, self.attempt, calls):
                events.append(MessageStored(sid, message))
        elif self.stopped:
            partial = "".join(self._partial)
            calls = list(self._open_calls.values())
            for message in await _store_stopped(self.session, partial, calls):
                events.append(MessageStored(sid, message))
        elif self.failure is not None:
            record, found, error = await _store_failure(self.session, self.failure)
            events.append(MessageStored(sid, record))
            events.append(ErrorEvent(error, found.reason, sid, recorded=True))
        if list(self.todos.items) != list(self.prepared.todos):
            await _save_todos(self.session, list(self.todos.items))
        return events

    async def _prepare_next_compaction(self) -> None:
        """Past the soft threshold, the next compaction's summary is written while the
        user reads and types (``compaction.background``)."""
        if self.visible is not None and self.failure is None:
            await _maybe_prepare(self.session, self.visible)

    def _settle(self, body: asyncio.Future[None]) -> None:
        """How the turn's body ended: stopped, failed or answered."""
        if body.cancelled() or isinstance(body.exception(), TurnStopped):
            self.stopped = True
        elif body.exception() is not None:
            logger.error(
                "chat turn of session %s failed", self.session_id, exc_info=body.exception()
            )
            self.failure = runtime.RunFailed("internal_error", wire_text("internal_error"))
        if self.stopped and self.answered and not self._open_calls and not self._partial:
            self.stopped = False  # the stop came after the last word: nothing was cut

    @contextlib.asynccontextmanager
    async def _writes(self) -> AsyncIterator[None]:
        """A store or a publish, never cut by a stop; the stop takes effect after it."""
        self._writing += 1
        try:
            yield
        finally:
            self._writing -= 1
        if self.stop.requested and not self._writing and not self.answered:
            raise TurnStopped

    async def _body(self) -> None:
        prepared = self.prepared
        meter, messages = prepared.meter, prepared.messages
        if prepared.compact_first:
            await self._publish_opening()
            await acompact(CompactionRequest(self.session_id, reason="auto"), lease=self.lease)
            after = await _read_after_compaction(self.session_id)
            self.session, self.visible = after.session, after.visible
            meter, messages = after.meter, after.context
        first = (meter, prepared.suggestion)
        await self._publish_opening(*(event for event in first if event is not None))
        await self._run_agent(list(messages))
        failure = self.failure
        if failure is not None and failure.reason == "context_too_long":
            await self._compact_and_run_again(failure)

    async def _publish_opening(self, *events: ServerEvent) -> None:
        """The messages the turn answers and its first ``events`` (the meter), together."""
        opening, self.opening = self.opening, ()
        if opening or events:
            async with self._writes():
                await apublish(self.session_id, *opening, *events)

    def _tools(self) -> ToolRegistry:
        registry = turn_registry(self.session, self.todos)
        self.tool_specs = registry.specs
        return registry

    async def _run_agent(self, messages: list[Message]) -> None:
        channel = self.session.channel
        assert channel is not None  # a turn without a channel is refused above
        await runtime.run_agent(
            provider=get_provider(channel_config(channel)),
            messages=messages,
            tools=self._tools(),
            on_event=self.on_runtime_event,
            max_tokens=max(256, min(4096, context_window(channel) // 4)),
            before_step=self.before_step,
            max_answer_chars=settings.NETACLAW["MAX_ANSWER_CHARS"],
        )

    async def _compact_and_run_again(self, failure: runtime.RunFailed) -> None:
        """The provider said the context is too long for it: compact (whatever our own
        estimate says) and run the turn once more; a second refusal fails the turn."""
        self.failure = None
        outcome = await acompact(
            CompactionRequest(self.session_id, reason="auto", force=True), lease=self.lease
        )
        messages = await self._after_compaction()
        if outcome.status != "done":
            self.failure = failure
            return
        await self._run_agent(list(messages))

    async def before_step(self, messages: list[Message]) -> list[Message]:
        """Between two model calls of one turn: end here when a stop reached the turn's
        holder in the database; compact when the context has filled up (once per turn if
        it fails, so a failing auxiliary model cannot loop)."""
        check = await _between_steps(self.session_id, self.holder, self.visible)
        if check.stop:
            self.stop.request()
            raise TurnStopped
        if check.suggestion is not None:
            async with self._writes():
                await apublish(self.session_id, check.suggestion)
        if self.auto_compaction_failed or not check.compaction_due:
            return messages
        outcome = await acompact(
            CompactionRequest(self.session_id, reason="auto"), lease=self.lease
        )
        self.auto_compaction_failed = outcome.status != "done"
        context = await self._after_compaction()
        return list(context) if outcome.status == "done" else messages

    async def _after_compaction(self) -> tuple[Message, ...]:
        """Read the session again (a compaction moved its counters; it published the token
        bar itself) and return the context as it now is."""
        after = await _read_after_compaction(self.session_id)
        self.session, self.visible = after.session, after.visible
        return after.context

    def _deltas(self, text: str) -> list[Delta]:
        """A piece of the answer as numbered deltas (a very long piece as several, so no
        frame of it need be split on the socket and every ``seq`` is one frame)."""
        out = []
        for start in range(0, len(text), MAX_DELTA_CHARS):
            self.seq += 1
            out.append(
                Delta(
                    self.session_id, text[start : start + MAX_DELTA_CHARS], self.turn_id, self.seq
                )
            )
        return out

    async def on_runtime_event(self, event: runtime.RuntimeEvent) -> None:
        sid = self.session_id
        async with self._writes():
            if isinstance(event, runtime.TextDelta):
                self._partial.append(event.text)
                await apublish(sid, *self._deltas(event.text))
            elif isinstance(event, runtime.AssistantMessage):
                streamed = {"turnId": self.turn_id, "seq": self.seq}
                stored, self.visible = await _store_answer(
                    self.session, event, self.visible, self.tool_specs, streamed
                )
                self._partial.clear()
                self._open_calls = {call.id: call for call in event.tool_calls}
                self.answered = not event.tool_calls
                if self.answered:  # the turn ends here: sent with ``turn_done``
                    self._closing.extend(stored)
                else:
                    await apublish(sid, *stored)
            elif isinstance(event, runtime.ToolResult):
                result, self.visible = await _store_tool_result(self.session, event, self.visible)
                self._open_calls.pop(event.call_id, None)
                await apublish(sid, result)
            elif isinstance(event, runtime.RunFailed):
                self._partial.clear()  # the cut stream is not kept
                self.failure = event
            elif isinstance(event, runtime.StepLimitReached):
                await apublish(sid, ErrorEvent(wire_text("step_limit"), "step_limit", sid))
