"""The compaction lease on the session row (DESIGN 5), held while a compaction runs.

A lease is short (``NETACLAW_COMPACTION_LEASE_SECONDS``, default 45 s) so a crashed
holder frees the session within a minute, and renewed by a heartbeat thread every third of
that while the summary is written, so a long multi-chunk summary never outlives it and a
second process never starts a duplicate.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.db import DatabaseError, connection

from agents import services
from agents.models import ChatSession

logger = logging.getLogger(__name__)


def lease_seconds() -> int:
    return max(1, int(settings.NETACLAW["COMPACTION_LEASE_SECONDS"]))


class Lease:
    """A held lease; ``lost`` once a renewal found another holder (or no row)."""

    def __init__(self, session: ChatSession, holder: str, seconds: int) -> None:
        self.session = session
        self.holder = holder
        self.seconds = seconds
        self.lost = False
        self.renewals = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._heartbeat, name=f"lease-{holder}", daemon=True)

    def _heartbeat(self) -> None:
        interval = max(self.seconds / 3, 0.1)
        try:
            while not self._stop.wait(interval):
                try:
                    renewed = services.compaction_lease_renew(
                        session=self.session, holder=self.holder, seconds=self.seconds
                    )
                except DatabaseError:
                    logger.warning("could not renew the compaction lease", exc_info=True)
                    continue  # try again at the next beat; the lease may still be ours
                if not renewed:
                    self.lost = True
                    return
                self.renewals += 1
        finally:
            connection.close()  # this thread's own connection

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def new_holder() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@contextmanager
def held_lease(session: ChatSession) -> Iterator[Lease | None]:
    """The session's lease for the block, renewed while it runs; None when another holder
    has it. Released at the end, whatever happens."""
    seconds = lease_seconds()
    holder = new_holder()
    if not services.compaction_lease_acquire(session=session, holder=holder, seconds=seconds):
        yield None
        return
    lease = Lease(session, holder, seconds)
    lease.start()
    try:
        yield lease
    finally:
        lease.stop()
        services.compaction_lease_release(session=session, holder=holder)
