"""The in-memory channel layer of the zero-setup default (``make run``), without silent loss.

Channels' ``InMemoryChannelLayer`` holds 100 messages per channel unless told otherwise, and
its ``group_send`` drops a message that does not fit without a word: under a burst of 300
chat turns one socket got 175 of its 300 ``turn_done``, and a socket watching 200 sessions
got 10 of 200 (issue 14). This layer is sized in ``settings.CHANNEL_LAYERS`` and, past that
size, applies back-pressure instead of dropping: a ``group_send`` waits for room in a full
socket queue, so the turn that publishes slows to that socket's pace. Only a socket that
has read nothing for ``send_timeout`` seconds loses a message, and that is logged as an
error, not swallowed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from copy import deepcopy
from typing import Any

from channels.exceptions import ChannelFull
from channels.layers import InMemoryChannelLayer as ChannelsInMemoryChannelLayer

logger = logging.getLogger(__name__)


class InMemoryChannelLayer(ChannelsInMemoryChannelLayer):
    def __init__(self, *, send_timeout: float = 10.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if self.capacity < 2:
            raise ValueError("the in-memory layer needs a capacity of at least 2")
        self.send_timeout = send_timeout

    async def send(self, channel: str, message: dict[str, Any]) -> None:
        """Channels' ``send``, but a full channel is waited on (up to ``send_timeout``)
        before ``ChannelFull`` is raised."""
        assert isinstance(message, dict), "message is not a dict"
        self.require_valid_channel_name(channel)
        assert "__asgi_channel__" not in message
        queue = self.channels.setdefault(channel, asyncio.Queue(maxsize=self.get_capacity(channel)))
        item = (time.time() + self.expiry, deepcopy(message))
        try:
            queue.put_nowait(item)
            return
        except asyncio.QueueFull:
            pass
        try:
            async with asyncio.timeout(self.send_timeout):
                await queue.put(item)
        except TimeoutError:
            raise ChannelFull(channel) from None
        # receive() forgets a queue it has emptied; one that was full a moment ago holds at
        # least capacity - 1 messages, so it is still the channel's queue — keep it so.
        self.channels.setdefault(channel, queue)

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        assert isinstance(message, dict), "Message is not a dict"
        self.require_valid_group_name(group)
        self._clean_expired()
        members = list(self.groups.get(group, {}))
        results = await asyncio.gather(
            *(self.send(channel, message) for channel in members), return_exceptions=True
        )
        for channel, result in zip(members, results, strict=True):
            if isinstance(result, ChannelFull):
                logger.error(
                    "dropped a %s event for %s: its consumer read nothing for %s s",
                    message.get("event_type", message.get("type")),
                    channel,
                    self.send_timeout,
                )
            elif isinstance(result, BaseException):
                raise result
