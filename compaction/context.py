"""From stored history to what the model and the core see (DESIGN 2 and 4)."""

from __future__ import annotations

from agents.meter import context_window
from agents.models import ChatSession, ModelChannel
from agents.models import Message as StoredMessage
from agents.selectors import llm_history_load
from compaction.core import (
    PRUNED_TOOL_PLACEHOLDER,
    CompactionPolicy,
    Message,
    ToolCall,
    repair_tool_pairing,
)


def to_core_message(stored: StoredMessage) -> Message:
    calls = tuple(
        ToolCall(
            id=str(c.get("id", "")),
            name=str(c.get("name", "")),
            arguments=str(c.get("arguments", "")),
        )
        for c in stored.tool_calls or ()
    )
    content = PRUNED_TOOL_PLACEHOLDER if stored.pruned_at is not None else stored.content
    return Message(
        role=stored.role,  # type: ignore[arg-type]
        content=content,
        tool_calls=calls,
        tool_call_id=stored.tool_call_id or None,
        id=stored.pk,
        is_summary=stored.is_compaction_summary,
    )


def core_messages_for_session(session: ChatSession) -> list[Message]:
    """The agent's system prompt, then the compacted view without event records."""
    messages = [to_core_message(m) for m in llm_history_load(session=session)]
    prompt = session.agent.system_prompt
    return [Message(role="system", content=prompt), *messages] if prompt else messages


def llm_context_for_session(session: ChatSession) -> list[Message]:
    """What every model request is built from: tool pairing always repaired."""
    repaired, _dropped = repair_tool_pairing(core_messages_for_session(session))
    return repaired


def policy_for_session(
    session: ChatSession, *, auxiliary: ModelChannel | None = None
) -> CompactionPolicy:
    agent = session.agent
    aux_window = context_window(auxiliary) if auxiliary is not None else 128_000
    return CompactionPolicy(
        context_window=context_window(agent.model_channel),
        threshold_percent=agent.compaction_threshold_percent,
        protect_first_n=agent.compaction_protect_first_n,
        aux_context_window=aux_window,
    )
