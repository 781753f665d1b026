"""Publishing events: every socket watching a session joins that session's group, so an
event reaches all of them, whichever process produced it (DESIGN 6). The domain publishes
here; the socket layer only joins groups and encodes what arrives."""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections.abc import Callable, Coroutine
from typing import Any

import redis
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from agents import replay
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


# A channel layer that drops (a Redis restart) is tried again for about 3 s, then the events
# go unheard — the work goes on and stores them; sockets reconnect and resume (issue 27).
LAYER_ATTEMPTS = 5

# How long a thread waits for the process's event loop to take an event (issue 24: a
# thread that hops to a loop that has stopped must never wait forever).
PUBLISH_TIMEOUT_SECONDS = 10.0

# The event loop of this process's main thread (Daphne's, the worker's), once it has
# published: where a thread's events go, since the channel layer's connections live there.
_home_loop: asyncio.AbstractEventLoop | None = None


def _remember_home_loop() -> None:
    global _home_loop
    if threading.current_thread() is threading.main_thread():
        _home_loop = asyncio.get_running_loop()


async def apublish(session_id: str | uuid.UUID, *events: ServerEvent) -> None:
    """``events`` to every socket watching the session, in order; several go as one layer
    message (a turn's events that are ready together: one Redis round trip, not one each)."""
    layer = get_channel_layer()
    if layer is None or not events:
        return
    _remember_home_loop()
    await replay.record(str(session_id), events)  # before any socket can see them live
    message = events_to_layer(events)
    for attempt in range(LAYER_ATTEMPTS):
        try:
            await layer.group_send(session_group(session_id), message)
            return
        except (redis.RedisError, ConnectionError, OSError):  # a Redis restart: a moment
            if attempt == LAYER_ATTEMPTS - 1:
                logger.warning("the channel layer is down: events to %s dropped", session_id)
                return
            await asyncio.sleep(0.2 * 2**attempt)


def publish(session_id: str | uuid.UUID, *events: ServerEvent) -> None:
    """Sync entry point for services, threads and commands; never raises into the caller
    and never waits more than ``PUBLISH_TIMEOUT_SECONDS`` (``_hop``)."""
    if events:
        _hop(lambda: apublish(session_id, *events), f"session {session_id}")


def _hop(make: Callable[[], Coroutine[Any, Any, None]], where: str) -> None:
    """Run the coroutine ``make`` builds from sync code: in a process whose main loop
    publishes, through that loop (the channel layer's connections live there), waiting at
    most ``PUBLISH_TIMEOUT_SECONDS``; once that loop has stopped, not at all (the process is
    exiting); in a process without one (a command), on a loop of its own (asgiref's)."""
    loop = _home_loop
    try:
        if loop is None or loop.is_closed():

            async def run() -> None:
                await make()

            async_to_sync(run)()
            return
        if not loop.is_running():
            logger.warning("event loop gone: events to %s dropped", where)
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:  # called from the loop's own thread: it cannot wait for itself
            loop.create_task(make())
            return
        future = asyncio.run_coroutine_threadsafe(make(), loop)
        try:
            future.result(timeout=PUBLISH_TIMEOUT_SECONDS)
        except TimeoutError:
            future.cancel()
            logger.warning("publishing to %s timed out: events dropped", where)
    except Exception:  # a dead Redis must not turn a finished compaction into a failure
        logger.exception("broadcast to %s failed", where)


async def asend_to(channel_name: str, *events: ServerEvent) -> None:
    """``events`` to one socket (its channel name): a reply meant for the socket that asked,
    from whichever process runs the work."""
    layer = get_channel_layer()
    if layer is None or not events or not channel_name:
        return
    await layer.send(channel_name, events_to_layer(events))


async def apublish_to_owner(owner_id: int, event: ServerEvent) -> None:
    """An event about the user's list of chats (``SessionUpdated``, ``SessionDeleted``) to
    every socket of that user, whichever session each one watches."""
    layer = get_channel_layer()
    if layer is None:
        return
    await layer.group_send(user_group(owner_id), event_to_layer(event))


def publish_to_owner(owner_id: int, event: ServerEvent) -> None:
    """Sync entry point of ``apublish_to_owner``; never raises into the caller."""
    _hop(lambda: apublish_to_owner(owner_id, event), f"user {owner_id}")
