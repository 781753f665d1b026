"""The steps of one chat turn, each a short piece of database work.

The gateway sequences them; this module knows the models, services and the
runtime. Every function here that touches the ORM is sync and wrapped with
``database_sync_to_async`` at its async entry point.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.utils.translation import gettext as _

from agents import services
from agents.message_format import message_to_json
from agents.meter import (
    MeterReading,
    TurnTally,
    context_window,
    meter_read,
    system_prompt_tokens,
)
from agents.models import ChatSession, Role
from agents.selectors import llm_history_load, model_visible
from channels_app.events import Delta, ErrorEvent, MessageStored, ServerEvent, TokenUpdate

MIN_TAIL_MESSAGES = 3


@dataclass(frozen=True, slots=True)
class PreparedTurn:
    """Everything a turn needs before the model call, read in one trip to the database."""

    session_id: str
    user_message: dict[str, Any]
    refusal: ErrorEvent | None
    channel_config: Any = None
    max_output_tokens: int = 4096
    workspace_root: Path | None = None
    todos: tuple[dict[str, Any], ...] = ()
    meter: TokenUpdate | None = None  # the reading before the model call
    compact_first: bool = False  # over the threshold: compact, then re-read meter and context
    messages: tuple[Any, ...] = ()  # the model's context (empty when compact_first)
    session: ChatSession | None = None  # reused by the turn's writes (same runner, one at a time)
    tally: TurnTally | None = None  # the visible sums, moved by the turn's writes


@dataclass(frozen=True, slots=True)
class StoredChat:
    session_id: str
    user_message: dict[str, Any]
    prepared: PreparedTurn | None = None


def _session(session_id: str) -> ChatSession:
    return ChatSession.objects.select_related(
        "agent__model_channel", "agent__auxiliary_model_channel"
    ).get(pk=session_id)


def _append_user_message(session: ChatSession, content: str) -> dict[str, Any]:
    stored = services.message_append(session=session, role=Role.USER, content=content)
    if not session.title:
        ChatSession.objects.filter(pk=session.pk).update(title=content.strip()[:60])
    return message_to_json(stored, view="compacted")


def _store_user_message(session_id: str, content: str) -> dict[str, Any]:
    """Stored the moment it arrives, before it waits in any queue: a crash loses nothing."""
    return _append_user_message(ChatSession.objects.get(pk=session_id), content)


store_user_message = database_sync_to_async(_store_user_message)


def _store_chat_message(
    user: Any, raw_session_id: str, content: str, prepare: bool = False
) -> StoredChat | None:
    """The access check (the one gate) and the store in one trip; None: not this user's.

    ``prepare``: the session has nothing queued in this process, so its turn will start
    right away — prepare it in the same trip (the gateway drops it if that changed)."""
    from agents.access import SessionNotFound, session_for_user

    try:
        session = session_for_user(user=user, session_id=raw_session_id)
    except SessionNotFound:
        return None
    session_id = str(session.pk)
    user_message = _append_user_message(session, content)
    prepared = _prepare_session_turn(session, user_message) if prepare else None
    return StoredChat(session_id, user_message, prepared)


store_chat_message = database_sync_to_async(_store_chat_message)


def _prepare_turn(session_id: str, user_message: dict[str, Any]) -> PreparedTurn:
    return _prepare_session_turn(_session(session_id), user_message)


def _prepare_session_turn(session: ChatSession, user_message: dict[str, Any]) -> PreparedTurn:
    """Decide whether the model may be called now, and with what."""
    session_id = str(session.pk)
    agent = session.agent
    channel = agent.model_channel
    if channel is None or not channel.enabled:
        return PreparedTurn(
            session_id,
            user_message,
            ErrorEvent(
                error=_(
                    "This agent has no model channel yet. Add one (an Anthropic, OpenAI or "
                    "DeepSeek key, or an OpenAI-compatible server such as Ollama or vLLM) on the "
                    "model channel page, then choose it on the agent's page."
                ),
                reason="no_model_channel",
                session_id=session_id,
            ),
        )
    window = context_window(channel)
    if (
        system_prompt_tokens(agent.system_prompt)
        >= window * agent.compaction_threshold_percent // 100
    ):
        return PreparedTurn(
            session_id,
            user_message,
            ErrorEvent(
                error=_(
                    "系统提示过长：the system prompt alone exceeds the compaction threshold; "
                    "shorten it on the agent's page."
                ),
                reason="system_prompt_too_long",
                session_id=session_id,
            ),
        )
    from agents.llm_channels import channel_config
    from compaction.context import llm_context_for_session

    # one read of the visible history serves the meter, the trigger and the context
    stored = llm_history_load(session=session)
    tally = TurnTally.at_read(session, stored)
    reading = meter_read(session=session, visible=tally.visible)
    compact_first = _auto_compact_due(session, reading, visible_count=len(stored))
    return PreparedTurn(
        session_id,
        user_message,
        None,
        channel_config=channel_config(channel),
        max_output_tokens=max(256, min(4096, window // 4)),
        workspace_root=Path(settings.NETACLAW["WORKSPACE_ROOT"]) / str(session.pk),
        todos=tuple(session.todos or ()),
        meter=_token_update_from(session_id, reading),
        compact_first=compact_first,
        messages=() if compact_first else tuple(llm_context_for_session(session, stored)),
        session=session,
        tally=tally,
    )


async def prepare_turn(*, session_id: str, user_message: dict[str, Any]) -> PreparedTurn:
    return await database_sync_to_async(_prepare_turn)(session_id, user_message)


def _token_update(session_id: str) -> TokenUpdate:
    return _token_update_from(session_id, meter_read(session=_session(session_id)))


def _token_update_from(session_id: str, reading: MeterReading) -> TokenUpdate:
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


token_update = database_sync_to_async(_token_update)


def _should_auto_compact(session_id: str) -> bool:
    session = _session(session_id)
    return _auto_compact_due(session, None)


def _auto_compact_due(
    session: ChatSession, reading: MeterReading | None, visible_count: int | None = None
) -> bool:
    """Seed §2.1 and §10: over the threshold, enough history, not paused (DESIGN 9)."""
    if session.auto_compaction_paused_reason or session.agent.model_channel is None:
        return False
    if reading is None:
        reading = meter_read(session=session)
    if not reading.over_threshold:
        return False
    if visible_count is None:
        visible_count = model_visible(session=session).count()
    return visible_count > session.agent.compaction_protect_first_n + MIN_TAIL_MESSAGES


should_auto_compact = database_sync_to_async(_should_auto_compact)


def compact_session(*, session_id: str, reason: str, instructions: str | None) -> Any:
    from compaction.service import CompactionService

    return CompactionService().compact(
        session=_session(session_id), reason=reason, instructions=instructions
    )


def _llm_context(session_id: str) -> list[Any]:
    from compaction.context import llm_context_for_session

    return llm_context_for_session(_session(session_id))


llm_context = database_sync_to_async(_llm_context)


def _meter_and_context(session_id: str) -> tuple[TokenUpdate, tuple[Any, ...]]:
    """After a compaction: the new reading and the new context, from one session load."""
    from compaction.context import llm_context_for_session

    session = _session(session_id)
    return (
        _token_update_from(session_id, meter_read(session=session)),
        tuple(llm_context_for_session(session)),
    )


meter_and_context = database_sync_to_async(_meter_and_context)


def _store_runtime_event(
    session_id: str,
    event: Any,
    session: ChatSession | None = None,
    tally: TurnTally | None = None,
) -> list[ServerEvent]:
    """Store what the runtime produced; ``session`` (the turn's, loaded with its agent and
    channel) saves reloading it, or it is loaded here. With the turn's ``tally`` the meter
    after an answer is computed, not queried, whenever that is exact."""
    from agents import runtime

    if session is None:
        session = _session(session_id)
    if isinstance(event, runtime.AssistantMessage):
        usage = event.usage
        # with the provider's usage recorded in the same statement, ``session`` carries the
        # counters the meter starts from
        stored = services.message_append(
            session=session,
            role=Role.ASSISTANT,
            content=event.content,
            tool_calls=services.tool_calls_to_json(event.tool_calls),
            input_tokens=usage.input_tokens if usage else None,
            output_tokens=usage.output_tokens if usage else None,
            record_usage=usage is not None,
        )
        events: list[ServerEvent] = [MessageStored(session_id, message_to_json(stored))]
        if usage is not None:
            visible = tally.after_answer(session, stored) if tally is not None else None
            events.append(
                _token_update_from(session_id, meter_read(session=session, visible=visible))
            )
        elif tally is not None:
            tally.add(stored)
        return events
    if isinstance(event, runtime.ToolResult):
        stored = services.message_append(
            session=session,
            role=Role.TOOL,
            content=event.content,
            tool_call_id=event.call_id,
            metadata={"toolName": event.name, "isError": event.is_error},
        )
        if tally is not None:
            tally.add(stored)
        return [MessageStored(session_id, message_to_json(stored))]
    if isinstance(event, runtime.RunFailed):
        return [ErrorEvent(error=event.message, reason=event.reason, session_id=session_id)]
    if isinstance(event, runtime.StepLimitReached):
        return [
            ErrorEvent(
                error=_("The agent stopped after its step limit; send a message to continue."),
                reason="step_limit",
                session_id=session_id,
            )
        ]
    return []


_store_runtime_event_async = database_sync_to_async(_store_runtime_event)


async def handle_runtime_event(
    session_id: str,
    event: Any,
    session: ChatSession | None = None,
    tally: TurnTally | None = None,
) -> list[ServerEvent]:
    from agents import runtime

    if isinstance(event, runtime.TextDelta):
        return [Delta(session_id, event.text)]
    if isinstance(event, runtime.UsageUpdate):
        return []  # stored with the assistant message that follows it
    return await _store_runtime_event_async(session_id, event, session, tally)


def _save_todos(session_id: str, items: list[dict[str, Any]]) -> None:
    ChatSession.objects.filter(pk=session_id).update(todos=items)


save_todos = database_sync_to_async(_save_todos)


async def run_turn(
    prepared: PreparedTurn,
    *,
    messages: tuple[Any, ...] | list[Any] | None = None,
    on_event: Callable[[Any], Awaitable[None]],
    before_step: Callable[[list[Any]], Awaitable[list[Any]]],
) -> Any:
    from agents import runtime
    from agents.llm import get_provider
    from agents.tools import TodoStore, Workspace, default_registry

    todos = TodoStore(items=[dict(t) for t in prepared.todos])
    registry = default_registry(Workspace(prepared.workspace_root), todos)
    result = await runtime.run_agent(
        provider=get_provider(prepared.channel_config),
        messages=list(messages) if messages is not None else await llm_context(prepared.session_id),
        tools=registry,
        on_event=on_event,
        max_tokens=prepared.max_output_tokens,
        before_step=before_step,
    )
    if list(todos.items) != list(prepared.todos):
        await save_todos(prepared.session_id, list(todos.items))
    return result
