"""Pick the adapter for a channel: one for the Anthropic wire, one for the OpenAI wire."""

from __future__ import annotations

from .anthropic_adapter import AnthropicProvider
from .base import Provider
from .openai_adapter import OpenAIProvider
from .types import ChannelConfig


def get_provider(config: ChannelConfig) -> Provider:
    """Cheap (no network; SDK clients are made per call), so callers may make one per turn."""
    if config.provider == "anthropic":
        return AnthropicProvider(config)
    return OpenAIProvider(config)
