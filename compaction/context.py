"""From stored history to what the model and the core see (DESIGN 2 and 4)."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from agents.attachments import attachment_note, attachments_of, image_bytes
from agents.meter import context_window, meter_read, system_prompt_tokens
from agents.models import ChatSession, ModelChannel
from agents.models import Message as StoredMessage
from agents.selectors import history_queryset, llm_history_load
from compaction.continuity import answered_since, continuity_message, newest_summary_index
from condense import (
    CompactionPolicy,
    ImagePart,
    Message,
    core_role,
    estimate_messages,
    pruned_stub,
    repair_tool_pairing,
    tool_calls_from_json,
)
from llm.vision import takes_images

# estimate ÷ measured outside this range is a broken report, not a language
MIN_CALIBRATION = 0.1
MAX_CALIBRATION = 4.0
# ``upTo``: a tail budget that rounds to no token, so the tail is the one message given last
UP_TO_TAIL_RATIO = 1e-9


def to_core_message(stored: StoredMessage, *, recall_hint: bool = False) -> Message:
    """A pruned tool output reads as its stub (issue 25): the placeholder, the tool, the
    message id and — ``recall_hint``: the agent has the recall tools — where the original is."""
    calls = tool_calls_from_json(stored.tool_calls or ())
    content = stored.content
    if stored.pruned_at is not None:
        tool_name = (stored.metadata or {}).get("toolName")
        content = pruned_stub(
            tool_name if isinstance(tool_name, str) else None, stored.pk, recall_hint=recall_hint
        )
    elif stored.role == "user" and stored.metadata:
        # issue 26 item 4: the agent is told which files the message carries, and where
        content += attachment_note(attachments_of(stored.metadata))
    return Message(
        role=core_role(stored.role),
        content=content,
        tool_calls=calls,
        tool_call_id=stored.tool_call_id or None,
        id=stored.pk,
        is_summary=stored.is_compaction_summary,
        pinned=stored.pinned,  # kept verbatim by the core (issue 17 item 2)
    )


def core_messages_for_session(
    session: ChatSession, stored: list[StoredMessage] | None = None
) -> list[Message]:
    """The agent's system prompt, then the compacted view without event records
    (``stored``: that view, when the caller has loaded it already)."""
    if stored is None:
        stored = llm_history_load(session=session)
    newest = newest_summary_index(stored)
    recall_hint = session.agent.search_history_enabled
    messages = []
    for index, row in enumerate(stored):
        messages.append(to_core_message(row, recall_hint=recall_hint))
        if index == newest:  # issue 25 item 7: todos, notes and the directive, verbatim
            carried = continuity_message(
                todos=session.todos or (),
                notes=str(row.metadata.get("notes") or ""),
                language=str(row.metadata.get("language") or ""),
                answered=answered_since(stored, index),
            )
            if carried is not None:
                messages.append(carried)
    prompt = session.agent.system_prompt
    return [Message(role="system", content=prompt), *messages] if prompt else messages


@dataclass(frozen=True, slots=True)
class CompactionInput:
    """What the core reads for one compaction of a session."""

    messages: list[Message]  # the model's view: pruned tool outputs as their placeholder
    original_contents: dict[int, str]  # pruned outputs in full: the summarizer reads these
    chain_depth: int  # how many summaries deep the visible summary already is
    # the meter's estimate of the whole visible context (system prompt + stored estimates,
    # ``upTo`` or not) and each visible row's stored estimate: the compaction's figures
    # are counted from these, like the token bar's (issue 17 item 10)
    visible_tokens: int = 0
    row_tokens: dict[int, int] = field(default_factory=dict)
    # the agent's notes kept with the newest summary: a compaction carries them on
    carried_notes: str = ""


class UpToNotFound(LookupError):
    """``upTo`` names no message of the session."""


def _before(stored: list[StoredMessage], session: ChatSession, up_to: int) -> list[StoredMessage]:
    """``upTo`` (issue 17 item 8): the visible messages before that message, then the first
    one at or after it — the only tail the core may keep; nothing later is shown to it."""
    anchor = (
        StoredMessage.objects.on_branch()
        .filter(session=session, pk=up_to)
        .values("position")
        .first()
    )
    if anchor is None:
        raise UpToNotFound(up_to)
    before = [m for m in stored if m.position < anchor["position"]]
    return [*before, *stored[len(before) : len(before) + 1]]


def compaction_input(session: ChatSession, *, up_to: int | None = None) -> CompactionInput:
    """What the core reads; ``up_to``: only what comes before that message (plus the
    message the kept tail starts with)."""
    stored = llm_history_load(session=session)
    row_tokens = {m.pk: m.token_estimate for m in stored}
    visible = system_prompt_tokens(session.agent.system_prompt) + sum(row_tokens.values())
    if up_to is not None:
        stored = _before(stored, session, up_to)
    return CompactionInput(
        visible_tokens=visible,
        row_tokens=row_tokens,
        messages=core_messages_for_session(session, stored),
        original_contents={m.pk: m.content for m in stored if m.pruned_at is not None},
        chain_depth=max(
            (int(m.metadata.get("chainDepth", 1)) for m in stored if m.is_compaction_summary),
            default=0,
        ),
        carried_notes=next(
            (
                str(m.metadata.get("notes") or "")
                for m in reversed(stored)
                if m.is_compaction_summary
            ),
            "",
        ),
    )


def history_fingerprint(messages: Sequence[Message]) -> list[list[Any]]:
    """What each message must still be for a summary made from ``messages`` to stand for
    them (id, summary and pin flags, a content hash): JSON, and the same in every process,
    unlike ``hash``. A preview stores it; a background preparation keeps it in memory."""
    return [
        [
            m.id,
            m.is_summary,
            m.pinned,
            hashlib.sha256(m.content.encode("utf-8", "surrogatepass")).hexdigest()[:32],
        ]
        for m in messages
    ]


def still_starts_with(messages: Sequence[Message], fingerprint: list[list[Any]]) -> bool:
    """The history ``messages`` still starts with what ``fingerprint`` was taken of."""
    return history_fingerprint(messages[: len(fingerprint)]) == fingerprint


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
    """What every model request is built from: tool pairing always repaired; a user's
    attached images as images when the chat's model takes them (issue 26 item 4)."""
    if stored is None:
        stored = llm_history_load(session=session)
    repaired, _dropped = repair_tool_pairing(core_messages_for_session(session, stored))
    channel = session.channel
    if channel is None or not takes_images(channel.provider, channel.model):
        return repaired
    images = _images_by_message(session, stored)
    return [replace(m, images=images[m.id]) if m.id in images else m for m in repaired]


