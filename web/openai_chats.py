"""The chat a ``POST /v1/chat/completions`` goes to, and its message stored with its turn.

Which chat (README, "Using NetaClaw's agents from other clients"):

1. **Named**: the ``X-NetaClaw-Session`` header or ``netaclaw.sessionId`` names one of the
   user's chats with that agent: the last user message is sent to it; the earlier messages
   of the request are not read (the chat keeps its own history, compacted or not).
2. **Recognised**: a stateless client resends the whole conversation each time. When the
   earlier messages are exactly what one of the user's chats with that agent holds, as this
   API shows a conversation (``openai_wire.conversation_of``: each user message, each reply
   as the text the client received; tool steps and system messages aside; whitespace at
   the ends ignored), that chat goes on: only the last message is stored, nothing twice.
   The most recently active one of such chats, if several.
3. **New**: otherwise a new chat, titled by the first user message, whose history is the
   earlier messages (stored as ``import_session`` stores OpenAI-format messages, system
   and tool messages included), then the last message and its turn. A client that edits or
   regenerates an earlier message therefore branches into a new chat; a first message alone
   always starts one.

The chat, its history and the message are stored in one transaction with the session's
lease and, with the worker runner, the job that answers it (``chat.turn``); a chat whose
lease is held (a turn or a compaction runs) is refused with 409 and nothing is stored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Count, OuterRef, Q, Subquery, Sum

from agents import accounts, services
from agents.access import SessionNotFound, agents_for_user, session_for_user, sessions_for_user
from agents.models import Agent, ChatSession, Message, Role
from agents.selectors import history_load
from chat.turn import AcceptedChat, DeferTurn, accept_chat_in_transaction
from web.openai_wire import (
    CompletionRequest,
    OpenAIError,
    Usage,
    bad_request,
    conversation_of,
    error_for_reason,
)

# How many of the user's chats, most recent first, a resent conversation is compared with
# (only chats whose user messages agree in number and in the last one are candidates).
MATCH_CANDIDATES = 5


def token_user(key: str) -> Any:
    """The user of an API token (``POST /api/auth/token/``), with the REST API's expiry."""
    try:
        token = accounts.valid_token(key) if key else None
    except accounts.TokenExpired:
        raise OpenAIError(
            401, "token_expired", "The API token has expired; request a new one."
        ) from None
    if token is None:
        raise OpenAIError(401, "invalid_api_key", "Invalid API token.")
    return token.user


def _usable(user: Any) -> list[Agent]:
    """The agents the user may use, in the order a name resolves to them: their own, then
    shared ones, then (staff) other users' agents; oldest first."""
    agents = agents_for_user(user=user).order_by("pk")
    return sorted(agents, key=lambda a: (a.owner_id != user.pk, a.owner_id is not None, a.pk))


def agent_for_model(*, user: Any, model: str) -> Agent:
    """The agent ``model`` names — its id, else its name — if the user may use it."""
    agents = _usable(user)
    if model.isascii() and model.isdigit():
        for agent in agents:
            if str(agent.pk) == model:
                return agent
    for agent in agents:
        if agent.name == model:
            return agent
    raise OpenAIError(
        404,
        "model_not_found",
        f"The model '{model}' does not exist or you do not have access to it.",
        param="model",
    )


def model_ids(*, user: Any) -> list[str]:
    """``GET /v1/models``: each usable agent by its name, or by its id when that name
    resolves to another agent (``agent_for_model``)."""
    ids, named = [], set()
    for agent in _usable(user):
        if agent.name in named or (agent.name.isascii() and agent.name.isdigit()):
            ids.append(str(agent.pk))
        else:
            named.add(agent.name)
            ids.append(agent.name)
    return ids


@dataclass(frozen=True, slots=True)
class StartedTurn:
    """The message stored and its turn taken (``accepted.holder``), in chat ``session_id``."""

    session_id: str
    created_chat: bool
    accepted: AcceptedChat


