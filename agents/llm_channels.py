"""From a stored ModelChannel to the adapters' plain ChannelConfig (the key stays server-side)."""

from __future__ import annotations

from agents.models import ModelChannel
from llm import ChannelConfig


def channel_config(
    channel: ModelChannel, *, timeout_seconds: float | None = None, max_retries: int | None = None
) -> ChannelConfig:
    extra: dict[str, float | int] = {}
    if timeout_seconds is not None:
        extra["timeout_seconds"] = timeout_seconds
    if max_retries is not None:
        extra["max_retries"] = max_retries
    return ChannelConfig(
        provider=channel.provider,
        model=channel.model,
        api_key=channel.api_key,
        base_url=channel.base_url or None,
        context_window=channel.context_window,
        **extra,
    )
