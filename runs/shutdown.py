"""SIGTERM to a web process that runs its own jobs (``make run``; issue 24 item 3).

Daphne runs on Twisted's asyncio reactor, which on SIGTERM (and Ctrl+C) fires its
"before shutdown" triggers and waits for them before it stops the loop. The in-process
runner drains there: running turns finish within ``NETACLAW_DRAIN_SECONDS`` (or record their
interruption), a running compaction finishes or writes nothing. A web process of the worker
runner runs no job and needs no drain."""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import Any

from django.conf import settings

from runs.runner import in_process, uses_workers

logger = logging.getLogger(__name__)


def install_drain_on_shutdown() -> bool:
    """Register the drain with the reactor Daphne runs us on; False when there is none
    (the application loaded by something else: tests, another server) or nothing to drain."""
    reactor = sys.modules.get("twisted.internet.reactor")
    if reactor is None or uses_workers():
        return False
    reactor.addSystemEventTrigger("before", "shutdown", _drain)
    return True


def _drain() -> Any:
    from twisted.internet.defer import Deferred  # Twisted is Daphne's; loaded with it

    grace = float(settings.NETACLAW["DRAIN_SECONDS"])
    logger.info("shutting down: draining the running jobs (at most %.0f s)", grace)
    return Deferred.fromFuture(asyncio.ensure_future(in_process().drain(grace)))
