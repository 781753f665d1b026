"""The session lease: one holder runs a session's work at a time, in every process
(DESIGN 5; issue 23: one module and one mechanism for turns and compactions).

A lease is a row update (``services.lease_acquire``: free or expired → mine), short
(``NETACLAW_COMPACTION_LEASE_SECONDS``) so a holder that died frees the session soon, and
renewed by a heartbeat while the work runs: an asyncio task for async holders (a turn, a
job), a daemon thread for sync ones (the command, the admin action). The heartbeat also
carries stops: a stop flags the holder in the database (``services.session_stop``), the
next beat sees it and sets the lease's ``StopSignal``; a stop that reaches this process
sets it at once (``stop_here``). A thread heartbeat ends with its process: it stops
renewing once the main thread has ended, so an exiting process never keeps a session held.

A compaction runs under the lease of whoever asked for it — a turn's own lease for an
automatic compaction, a lease of its own otherwise — and marks itself with
``compacting_start``, so the token bar and a stop know a compaction runs.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import socket
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from channels.db import database_sync_to_async
from django.conf import settings
from django.db import DatabaseError, connection

from agents import services

logger = logging.getLogger(__name__)

TURN, COMPACT = "t", "c"  # what a lease was taken for: the prefix of its holder
assert services.COMPACTION_HOLDER_PREFIX == f"{COMPACT}/"
HEARTBEAT_SECONDS = 5.0  # at most: how late a stop that no message carried here is seen


# The run a job's leases belong to (``runs.worker`` sets it to the job's id): a lease whose
# process died is recognised by it, and taken back (``chat.recovery``).
current_tag: contextvars.ContextVar[str] = contextvars.ContextVar("lease_tag", default="")


def lease_seconds() -> float:
    return max(1.0, float(settings.NETACLAW["COMPACTION_LEASE_SECONDS"]))


def new_holder(kind: str, tag: str = "") -> str:
    """``kind/[tag:]host:pid:random`` — ``tag`` names the run it belongs to (a job), so a
    run started again after its process died can take its own lease over."""
    tag = tag or current_tag.get()
    prefix = f"{tag[:24]}:" if tag else ""
    return f"{kind}/{prefix}{socket.gethostname()[:32]}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def holder_kind(holder: str) -> str:
    return holder.partition("/")[0]


class StopSignal:
    """A stop asked for, seen from threads (``cancel``) and from event loops (``wait``);
    ``request`` may be called from any thread. ``interrupted``: not the user's stop but the
    runner's — its process is shutting down — so the work is recorded as interrupted (and
    run again elsewhere) rather than as stopped."""

    def __init__(self) -> None:
        self.cancel = threading.Event()
        self.interrupted = False
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []
        self._lock = threading.Lock()

    @property
    def requested(self) -> bool:
        return self.cancel.is_set()

    def request(self, *, interrupt: bool = False) -> None:
        if interrupt and not self.cancel.is_set():
            self.interrupted = True
        self.cancel.set()
        with self._lock:
            waiters = list(self._waiters)
        for loop, event in waiters:
            _set_in_loop(loop, event)

    async def wait(self) -> None:
        event = asyncio.Event()
        loop = asyncio.get_running_loop()
        with self._lock:
            self._waiters.append((loop, event))
        try:
            if not self.cancel.is_set():
                await event.wait()
        finally:
            with self._lock:
                self._waiters.remove((loop, event))


def _set_in_loop(loop: asyncio.AbstractEventLoop, event: asyncio.Event) -> None:
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        event.set()
    elif not loop.is_closed():
        try:
            loop.call_soon_threadsafe(event.set)
        except RuntimeError:  # closed meanwhile: nobody waits any more
            pass


# The leases held in this process, by session: a stop that arrives here reaches them at once.
_held: dict[str, SessionLease] = {}
_held_lock = threading.Lock()


class SessionLease:
    """A held lease: its heartbeat, its stop signal and its compaction marker."""

    def __init__(self, session_id: str, holder: str, seconds: float | None = None) -> None:
        self.session_id = str(session_id)
        self.holder = holder
        self.seconds = seconds or lease_seconds()
        self.stop = StopSignal()
        self.lost = False  # expired and taken by another holder: the work must not go on
        self.renewals = 0
        self._released = threading.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def kind(self) -> str:
        return holder_kind(self.holder)

    @property
    def interval(self) -> float:
        return min(max(self.seconds / 3, 0.05), HEARTBEAT_SECONDS)

    # --- taking it ------------------------------------------------------------------------

    @classmethod
    def acquire(
        cls, session_id: str, kind: str, *, tag: str = "", take_over: str = ""
    ) -> SessionLease | None:
        """The session's lease, not yet beating; None when another holder has it."""
        holder = new_holder(kind, tag)
        seconds = lease_seconds()
        # a compaction is marked from the moment it holds the session: a second one asked
        # for meanwhile is skipped (``in_progress``), not queued behind it
        also = {"compacting_holder": holder} if kind == COMPACT else None
        if not services.lease_acquire(
            session_id=session_id, holder=holder, seconds=seconds, also=also, take_over=take_over
        ):
            return None
        return cls(session_id, holder, seconds)

    @classmethod
    async def aacquire(
        cls, session_id: str, kind: str, *, tag: str = "", take_over: str = ""
    ) -> SessionLease | None:
        return await database_sync_to_async(cls.acquire)(
            session_id, kind, tag=tag, take_over=take_over
        )

    @classmethod
    async def aadopt(cls, session_id: str, holder: str) -> SessionLease | None:
        """A lease another process took for this work (the web process that stored the
        message), carried on here; None when it was lost meanwhile (expired and taken)."""
        lease = cls(str(session_id), holder)
        await database_sync_to_async(lease.beat)()
        return None if lease.lost else lease

    @classmethod
    async def await_free(
        cls, session_id: str, kind: str, *, tag: str = "", poll: float = 0.5
    ) -> SessionLease:
        """The session's lease once its holder has given it back (or its lease expired)."""
        while True:
            lease = await cls.aacquire(session_id, kind, tag=tag)
            if lease is not None:
                return lease
            await asyncio.sleep(poll)

    # --- keeping it -----------------------------------------------------------------------

    def beat(self) -> None:
        """One renewal; a stop flagged for this holder, or a lost lease, sets ``stop``."""
        try:
            state = services.lease_renew(
                session_id=self.session_id, holder=self.holder, seconds=self.seconds
            )
        except DatabaseError:  # try again at the next beat; the lease may still be ours
            logger.warning("could not renew the lease of %s", self.session_id, exc_info=True)
            return
        self.renewals += 1
        if state == "lost":
            self.lost = True
        if state != "held":
            self.stop.request()

    async def start(self) -> None:
        """Beat from this event loop, and be reachable by a stop that arrives in this
        process, until ``arelease``."""
        self._register()
        self._task = asyncio.get_running_loop().create_task(self._beat_async())

    def hold(self) -> None:
        """Beat from a daemon thread (a sync holder), until ``release`` or the end of the
        process's main thread."""
        self._register()
        threading.Thread(target=self._beat_thread, name=f"lease-{self.holder}", daemon=True).start()

    async def _beat_async(self) -> None:
        beat = database_sync_to_async(self.beat)
        while not self._released.is_set() and not self.lost:
            await asyncio.sleep(self.interval)
            if not self._released.is_set():
                await beat()

    def _beat_thread(self) -> None:
        try:
            while not self._released.wait(self.interval) and not self.lost:
                if not threading.main_thread().is_alive():  # the process is exiting
                    return
                self.beat()
        finally:
            connection.close()  # this thread's own connection

    def _register(self) -> None:
        with _held_lock:
            _held[self.session_id] = self

    def _unregister(self) -> None:
        self._released.set()
        with _held_lock:
            if _held.get(self.session_id) is self:
                del _held[self.session_id]

    # --- compacting under it ----------------------------------------------------------------

    @contextmanager
    def compacting(self) -> Iterator[bool]:
        """Mark the session as compacting under this lease for the block (False: a stop
        came first, or the lease is not ours any more). The mark is cleared by the
        write-back (``services.compacting_end``) or, whatever happens, at the end."""
        started = services.compacting_start(session_id=self.session_id, holder=self.holder)
        try:
            yield started
        finally:
            if started:
                try:
                    services.compacting_end(session_id=self.session_id, holder=self.holder)
                except DatabaseError:
                    logger.warning("could not clear the compaction mark", exc_info=True)

    def was_cancelled(self) -> bool:
        """A stop cancelled this holder's compaction (and announced it)."""
        return services.compaction_was_cancelled(session_id=self.session_id, holder=self.holder)

    # --- giving it back ---------------------------------------------------------------------

    def release(self, *, unless_queued: bool = False) -> bool:
        """Free the lease (sync). ``unless_queued``: see ``services.lease_release``; False
        then means a message waits queued (or the lease was not ours)."""
        self._unregister()
        try:
            return services.lease_release(
                session_id=self.session_id, holder=self.holder, unless_queued=unless_queued
            )
        except DatabaseError:  # it expires on its own (``lease_seconds``)
            logger.warning("could not release the lease of %s", self.session_id, exc_info=True)
            return False

    async def arelease(self, *, unless_queued: bool = False) -> bool:
        self._unregister()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        return await database_sync_to_async(self.release)(unless_queued=unless_queued)


def held_leases() -> list[SessionLease]:
    """Every lease this process holds now (a runner that drains interrupts their work)."""
    with _held_lock:
        return list(_held.values())


def held_here(session_id: str) -> SessionLease | None:
    """The lease this process holds for the session, if it holds one."""
    with _held_lock:
        return _held.get(str(session_id))


def stop_here(session_id: str, holder: str) -> bool:
    """A stop for ``holder`` reached this process: if its work runs here, it stops now."""
    local = held_here(session_id)
    if local is not None and local.holder == holder:
        local.stop.request()
        return True
    return False


@contextmanager
def held_lease(session_id: str, kind: str = COMPACT) -> Iterator[SessionLease | None]:
    """The session's lease for a sync block, beating from a thread; None when another
    holder has it. Released at the end, whatever happens."""
    lease = SessionLease.acquire(str(session_id), kind)
    if lease is None:
        yield None
        return
    lease.hold()
    try:
        yield lease
    finally:
        lease.release()
