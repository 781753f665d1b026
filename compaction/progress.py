"""The summary, live (issue 17 item 12): ``compaction_progress`` while the auxiliary model
writes.

Each summary request streams (``AuxiliaryClient.summarize`` with ``on_text``); its text so
far goes out as ``CompactionProgress`` at most once per ``interval`` for the whole
compaction (requests of a long middle stream several at a time: the chunk whose text
changed longest ago goes first), and each request's whole text once it has ended. The
text is what the summary checks keep of it (reasoning blocks stripped), so the last event
of the last request is the summary that is stored.

Events are published from the compaction's own thread only: the core writes the parts of a
long middle in helper threads of its own, which have no way to the channel layer's event
loop (``asgiref`` hands a thread started outside ``sync_to_async`` a new loop per call, and
the in-memory layer's queues belong to Daphne's). Their text waits until the compaction's
thread next streams or ends a request, and goes out then.

``check`` runs on every piece of text: the service's stop and lost-lease check, so a stop
cuts a summary mid-stream instead of after it.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

from agents.events import CompactionProgress
from condense import SummaryRequest
from condense.checks import strip_reasoning

# at most 10 events a second while text streams (plus the whole text of each request)
PROGRESS_INTERVAL_SECONDS = 0.1


class SummaryStream:
    """The ``compaction_progress`` events of one compaction; made in the thread that
    publishes them."""

    def __init__(
        self,
        session_id: str,
        publish: Callable[[CompactionProgress], None],
        *,
        check: Callable[[], None] = lambda: None,
        interval: float = PROGRESS_INTERVAL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.session_id = session_id
        self._publish = publish
        self._check = check
        self._interval = interval
        self._clock = clock
        self._owner = threading.get_ident()
        self._lock = threading.Lock()
        self._texts: dict[int, list[str]] = {}  # chunk → the pieces of its current attempt
        self._changed: dict[int, None] = {}  # chunks with unpublished text, oldest first
        self._chunks = 1
        self._next_at = -math.inf

    def writer(self, request: SummaryRequest) -> Callable[[str], None]:
        """The ``on_text`` of one request (a retry's text starts over)."""
        chunk = request.chunk_index + 1
        with self._lock:
            self._texts[chunk] = []
            self._chunks = max(1, request.chunk_count)

        def on_text(piece: str) -> None:
            self._check()
            with self._lock:
                self._texts[chunk].append(piece)
                self._changed.setdefault(chunk, None)
            self._pump(everything=False)

        return on_text

    def finished(self) -> None:
        """A request has ended: every text not yet published goes out now (from the
        compaction's thread; a helper's waits for it)."""
        self._pump(everything=True)

    def _pump(self, *, everything: bool) -> None:
        if threading.get_ident() != self._owner:
            return
        now = self._clock()
        with self._lock:
            if not self._changed or (not everything and now < self._next_at):
                return
            chunks = list(self._changed) if everything else [next(iter(self._changed))]
            for chunk in chunks:
                del self._changed[chunk]
            events = [
                CompactionProgress(
                    self.session_id,
                    strip_reasoning("".join(self._texts[chunk])),
                    chunk,
                    self._chunks,
                )
                for chunk in chunks
            ]
            self._next_at = now + self._interval
        for event in events:
            self._publish(event)