def start_turn(
    *,
    user: Any,
    request: CompletionRequest,
    holder: str,
    lease_seconds: float,
    defer: DeferTurn | None,
    reply_to: str,
    join: Callable[[str], None],
) -> StartedTurn:
    """Find or start the chat, ``join`` its events (before its turn can publish any: the
    job is committed with this transaction), store the message and take the turn. Raises
    ``OpenAIError`` and stores nothing when it may not run."""
    agent = agent_for_model(user=user, model=request.model)
    with transaction.atomic():
        session, created = _chat_for(user, agent, request)
        sid = str(session.pk)
        join(sid)
        accepted = accept_chat_in_transaction(
            user, sid, request.content, holder, lease_seconds, defer, reply_to, queue=False
        )
        if accepted is None:  # not the user's chat: found above through the same gate
            raise _unknown_chat(sid)
        if accepted.refusal is not None:  # a new chat and its history go with it
            raise error_for_reason(accepted.refusal.reason, accepted.refusal.error)
    return StartedTurn(sid, created, accepted)


def _chat_for(user: Any, agent: Agent, request: CompletionRequest) -> tuple[ChatSession, bool]:
    if request.session_id is not None:
        return _named_chat(user, agent, request.session_id), False
    found = _recognised_chat(user, agent, request)
    if found is not None:
        return found, False
    return _new_chat(user, agent, request), True


def _unknown_chat(session_id: str) -> OpenAIError:
    return OpenAIError(
        404, "session_not_found", f"No chat '{session_id}' of yours.", param="netaclaw.sessionId"
    )


def _named_chat(user: Any, agent: Agent, session_id: str) -> ChatSession:
    try:
        session = session_for_user(user=user, session_id=session_id)
    except SessionNotFound:
        raise _unknown_chat(session_id) from None
    if session.agent_id != agent.pk:
        raise bad_request(
            f"chat '{session_id}' belongs to another agent, '{session.agent.name}'",
            param="model",
            code="model_mismatch",
        )
    return session


def _recognised_chat(user: Any, agent: Agent, request: CompletionRequest) -> ChatSession | None:
    """The user's chat with ``agent`` that holds exactly the request's earlier messages."""
    wanted = request.exchanges
    users = [row["content"] for row in request.earlier if row["role"] == Role.USER]
    if not users:
        return None
    said = Q(
        messages__role=Role.USER,
        messages__queued_at__isnull=True,
        messages__is_compaction_summary=False,
        messages__fork__isnull=True,
    )
    last_said = (
        Message.objects.on_branch()
        .filter(
            session=OuterRef("pk"),
            role=Role.USER,
            queued_at__isnull=True,
            is_compaction_summary=False,
        )
        .order_by("-position")
        .values("content")[:1]
    )
    candidates = (
        sessions_for_user(user=user)
        .filter(agent=agent)
        .annotate(last_said=Subquery(last_said))
        .filter(last_said=users[-1])
        .annotate(said=Count("messages", filter=said))
        .filter(said=len(users))
        .order_by("-updated_at")[:MATCH_CANDIDATES]
    )
    for session in candidates:
        if _conversation(session) == wanted:
            return session
    return None


def _conversation(session: ChatSession) -> tuple[tuple[str, str], ...]:
    rows = history_load(session=session, view="full", include_events=False)
    return conversation_of(
        {"role": m.role, "content": m.content, "tool_calls": m.tool_calls}
        for m in rows
        if not m.is_compaction_summary
    )


def _new_chat(user: Any, agent: Agent, request: CompletionRequest) -> ChatSession:
    first = next((r["content"] for r in request.earlier if r["role"] == Role.USER), "")
    title = services.title_from_message(first or request.content)
    session = services.session_create(owner=user, agent=agent, title=title)
    if request.earlier:
        services.messages_bulk_append(session=session, rows=request.earlier)
    return session


def turn_usage(*, session_id: str, turn_id: str) -> Usage:
    """What the provider reported for the turn's model calls (its stored answers carry the
    turn's id), added up."""
    if not turn_id:
        return Usage()
    totals = Message.objects.filter(
        session__pk=session_id, role=Role.ASSISTANT, metadata__turnId=turn_id
    ).aggregate(prompt=Sum("input_tokens"), completion=Sum("output_tokens"))
    return Usage(totals["prompt"] or 0, totals["completion"] or 0)
