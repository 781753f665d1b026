"""From stored history to what the model and the core see (DESIGN 2 and 4)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from agents.meter import context_window, meter_read
from agents.models import ChatSession, ModelChannel
from agents.models import Message as StoredMessage
from agents.selectors import history_queryset, llm_history_load
from compaction.core import (
    PRUNED_TOOL_PLACEHOLDER,
    CompactionPolicy,
    Message,
    ToolCall,
    estimate_messages,
    repair_tool_pairing,
)

# estimate ÷ measured outside this range is a broken report, not a language
MIN_CALIBRATION = 0.1
MAX_CALIBRATION = 4.0


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


def core_messages_for_session(
    session: ChatSession, stored: list[StoredMessage] | None = None
) -> list[Message]:
    """The agent's system prompt, then the compacted view without event records
    (``stored``: that view, when the caller has loaded it already)."""
    if stored is None:
        stored = llm_history_load(session=session)
    messages = [to_core_message(m) for m in stored]
    prompt = session.agent.system_prompt
    return [Message(role="system", content=prompt), *messages] if prompt else messages


@dataclass(frozen=True, slots=True)
class CompactionInput:
    """What the core reads for one compaction of a session."""

    messages: list[Message]  # the model's view: pruned tool outputs as their placeholder
    original_contents: dict[int, str]  # pruned outputs in full: the summarizer reads these
    chain_depth: int  # how many summaries deep the visible summary already is


def compaction_input(session: ChatSession) -> CompactionInput:
    stored = llm_history_load(session=session)
    return CompactionInput(
        messages=core_messages_for_session(session, stored),
        original_contents={m.pk: m.content for m in stored if m.pruned_at is not None},
        chain_depth=max(
            (int(m.metadata.get("chainDepth", 1)) for m in stored if m.is_compaction_summary),
            default=0,
        ),
    )


def summarized_originals(session: ChatSession) -> tuple[list[Message], int]:
    """Every original a summary of this session stands for (never a summary itself), in
    conversation order, with their estimated tokens: what re-grounding rebuilds from."""
    rows = list(
        history_queryset(session=session, view="full", include_events=False).filter(
            compacted_at__isnull=False, is_compaction_summary=False
        )
    )
    messages = [replace(to_core_message(m), content=m.content) for m in rows]
    return messages, sum(m.token_estimate for m in rows)


def llm_context_for_session(
    session: ChatSession, stored: list[StoredMessage] | None = None
) -> list[Message]:
    """What every model request is built from: tool pairing always repaired."""
    repaired, _dropped = repair_tool_pairing(core_messages_for_session(session, stored))
    return repaired


def _calibrated_window(session: ChatSession, messages: list[Message], window: int) -> int:
    """The model's window in the units the core counts in (DESIGN 13).

    The trigger reads the provider's reported input tokens; the core counts with the
    seed's chars/4 estimate, which undercounts Chinese 2.8–4.4×. Left alone, a Chinese
    conversation over the real threshold looks "under the threshold" to the core and is
    never compacted. Scaling the window by estimate ÷ measured makes the core's threshold
    and tail budget the same fraction of the real window the trigger used.
    """
    if session.last_input_tokens is None:
        return window  # nothing measured yet: both sides count with the estimate
    measured = meter_read(session=session).used_tokens
    estimated = estimate_messages(messages)
    if measured <= 0 or estimated <= 0:
        return window
    scale = min(max(estimated / measured, MIN_CALIBRATION), MAX_CALIBRATION)
    return max(1, round(window * scale))


def policy_for_session(
    session: ChatSession,
    *,
    auxiliary: ModelChannel | None = None,
    messages: list[Message] | None = None,
) -> CompactionPolicy:
    """The agent's policy; given the messages, calibrated to what the provider measured."""
    agent = session.agent
    aux_window = context_window(auxiliary) if auxiliary is not None else 128_000
    window = context_window(agent.model_channel)
    if messages is not None:
        window = _calibrated_window(session, messages, window)
    return CompactionPolicy(
        context_window=window,
        threshold_percent=agent.compaction_threshold_percent,
        protect_first_n=agent.compaction_protect_first_n,
        recall_hint=agent.search_history_enabled,
        aux_context_window=aux_window,
    )
