"""Calling the provider adapters against the scripted server: configs, a request, its events."""

from __future__ import annotations

from typing import Any

from condense.types import Message
from llm import ChannelConfig, LLMRequest, Provider, StreamEvent, ToolSpec
from scripted_llm import ScriptedLLMServer

ALL_PROVIDERS = ["openai", "deepseek", "openai_compatible", "anthropic"]
TOOL = ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {}})
REQUEST = LLMRequest(
    messages=(Message("system", "Be terse."), Message("user", "Read a.txt please.")),
    tools=(TOOL,),
    max_tokens=300,
    temperature=0.3,
)


def make_config(server: ScriptedLLMServer, provider: str, **kw: Any) -> ChannelConfig:
    """A channel of ``provider`` on ``server``, failing fast (5 s, no retries)."""
    defaults: dict[str, Any] = {
        "model": "claude-sonnet-4-5" if provider == "anthropic" else "gpt-4o",
        "api_key": "test-key",
        "base_url": server.base_url_for(provider),
        "timeout_seconds": 5.0,
        "max_retries": 0,
    }
    return ChannelConfig(**{"provider": provider, **defaults, **kw})


async def events_of(provider: Provider, request: LLMRequest = REQUEST) -> list[StreamEvent]:
    return [event async for event in provider.stream(request)]
