"""Message order without a counter on the session row (DESIGN 1).

A message's ``position`` is a microsecond timestamp made strictly increasing within the
process, so storing a message is one plain ``INSERT`` with no reservation on the session
row. A session's turns run one at a time (the turn lease, ``chat.control``), so its own
messages are ordered by the clock of the process that runs them, and a process taking the
session over first moves its clock past the session's last position (``advance_past``); a
summary takes the position of the first message it replaces.
"""

from __future__ import annotations

import threading
import time

_lock = threading.Lock()
_last = 0


def next_positions(count: int = 1) -> int:
    """Reserve ``count`` consecutive positions after every position handed out so far in
    this process and after now; returns the first."""
    global _last
    if count < 1:
        raise ValueError("count must be at least 1")
    with _lock:
        first = max(time.time_ns() // 1000, _last + 1)
        _last = first + count - 1
    return first


def advance_past(position: int | None) -> None:
    """Hand out only positions after ``position`` from now on: a process that takes over a
    session's turn from another continues after that process's last message, whatever
    the two clocks say."""
    global _last
    if position is None:
        return
    with _lock:
        _last = max(_last, position)
