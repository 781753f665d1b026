"""When the chat page's socket re-renders the answer that is streaming (issue 16 item 6).

The page shows the answer as Markdown while it streams, rendered on the server like the
stored answer will be, so nothing jumps when it arrives. Rendering the whole text again on
every delta would cost O(n²) for an answer of n characters, so a socket renders at most
every ``interval`` seconds — and less often while a render takes long: the next render waits
``slowdown`` times as long as the last one took, which keeps rendering under
1/``slowdown`` of the event loop whatever the answer's size. A render that is not due yet
is done later (the caller schedules ``due_in``), so the last words never wait for another
delta. Past ``max_chars`` the answer is shown as plain text and only appended to.

Pure bookkeeping: the caller (``ChatHtmlConsumer``) supplies the clock and does the I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Action = Literal["render", "later", "wait", "plain", "append"]


@dataclass
class StreamPreview:
    interval: float = 0.12
    slowdown: float = 8.0
    max_chars: int = 30_000
    text: str = ""
    generation: int = 0  # bumped by reset: a render planned before it is stale
    plain: bool = False
    _next_at: float = field(default=0.0, repr=False)
    _pending: bool = field(default=False, repr=False)

    def add(self, text: str, now: float) -> Action:
        """Take a delta. ``render``: render the whole text now; ``later``: render it in
        ``due_in`` seconds; ``wait``: a render is planned already; ``plain``: replace the
        preview with the whole text as plain text, from now on; ``append``: append the
        delta as plain text."""
        self.text += text
        if self.plain:
            return "append"
        if len(self.text) > self.max_chars:
            self.plain = True
            self._pending = False
            return "plain"
        if now >= self._next_at:
            return "render"
        if self._pending:
            return "wait"
        self._pending = True
        return "later"

    def due_in(self, now: float) -> float:
        return max(0.0, self._next_at - now)

    def rendered(self, started: float, finished: float) -> None:
        """A render of the whole text ran from ``started`` to ``finished``."""
        self._pending = False
        self._next_at = finished + max(self.interval, self.slowdown * (finished - started))

    def reset(self) -> None:
        """The streamed answer was stored (or the turn ended): start afresh."""
        self.text = ""
        self.plain = False
        self._pending = False
        self._next_at = 0.0
        self.generation += 1
