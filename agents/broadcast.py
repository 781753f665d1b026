"""Publishing events: every socket watching a session joins that session's group, so an
event reaches all of them, whichever process produced it (DESIGN 6). The domain publishes
here; the socket layer only joins groups and encodes what arrives."""

from __future__ import annotations

import logging
import uuid

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from agents.accounts import user_group
from agents.events import ServerEvent, event_to_layer, events_to_layer

logger = logging.getLogger(__name__)


def session_group(session_id: str | uuid.UUID) -> str:
    return f"session.{uuid.UUID(str(session_id)).hex}"


async def asend_control(session_id: str | uuid.UUID, message: dict[str, str]) -> None:
    """A control message (``{"action": "stop", "holder": …}``) to every socket watching the
    session, in every process: the one running the session's turn acts on it
    (``chat.control``), the others ignore it."""
    layer = get_channel_layer()
    if layer is None:
        return
    await layer.group_send(
        session_group(session_id),
        {"type": "session.control", "session_id": str(session_id), **message},
    )


async def apublish(session_id: str | uuid.UUID, *events: ServerEvent) -> None:
    """``events`` to every socket watching the session, in order; several go as one layer
    message (a turn's events that are ready together: one Redis round trip, not one each)."""
    layer = get_channel_layer()
    if layer is None or not events:
        return
    await layer.group_send(session_group(session_id), events_to_layer(events))


def publish(session_id: str | uuid.UUID, event: ServerEvent) -> None:
    """Sync entry point for services and commands; never raises into the caller."""
    try:
        async_to_sync(apublish)(session_id, event)
    except Exception:  # a dead Redis must not turn a finished compaction into a failure
        logger.exception("broadcast of %s to session %s failed", event.type, session_id)


async def apublish_to_owner(owner_id: int, event: ServerEvent) -> None:
    """An event about the user's list of chats (``SessionUpdated``, ``SessionDeleted``) to
    every socket of that user, whichever session each one watches."""
    layer = get_channel_layer()
    if layer is None:
        return
    await layer.group_send(user_group(owner_id), event_to_layer(event))


def publish_to_owner(owner_id: int, event: ServerEvent) -> None:
    """Sync entry point of ``apublish_to_owner``; never raises into the caller."""
    try:
        async_to_sync(apublish_to_owner)(owner_id, event)
    except Exception:
        logger.exception("broadcast of %s to user %s failed", event.type, owner_id)
