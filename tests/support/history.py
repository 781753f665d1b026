"""Building a session's stored history, and reading it back the way the tests compare it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agents.models import ChatSession, Message, Role
from agents.services import (
    CompactionApplied,
    compaction_apply,
    message_append,
    messages_bulk_append,
)
from scripted_llm import ScriptedLLMServer
from system.dictionary import DEFAULT_AUXILIARY_CHANNEL, NETACLAW_TYPE_KEY, dict_set
from tests.factories import make_agent, make_channel, make_session, make_user

# --- building ----------------------------------------------------------------------------


def conversation(session: ChatSession, n: int) -> list[Message]:
    """``n`` short alternating user/assistant turns, appended one at a time."""
    rows = []
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        rows.append(message_append(session=session, role=role, content=f"turn {i} " + "x" * 40))
    return rows


def fill_history(session: ChatSession, *, messages: int, filler: int) -> list[Message]:
    """``messages`` alternating user/assistant turns of about ``filler`` * 2 characters."""
    rows = []
    for i in range(messages):
        role = Role.USER if i % 2 == 0 else Role.ASSISTANT
        rows.append({"role": role, "content": f"第 {i} 轮：修改 src/parser.py " + "内容" * filler})
    return messages_bulk_append(session=session, rows=rows)


def session_to_compact(
    server: ScriptedLLMServer, *, n: int = 40, aux: str | None = "agent"
) -> ChatSession:
    """A session of ``n`` turns whose auxiliary model is ``server``: the agent's own channel
    (``aux="agent"``), the dictionary's default auxiliary channel (``aux="dict"``) or none
    (``aux=None``)."""
    channel = make_channel(
        base_url=server.openai_base_url,
        context_window=200_000,
        is_auxiliary=True,
        model="aux-model",
    )
    agent = make_agent(
        model_channel=channel, auxiliary_model_channel=channel if aux == "agent" else None
    )
    if aux == "dict":
        dict_set(type_key=NETACLAW_TYPE_KEY, name=DEFAULT_AUXILIARY_CHANNEL, value=str(channel.pk))
    session = make_session(owner=make_user(is_superuser=True), agent=agent)
    rows = [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"turn {i} about src/parser.py " + "x" * 300,
        }
        for i in range(n)
    ]
    messages_bulk_append(session=session, rows=rows)
    return session


def chat_to_compact(
    server: ScriptedLLMServer, *, window: int = 200_000, history: int = 20, mode: str = "auto"
) -> tuple[Any, ChatSession]:
    """(owner, session): ``history`` alternating Chinese turns of about 400 characters on an
    agent whose model and auxiliary model are ``server`` (one channel of ``window`` tokens)
    and whose compaction mode is ``mode``."""
    user = make_user()
    channel = make_channel(
        base_url=server.openai_base_url, context_window=window, is_auxiliary=True
    )
    agent = make_agent(model_channel=channel, auxiliary_model_channel=channel, compaction_mode=mode)
    session = make_session(owner=user, agent=agent)
    rows = [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"第 {i} 轮 src/parser.py " + "内容" * 200,
        }
        for i in range(history)
    ]
    messages_bulk_append(session=session, rows=rows)
    return user, session


def apply_compaction(
    session: ChatSession,
    msgs: Sequence[Message],
    *,
    pruned: Sequence[Message] = (),
    summary: str = "## 目标\nsummary body " + "y" * 300,
) -> CompactionApplied:
    """Stores a compaction of ``msgs`` (and the pruning of ``pruned``) in one go."""
    return compaction_apply(
        session=session,
        compacted_ids=[m.pk for m in msgs],
        pruned_ids=[m.pk for m in pruned],
        summary_content=summary,
        pruned_token_estimate=17,
        event_content="上下文已压缩",
        event_payload={"removedCount": len(msgs), "tokensBefore": 100, "tokensAfter": 40},
    )


# --- reading back ------------------------------------------------------------------------


def history_rows(
    session: ChatSession, *, ignoring_metadata: tuple[str, ...] = ()
) -> list[tuple[Any, ...]]:
    """Every stored field of every non-event message of ``session``, by id.

    Compaction must leave these byte-identical when it fails; system event records
    (the failure bubble) are allowed to be added, so they are left out.
    ``ignoring_metadata`` names metadata keys a caller allows to change.
    """
    fields = [f.attname for f in Message._meta.concrete_fields]
    rows = (
        Message.objects.filter(session=session)
        .exclude(role=Role.SYSTEM, metadata__has_key="systemType")
        .order_by("id")
        .values_list(*fields)
    )
    metadata = fields.index("metadata")

    def shown(index: int, value: Any) -> str:
        if index == metadata and ignoring_metadata and isinstance(value, dict):
            value = {k: v for k, v in value.items() if k not in ignoring_metadata}
        return json.dumps(value, sort_keys=True, default=str)

    return [tuple(shown(i, v) for i, v in enumerate(row)) for row in rows]


def stored_rows(session: ChatSession) -> list[dict[str, Any]]:
    """Every message of ``session`` but the event records, as dicts, by id."""
    return list(
        Message.objects.filter(session=session)
        .exclude(metadata__has_key="systemType")
        .order_by("id")
        .values()
    )
