"""The one permission gate: pages, the REST API and the WebSocket consumer all use it.

A session that exists but belongs to someone else is reported exactly like one
that does not exist, so ids cannot be probed.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db.models import Q, QuerySet

from agents.models import Agent, ChatSession


class SessionNotFound(LookupError):
    """No session with that id is visible to this user."""


def _as_uuid(session_id: Any) -> uuid.UUID | None:
    if isinstance(session_id, uuid.UUID):
        return session_id
    try:
        return uuid.UUID(str(session_id))
    except (ValueError, TypeError, AttributeError):
        return None


def sessions_for_user(*, user: Any) -> QuerySet[ChatSession]:
    if not getattr(user, "is_authenticated", False):
        return ChatSession.objects.none()
    return ChatSession.objects.filter(owner=user)


def session_for_user(*, user: Any, session_id: Any) -> ChatSession:
    """The session, its agent and the agent's model channel, if ``user`` may reach it."""
    key = _as_uuid(session_id)
    if key is None or not getattr(user, "is_authenticated", False):
        raise SessionNotFound(str(session_id))
    try:
        return (
            sessions_for_user(user=user)
            .select_related("model_channel", "agent__model_channel")
            .get(pk=key)
        )
    except ChatSession.DoesNotExist:
        raise SessionNotFound(str(session_id)) from None


def agents_for_user(*, user: Any) -> QuerySet[Agent]:
    if not getattr(user, "is_authenticated", False):
        return Agent.objects.none()
    if user.is_staff:
        return Agent.objects.all()
    return Agent.objects.filter(Q(owner__isnull=True) | Q(owner=user))


def agent_for_user(*, user: Any, agent_id: Any) -> Agent:
    try:
        return agents_for_user(user=user).get(pk=int(agent_id))
    except (Agent.DoesNotExist, ValueError, TypeError) as exc:
        raise LookupError(f"agent {agent_id} not found") from exc
