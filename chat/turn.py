"""One chat turn, end to end (the seed's handleChat, §2).

Store the user's message, read the session once, compact first when automatic compaction
is due, run the ReAct loop (compacting between its steps when the context fills up), store
what it produces and publish every event to the session's group. The socket layer only
decides *when* a turn runs (one at a time per session); everything a turn does is here.
ORM work is sync and runs through ``database_sync_to_async``; the model call is async.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.utils.translation import gettext as _

from agents import runtime, services
from agents.access import SessionNotFound, session_for_user
from agents.broadcast import apublish
from agents.events import Delta, ErrorEvent, MessageStored, TokenUpdate, TurnDone
from agents.llm_channels import channel_config
from agents.message_format import message_to_json
from agents.meter import (
    MeterReading,
    context_window,
    meter_read,
    system_prompt_tokens,
    visible_tokens_of,
)
from agents.models import ChatSession, Role
from agents.selectors import llm_history_load, model_visible
from agents.tools import TodoStore, Workspace, default_registry
from compaction import service as compaction
from compaction.context import llm_context_for_session
from compaction.core.types import Message
from compaction.trigger import auto_compaction_due
from llm import get_provider


@dataclass(frozen=True, slots=True)
class StoredChat:
    """A user's message, stored; ``prepared`` when the turn was read in the same trip."""

    session_id: str
    user_message: dict[str, Any]
    prepared: PreparedTurn | None = None


@dataclass(frozen=True, slots=True)
class PreparedTurn:
    """Everything a turn needs before the model call, read in one trip to the database."""

    session: ChatSession
    refusal: ErrorEvent | None = None
    meter: TokenUpdate | None = None  # the reading before the model call
    compact_first: bool = False  # over the threshold: compact, then read again
    messages: tuple[Message, ...] = ()  # the model's context (empty when compact_first)
    todos: tuple[dict[str, Any], ...] = field(default=())

    @property
    def session_id(self) -> str:
        return str(self.session.pk)


def token_update_from(session_id: str, reading: MeterReading) -> TokenUpdate:
    return TokenUpdate(
        session_id=session_id,
        input_tokens=reading.input_tokens,
        output_tokens=reading.output_tokens,
        api_calls=reading.api_calls,
        used_tokens=reading.used_tokens,
        max_tokens=reading.max_tokens,
        threshold_percent=reading.threshold_percent,
        estimated=reading.estimated,
        compaction_count=reading.compaction_count,
        tool_tokens=reading.tool_tokens,
        compacting=reading.compacting,
        paused_reason=reading.paused_reason,
    )


def _load_session(session_id: str) -> ChatSession:
    return ChatSession.objects.select_related(
        "agent__model_channel", "agent__auxiliary_model_channel"
    ).get(pk=session_id)


def _refusal(session: ChatSession) -> ErrorEvent | None:
    """Why the model may not be called for this session, if it may not."""
    agent, session_id = session.agent, str(session.pk)
    channel = agent.model_channel
    if channel is None or not channel.enabled:
        return ErrorEvent(
            error=_(
                "This agent has no model channel yet. Add one (an Anthropic, OpenAI or "
                "DeepSeek key, or an OpenAI-compatible server such as Ollama or vLLM) on the "
                "model channel page, then choose it on the agent's page."
            ),
            reason="no_model_channel",
            session_id=session_id,
        )
    threshold = context_window(channel) * agent.compaction_threshold_percent // 100
    if system_prompt_tokens(agent.system_prompt) >= threshold:
        return ErrorEvent(
            error=_(
                "系统提示过长：the system prompt alone exceeds the compaction threshold; "
                "shorten it on the agent's page."
            ),
            reason="system_prompt_too_long",
            session_id=session_id,
        )
    return None


def _prepare(session: ChatSession) -> PreparedTurn:
    """Decide whether the model may be called now, and with what: one read of the visible
    history serves the meter, the trigger and the context."""
    refusal = _refusal(session)
    if refusal is not None:
        return PreparedTurn(session, refusal)
    stored = llm_history_load(session=session)
    reading = meter_read(session=session, visible=visible_tokens_of(session, stored))
    compact_first = auto_compaction_due(session=session, reading=reading, visible_count=len(stored))
    return PreparedTurn(
        session,
        meter=token_update_from(str(session.pk), reading),
        compact_first=compact_first,
        messages=() if compact_first else tuple(llm_context_for_session(session, stored)),
        todos=tuple(session.todos or ()),
    )


def _store_chat_message(
    user: Any, raw_session_id: str, content: str, prepare: bool
) -> StoredChat | None:
    """The access check (the one gate) and the store in one trip; None: not this user's.

    ``prepare``: nothing is queued for the session in this process, so its turn starts
    right away — read it in the same trip."""
    try:
        session = session_for_user(user=user, session_id=raw_session_id)
    except SessionNotFound:
        return None
    stored = services.user_message_append(session=session, content=content)
    user_message = message_to_json(stored, view="compacted")
    return StoredChat(str(session.pk), user_message, _prepare(session) if prepare else None)


store_chat_message = database_sync_to_async(_store_chat_message)


@database_sync_to_async
def _read_turn(session_id: str) -> PreparedTurn:
    return _prepare(_load_session(session_id))