MAX_IMAGES_PER_MESSAGE = 5
MAX_IMAGE_BYTES = 5_000_000  # what Anthropic takes per image; OpenAI takes more


def _images_by_message(
    session: ChatSession, stored: list[StoredMessage]
) -> dict[int | None, tuple[ImagePart, ...]]:
    found: dict[int | None, tuple[ImagePart, ...]] = {}
    for row in stored:
        if row.role != "user" or not row.metadata:
            continue
        parts: list[ImagePart] = []
        for attached in attachments_of(row.metadata):
            if not attached.is_image or attached.size > MAX_IMAGE_BYTES:
                continue
            data = image_bytes(session.pk, attached)
            if data is not None and len(parts) < MAX_IMAGES_PER_MESSAGE:
                parts.append(ImagePart(attached.type, base64.b64encode(data).decode("ascii")))
        if parts:
            found[row.pk] = tuple(parts)
    return found


def measured_tokens(session: ChatSession) -> int | None:
    """The token bar's count when it rests on a provider's report (directly, or through the
    ratio kept by the last compaction); None while it is a bare estimate."""
    if session.last_input_tokens is None and not session.token_calibration:
        return None
    return meter_read(session=session).used_tokens


def token_scale(*, estimated: int, measured: int | None) -> float:
    """Estimate ÷ measured for the session's visible context (DESIGN 13).

    The trigger and the token bar read the provider's reported input tokens (or, after a
    compaction, the estimate scaled by the ratio measured before it); the core counts with
    the seed's chars/4 estimate, which undercounts Chinese 2.8–4.4×. Left alone, a Chinese
    conversation over the real threshold looks "under the threshold" to the core and is
    never compacted. Scaling the window by this ratio makes the core's threshold and tail
    budget the same fraction of the real window the trigger used. 1.0: nothing measured
    yet (both sides count with the estimate).
    """
    if measured is None or measured <= 0 or estimated <= 0:
        return 1.0
    return min(max(estimated / measured, MIN_CALIBRATION), MAX_CALIBRATION)


def policy_for_session(
    session: ChatSession,
    *,
    auxiliary: ModelChannel | None = None,
    messages: list[Message] | None = None,
    scale: float | None = None,
    up_to: bool = False,
) -> CompactionPolicy:
    """The agent's policy; given the messages (or their ``scale``), calibrated to what the
    provider measured. The agent's token cap, when it comes before the percentage, is the
    threshold (issue 17 item 5). ``up_to``: the tail is only the last message the core
    is given (``compaction_input(up_to=…)``)."""
    agent = session.agent
    aux_window = context_window(auxiliary) if auxiliary is not None else 128_000
    if scale is None:
        scale = 1.0
        if messages is not None:
            measured = measured_tokens(session)
            scale = token_scale(estimated=estimate_messages(messages), measured=measured)
    window = max(1, round(context_window(session.channel) * scale))
    percent = agent.compaction_threshold_percent
    cap = agent.compaction_token_cap
    if cap is not None and round(cap * scale) < window * percent // 100:
        window, percent = max(1, round(cap * scale)), 100  # the cap is the threshold
    tail: dict[str, Any] = {}
    if up_to:
        tail = {"tail_token_budget_ratio": UP_TO_TAIL_RATIO, "min_tail_messages": 1}
    return CompactionPolicy(
        context_window=window,
        threshold_percent=percent,
        protect_first_n=agent.compaction_protect_first_n,
        target_percent=agent.compaction_target_percent,
        recall_hint=agent.search_history_enabled,
        aux_context_window=aux_window,
        **tail,
    )
