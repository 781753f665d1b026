"""A stream of events, gathered into one answer.

The blocking streamed call (``Provider.complete_streaming``) reads the same events a chat
turn's stream yields and must give back what ``complete`` gives: the text, the tool
calls, the usage and the stop reason. Pure: no SDK, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from condense.types import ToolCall

from .types import Completion, StreamEnd, StreamEvent, TextDelta, ToolCallReady, UsageReport


def collect(events: Iterable[StreamEvent], on_text: Callable[[str], None]) -> Completion:
    """The answer ``events`` make up; ``on_text`` is told each piece of text as it comes.
    An adapter's stream always ends with ``StreamEnd`` (a cut stream raises instead)."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    usage: UsageReport | None = None
    stop = "end_turn"
    for event in events:
        if isinstance(event, TextDelta):
            texts.append(event.text)
            on_text(event.text)
        elif isinstance(event, ToolCallReady):
            calls.append(event.call)
        elif isinstance(event, UsageReport):
            usage = event
        elif isinstance(event, StreamEnd):
            stop = event.stop_reason
    return Completion(text="".join(texts), tool_calls=tuple(calls), usage=usage, stop_reason=stop)