@database_sync_to_async
def _read_after_compaction(session_id: str) -> tuple[TokenUpdate, tuple[Message, ...]]:
    session = _load_session(session_id)
    reading = meter_read(session=session)
    return token_update_from(session_id, reading), tuple(llm_context_for_session(session))


@database_sync_to_async
def _compaction_due(session_id: str) -> bool:
    session = _load_session(session_id)
    reading = meter_read(session=session)
    if not reading.over_threshold:
        return False
    visible_count = model_visible(session=session).count()
    return auto_compaction_due(session=session, reading=reading, visible_count=visible_count)


@database_sync_to_async
def read_token_update(session_id: str) -> TokenUpdate:
    return token_update_from(session_id, meter_read(session=_load_session(session_id)))


@database_sync_to_async
def _store_answer(session: ChatSession, event: runtime.AssistantMessage) -> list[Any]:
    """The assistant's message with the provider's usage, and the meter after it."""
    usage = event.usage
    stored = services.message_append(
        session=session,
        role=Role.ASSISTANT,
        content=event.content,
        tool_calls=services.tool_calls_to_json(event.tool_calls),
        input_tokens=usage.input_tokens if usage else None,
        output_tokens=usage.output_tokens if usage else None,
        record_usage=usage is not None,
    )
    session_id = str(session.pk)
    events: list[Any] = [MessageStored(session_id, message_to_json(stored))]
    if usage is not None:
        events.append(token_update_from(session_id, meter_read(session=session)))
    return events


@database_sync_to_async
def _store_tool_result(session: ChatSession, event: runtime.ToolResult) -> MessageStored:
    stored = services.message_append(
        session=session,
        role=Role.TOOL,
        content=event.content,
        tool_call_id=event.call_id,
        metadata={"toolName": event.name, "isError": event.is_error},
    )
    return MessageStored(str(session.pk), message_to_json(stored))


@database_sync_to_async
def _save_todos(session: ChatSession, items: list[dict[str, Any]]) -> None:
    ChatSession.objects.filter(pk=session.pk).update(todos=items)


class ChatTurn:
    """Runs one turn of one session; its methods are the turn's steps, in order."""

    def __init__(self, prepared: PreparedTurn) -> None:
        self.prepared = prepared
        self.session = prepared.session
        self.session_id = prepared.session_id
        self.auto_compaction_failed = False

    async def run(self) -> None:
        prepared = self.prepared
        if prepared.refusal is not None:
            await apublish(self.session_id, prepared.refusal)
            await apublish(self.session_id, TurnDone(self.session_id))
            return
        meter, messages = prepared.meter, prepared.messages
        if prepared.compact_first:
            await compaction.acompact(self.session_id, reason="auto")
            meter, messages = await _read_after_compaction(self.session_id)
        if meter is not None:
            await apublish(self.session_id, meter)
        todos = TodoStore(items=[dict(t) for t in prepared.todos])
        workspace = Path(settings.NETACLAW["WORKSPACE_ROOT"]) / self.session_id
        channel = self.session.agent.model_channel
        assert channel is not None  # a turn without a channel is refused above
        await runtime.run_agent(
            provider=get_provider(channel_config(channel)),
            messages=list(messages),
            tools=default_registry(Workspace(workspace), todos),
            on_event=self.on_runtime_event,
            max_tokens=max(256, min(4096, context_window(channel) // 4)),
            before_step=self.before_step,
        )
        if list(todos.items) != list(prepared.todos):
            await _save_todos(self.session, list(todos.items))
        await apublish(self.session_id, TurnDone(self.session_id))

    async def before_step(self, messages: list[Message]) -> list[Message]:
        """Between two model calls of one turn: compact when the context has filled up
        (once per turn if it fails, so a failing auxiliary model cannot loop)."""
        if self.auto_compaction_failed or not await _compaction_due(self.session_id):
            return messages
        outcome = await compaction.acompact(self.session_id, reason="auto")
        self.auto_compaction_failed = outcome.status != "done"
        meter, context = await _read_after_compaction(self.session_id)
        await apublish(self.session_id, meter)
        self.session = await database_sync_to_async(_load_session)(self.session_id)
        return list(context) if outcome.status == "done" else messages

    async def on_runtime_event(self, event: runtime.RuntimeEvent) -> None:
        sid = self.session_id
        if isinstance(event, runtime.TextDelta):
            await apublish(sid, Delta(sid, event.text))
        elif isinstance(event, runtime.AssistantMessage):
            for server_event in await _store_answer(self.session, event):
                await apublish(sid, server_event)
        elif isinstance(event, runtime.ToolResult):
            await apublish(sid, await _store_tool_result(self.session, event))
        elif isinstance(event, runtime.RunFailed):
            await apublish(
                sid, ErrorEvent(error=event.message, reason=event.reason, session_id=sid)
            )
        elif isinstance(event, runtime.StepLimitReached):
            await apublish(
                sid,
                ErrorEvent(
                    error=_("The agent stopped after its step limit; send a message to continue."),
                    reason="step_limit",
                    session_id=sid,
                ),
            )


async def run_chat_turn(session_id: str, prepared: PreparedTurn | None = None) -> None:
    """One turn of ``session_id``; ``prepared`` when it was read with the user's message."""
    await ChatTurn(prepared or await _read_turn(session_id)).run()
