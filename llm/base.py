"""The one interface every provider adapter implements.

``stream`` serves chat turns (text shows up as it is generated); ``complete`` is a
plain blocking call for code that already runs in a worker thread (the auxiliary
summarizer); ``complete_streaming`` the same call streamed, so a worker thread can show
the text as it is written (the summary, live); ``list_models`` a blocking look at the
server (a channel's connection test).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from typing import Protocol, runtime_checkable

from .types import ChannelConfig, Completion, LLMRequest, StreamEvent


@runtime_checkable
class Provider(Protocol):
    config: ChannelConfig

    def stream(self, request: LLMRequest) -> AsyncGenerator[StreamEvent]:
        """Events of one call: TextDelta* / ToolCallReady*, UsageReport?, then StreamEnd.

        Raises LLMError (while iterating) on any provider failure.
        """
        ...

    def complete(self, request: LLMRequest) -> Completion:
        """Blocking, non-streamed call. Raises LLMError."""
        ...

    def complete_streaming(self, request: LLMRequest, on_text: Callable[[str], None]) -> Completion:
        """Blocking, streamed call: ``on_text`` gets each piece of text as it arrives, and
        the whole answer comes back as ``complete`` gives it (stop reason and usage read
        from the stream). Raises LLMError; an exception of ``on_text`` ends the call and
        propagates unchanged (a caller's way to cut the stream)."""
        ...

    def list_models(self) -> tuple[str, ...]:
        """Blocking: the ids of the models the server offers (``GET /v1/models``, the first
        page), for a channel's connection test. Raises LLMError."""
        ...
