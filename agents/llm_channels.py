"""From a stored ModelChannel to the adapters' plain ChannelConfig (the key stays server-side)."""

from __future__ import annotations

from dataclasses import replace

from agents.models import ModelChannel
from llm import PROVIDERS, ChannelConfig, ProviderName

# the stored provider (a model choice) as the adapters' literal name
PROVIDER_NAMES: dict[str, ProviderName] = {name: name for name in PROVIDERS}


def channel_config(
    channel: ModelChannel, *, timeout_seconds: float | None = None, max_retries: int | None = None
) -> ChannelConfig:
    config = ChannelConfig(
        provider=PROVIDER_NAMES[channel.provider],
        model=channel.model,
        api_key=channel.api_key,
        base_url=channel.base_url or None,
        context_window=channel.context_window,
    )
    if timeout_seconds is not None:
        config = replace(config, timeout_seconds=timeout_seconds)
    if max_retries is not None:
        config = replace(config, max_retries=max_retries)
    return config
