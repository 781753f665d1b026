"""The one interface every provider adapter implements.

``stream`` serves chat turns (text shows up as it is generated); ``complete`` is a
plain blocking call for code that already runs in a worker thread (the auxiliary
summarizer).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from .types import ChannelConfig, Completion, LLMRequest, StreamEvent


@runtime_checkable
class Provider(Protocol):
    config: ChannelConfig

    def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        """Events of one call: TextDelta* / ToolCallReady*, UsageReport?, then StreamEnd.

        Raises LLMError (while iterating) on any provider failure.
        """
        ...

    def complete(self, request: LLMRequest) -> Completion:
        """Blocking, non-streamed call. Raises LLMError."""
        ...
