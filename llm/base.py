"""The one interface every provider adapter implements.

``stream`` serves chat turns (text shows up as it is generated); ``complete`` is a
plain blocking call for code that already runs in a worker thread (the auxiliary
summarizer); ``acomplete`` is ``stream`` collected, for async callers that want the
whole answer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from compaction.core.types import ToolCall

from .errors import LLMError
from .types import (
    ChannelConfig,
    Completion,
    LLMRequest,
    StreamEnd,
    StreamEvent,
    TextDelta,
    ToolCallReady,
    UsageReport,
)


@runtime_checkable
class Provider(Protocol):
    config: ChannelConfig

    def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        """Events of one call: TextDelta* / ToolCallReady*, UsageReport?, then StreamEnd.

        Raises LLMError (while iterating) on any provider failure.
        """
        ...

    async def acomplete(self, request: LLMRequest) -> Completion: ...

    def complete(self, request: LLMRequest) -> Completion:
        """Blocking, non-streamed call. Raises LLMError."""
        ...


async def collect_stream(events: AsyncIterator[StreamEvent]) -> Completion:
    """Fold a stream of events into a Completion."""
    parts: list[str] = []
    calls: list[ToolCall] = []
    usage: UsageReport | None = None
    stop_reason: str | None = None
    async for event in events:
        if isinstance(event, TextDelta):
            parts.append(event.text)
        elif isinstance(event, ToolCallReady):
            calls.append(event.call)
        elif isinstance(event, UsageReport):
            usage = event
        elif isinstance(event, StreamEnd):
            stop_reason = event.stop_reason
    if stop_reason is None:
        raise LLMError("invalid_response", "The model stream ended without a stop reason.")
    return Completion(
        text="".join(parts), tool_calls=tuple(calls), usage=usage, stop_reason=stop_reason
    )
