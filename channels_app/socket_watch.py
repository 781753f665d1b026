"""Open sockets whose credentials stopped holding are closed, whatever ended them.

A socket's user is checked when it opens; the signals of ``agents.accounts`` close it at
once when its user's password changes or the user is deactivated or deleted through the
ORM in a process whose channel layer reaches it. Everything else went unnoticed — a queryset
``update(is_active=False)``, a command run beside a server on the in-memory layer, a token
that simply expired (issue 27 item 9). So each event loop (one per Daphne process) keeps the
credentials of its open sockets and checks them all every
``NETACLAW["SOCKET_RECHECK_SECONDS"]`` with one query per kind
(``agents.accounts.revoked_credentials``); a socket whose credentials no longer hold gets
``user.revoked`` on its own channel, as from the signals, and closes with 4401.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings

from agents import accounts

logger = logging.getLogger(__name__)

DEFAULT_RECHECK_SECONDS = 10.0


def recheck_seconds() -> float:
    return float(settings.NETACLAW.get("SOCKET_RECHECK_SECONDS", DEFAULT_RECHECK_SECONDS))


class SocketWatch:
    """The open sockets of one event loop: channel name → (credential, channel layer)."""

    def __init__(self) -> None:
        self.sockets: dict[str, tuple[accounts.Credential, Any]] = {}
        self._task: asyncio.Task[None] | None = None

    def add(self, channel_name: str, credential: accounts.Credential, layer: Any) -> None:
        self.sockets[channel_name] = (credential, layer)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    def discard(self, channel_name: str) -> None:
        self.sockets.pop(channel_name, None)
        if not self.sockets and self._task is not None:
            self._task.cancel()  # nothing left to watch: no task outlives the loop's sockets
            self._task = None

    async def check(self) -> int:
        """Close the sockets whose credentials no longer hold; how many."""
        snapshot = dict(self.sockets)
        if not snapshot:
            return 0
        revoked = await database_sync_to_async(accounts.revoked_credentials)(
            {credential for credential, _ in snapshot.values()}
        )
        closed = 0
        for name, (credential, layer) in snapshot.items():
            if credential in revoked and self.sockets.get(name, (None,))[0] == credential:
                self.sockets.pop(name, None)
                await layer.send(name, {"type": accounts.USER_REVOKED})
                closed += 1
        return closed

    async def _run(self) -> None:
        while self.sockets:
            await asyncio.sleep(recheck_seconds())
            try:
                await self.check()
            except asyncio.CancelledError:
                raise
            except Exception:  # a database hiccup: the next round checks again
                logger.warning("could not check the credentials of open sockets", exc_info=True)


_WATCHES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, SocketWatch] = (
    weakref.WeakKeyDictionary()
)


def socket_watch() -> SocketWatch:
    """The watch of the running event loop."""
    loop = asyncio.get_running_loop()
    watch = _WATCHES.get(loop)
    if watch is None:
        watch = _WATCHES[loop] = SocketWatch()
    return watch
