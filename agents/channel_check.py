"""A model channel as its page explains it: the context window the meter and compaction count
with and where that figure comes from, and a connection test before the first chat.

The test asks the server for its models (``GET /v1/models`` through the official SDK,
``llm.Provider.list_models``) with a short timeout and no retry, and reports what happened
in words a person can act on: the reason, the provider's HTTP status and its own message when
it sent one (``agents.reasons.TurnFailure``) — never an exception's class name, never the key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from agents.llm_channels import channel_config
from agents.models import ModelChannel
from agents.reasons import TurnFailure
from llm import DEFAULT_CONTEXT_WINDOW, LLMError, get_provider, known_model_window

WindowSource = Literal["channel", "known_model", "default"]
TestOutcome = Literal["ok", "no_listing", "failed"]

CHANNEL_TEST_TIMEOUT_SECONDS = 10.0
# The server answered, but has no model list there: a wrong base URL (Ollama's and vLLM's
# end in /v1) or a server that does not offer the listing.
_NO_LISTING_STATUSES = frozenset({404, 405})


@dataclass(frozen=True, slots=True)
class WindowInUse:
    """``tokens`` as ``agents.meter.context_window`` counts them; ``source``: set on the
    channel, the table of known models (``llm.windows``), or the fallback for an unknown
    model (``llm.DEFAULT_CONTEXT_WINDOW``)."""

    tokens: int
    source: WindowSource

    @property
    def tokens_text(self) -> str:
        """As the chat page prints token counts, in every language: 128,000."""
        return f"{self.tokens:,}"


def window_in_use(channel: ModelChannel) -> WindowInUse:
    if channel.context_window:
        return WindowInUse(channel.context_window, "channel")
    known = known_model_window(channel.model)
    if known is not None:
        return WindowInUse(known, "known_model")
    return WindowInUse(DEFAULT_CONTEXT_WINDOW, "default")


@dataclass(frozen=True, slots=True)
class ChannelTest:
    """What a connection test found. ``models``: the ids the server lists (first page)."""

    outcome: TestOutcome
    model: str
    models: tuple[str, ...] = ()
    failure: TurnFailure | None = None
    status: int | None = None  # the HTTP status of a ``no_listing`` answer

    @property
    def model_listed(self) -> bool:
        return self.model in self.models


def channel_test(
    *, channel: ModelChannel, timeout_seconds: float = CHANNEL_TEST_TIMEOUT_SECONDS
) -> ChannelTest:
    """Blocking: list the server's models with the channel's own settings and key."""
    config = channel_config(channel, timeout_seconds=timeout_seconds, max_retries=0)
    try:
        models = get_provider(config).list_models()
    except LLMError as exc:
        if exc.status in _NO_LISTING_STATUSES:
            return ChannelTest("no_listing", channel.model, status=exc.status)
        return ChannelTest("failed", channel.model, failure=TurnFailure.of(exc.reason, str(exc)))
    return ChannelTest("ok", channel.model, models=models)
