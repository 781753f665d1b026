"""A server process's memory under large history reads: one full garbage collection every
``HISTORY_CHARS_PER_COLLECTION`` characters of history served (README "Running in
production").

A sent response is still reachable from a reference cycle — Django's ASGI handler keeps it
in the frame a client's disconnect traceback holds, DRF puts it into its own
``renderer_context`` — until the collector's oldest generation runs, which a server process
does rarely (``netaclaw.startup_heap``: young collections every 10,000 allocations, the
start-up heap frozen). Large pages read over and over then piled up (one process: +1 GiB,
dropping to 226 MiB on one ``gc.collect()``). Collecting after every few megabytes of pages
keeps a process flat; with the heap frozen a collection walks only what was made since
start-up (8–16 ms). Measured by ``tests/api/test_message_pages_memory.py``.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterable

from agents.models import Message

# four of the largest history pages (``web.api.MESSAGES_PAGE_CHARS``)
HISTORY_CHARS_PER_COLLECTION = 8_000_000


class GarbageBudget:
    """A full collection once every ``budget`` characters spent (from any thread)."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.pending = 0
        self._lock = threading.Lock()

    def spend(self, chars: int) -> bool:
        """Count ``chars``; collect when the budget is spent. True when it collected."""
        with self._lock:
            self.pending += chars
            due = self.pending >= self.budget
            if due:
                self.pending = 0
        if due:
            gc.collect()
        return due


_history = GarbageBudget(HISTORY_CHARS_PER_COLLECTION)


def history_served(messages: Iterable[Message]) -> None:
    """The REST API served these messages' text: spend it from the process's budget."""
    _history.spend(sum(len(m.content) for m in messages))
