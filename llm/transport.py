"""HTTP clients for the SDKs: one TLS context, and async clients kept per event loop.

Building the default client loads the system CA bundle every time (~20 ms); building it
around one shared ``SSLContext`` takes ~1 ms. An SSLContext is safe to share between
threads and loops.

An async client's connection pool is bound to the event loop it first ran on, and our
callers run on many loops (Daphne's, ``async_to_sync``'s, tests'). So async clients are
kept per loop and per channel: on Daphne's long-lived loop every model call of a channel
reuses its keep-alive connections instead of opening a TCP (and, to a provider, TLS)
connection per call. A loop's clients are closed when the loop shuts down (``asyncio.run``,
``async_to_sync`` and test runners finalize async generators before closing a loop; a
generator of the pool's waits there), and dropped once the loop has closed.
"""

from __future__ import annotations

import asyncio
import ssl
import weakref
from collections import OrderedDict
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Generic, Protocol, TypeVar

import httpx2

from .types import ChannelConfig

CLIENTS_PER_LOOP = 32  # channels in use at once in one process; the idle oldest is closed
CALLS_PER_CLIENT = 256  # calls in flight on one client before another is made


@lru_cache(maxsize=1)
def shared_ssl_context() -> ssl.SSLContext:
    """The default verifying context httpx2 would build, built once per process."""
    return httpx2.create_ssl_context()


class _Closable(Protocol):
    async def close(self) -> Any: ...


C = TypeVar("C", bound=_Closable)


@dataclass(slots=True)
class _Kept(Generic[C]):
    client: C
    in_use: int = 0
    evicted: bool = False


class AsyncClientPool(Generic[C]):
    """SDK clients by (event loop, channel config), each serving at most ``calls_per_client``
    calls at once; clients of at most ``per_loop`` channels per loop.

    The key is the whole config, key included, so a channel whose key or address changed
    gets new clients; the ones it replaced are closed once no call is using them. Over
    httpx2, calls had to be spread over clients of 16 each (its pool's bookkeeping grows with
    the square of the requests in flight: one client streaming 500 answers cost more CPU per
    call than a new client per call); aiohttp's does not, and one client is the cheaper there:
    1.9 ms per call with 400 in flight on one client against 2.1–2.8 ms over 25 of 16 each
    (measured interleaved in one process). A limit stays, for the pathological case.
    """

    def __init__(
        self,
        make: Callable[[ChannelConfig], C],
        per_loop: int = CLIENTS_PER_LOOP,
        calls_per_client: int = CALLS_PER_CLIENT,
    ):
        self._make = make
        self._per_loop = per_loop
        self._calls_per_client = calls_per_client
        self._loops: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, OrderedDict[ChannelConfig, list[_Kept[C]]]
        ] = weakref.WeakKeyDictionary()
        self._closers: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, AsyncGenerator[None, None]
        ] = weakref.WeakKeyDictionary()

    @asynccontextmanager
    async def client(self, config: ChannelConfig) -> AsyncIterator[C]:
        self._forget_closed_loops()
        loop = asyncio.get_running_loop()
        kept_here = self._loops.get(loop)
        if kept_here is None:
            kept_here = self._loops[loop] = OrderedDict()
            closer = self._closers[loop] = _close_at_loop_end(kept_here)
            await anext(closer)  # now the loop finalizes it when it shuts down
        clients = kept_here.get(config)
        if clients is None:
            clients = kept_here[config] = []
            await self._evict_beyond_limit(kept_here)
        kept_here.move_to_end(config)
        kept = min(clients, key=lambda k: k.in_use, default=None)
        if kept is None or kept.in_use >= self._calls_per_client:
            kept = _Kept(self._make(config))
            clients.append(kept)
        kept.in_use += 1
        try:
            yield kept.client
        finally:
            kept.in_use -= 1
            if kept.evicted and kept.in_use == 0:
                await kept.client.close()

    async def _evict_beyond_limit(
        self, kept_here: OrderedDict[ChannelConfig, list[_Kept[C]]]
    ) -> None:
        while len(kept_here) > self._per_loop:
            _config, oldest = kept_here.popitem(last=False)
            for kept in oldest:
                kept.evicted = True
                if kept.in_use == 0:
                    await kept.client.close()

    def _forget_closed_loops(self) -> None:
        """Drop the clients of loops that have ended (``asyncio.run``, ``async_to_sync``).

        The weak keys alone never let a loop go: its clients' connections refer to it. Most
        loops closed their clients as they shut down (``_close_at_loop_end``); a loop closed
        bare cannot close them any more: dropped, their sockets are closed when collected
        (aiohttp logs each such session as unclosed)."""
        for loop in [loop for loop in self._loops if loop.is_closed()]:
            del self._loops[loop]
            self._closers.pop(loop, None)

    def loops(self) -> int:
        """Event loops with clients kept (for tests and diagnostics)."""
        return len(self._loops)

    def kept(self) -> int:
        """Channels with clients kept for the running loop (for tests and diagnostics)."""
        return len(self._loops.get(asyncio.get_running_loop(), ()))

    def clients(self, config: ChannelConfig) -> int:
        """Clients kept for one channel on the running loop."""
        kept = self._loops.get(asyncio.get_running_loop())
        return len(kept.get(config) or ()) if kept is not None else 0


async def _close_at_loop_end(
    kept_here: OrderedDict[ChannelConfig, list[_Kept[C]]],
) -> AsyncGenerator[None, None]:
    """Closes a loop's clients politely while the loop can still run their close.

    A loop's ``shutdown_asyncgens`` (``asyncio.run``, ``asyncio.Runner``, asgiref's
    ``async_to_sync``) finalizes this generator before the loop closes; without it (a loop
    closed bare) nothing runs, and the clients are dropped with the loop, as before. The
    aiohttp transport's sessions would otherwise log "Unclosed client session" when
    collected."""
    try:
        yield
    finally:
        while kept_here:
            _config, clients = kept_here.popitem(last=False)
            for kept in clients:
                with suppress(Exception):  # a connection already gone: nothing to close
                    await kept.client.close()
