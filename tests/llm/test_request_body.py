"""The adapter posts the same bytes the SDK's ``create()`` would, without its transform."""

from __future__ import annotations

import openai
import pytest

from bench.compaction_core import synthetic_conversation
from llm import get_provider
from llm.openai_adapter import _post_streaming, async_client, build_openai_params
from scripted_llm import Fail, Reply, ScriptedLLMServer
from tests.support.adapters import REQUEST, TOOL, events_of, make_config

LONG_REQUEST = REQUEST.__class__(
    messages=tuple(synthetic_conversation(120)), tools=(TOOL,), max_tokens=500, temperature=0.2
)


@pytest.mark.parametrize("provider", ["openai", "deepseek", "openai_compatible"])
@pytest.mark.parametrize("request_", [REQUEST, LONG_REQUEST], ids=["short", "120 messages"])
async def test_the_body_equals_what_create_sends(
    llm_server: ScriptedLLMServer, provider: str, request_
) -> None:
    config = make_config(llm_server, provider)
    llm_server.enqueue(Reply(text="via create"))
    llm_server.enqueue(Reply(text="via adapter"))
    async with async_client(config) as client:
        stream = await client.chat.completions.create(
            **build_openai_params(request_, config),
            stream=True,
            stream_options={"include_usage": True},
        )
        async with stream:
            async for _chunk in stream:
                pass
    await events_of(get_provider(config), request_)
    via_create, via_adapter = llm_server.requests
    assert via_adapter.body == via_create.body
    assert via_adapter.path == via_create.path
    for header in ("authorization", "content-type", "user-agent"):
        assert via_adapter.headers.get(header) == via_create.headers.get(header)


async def test_errors_still_map_to_the_sdks_exceptions(llm_server: ScriptedLLMServer) -> None:
    """Posting directly keeps the SDK's status mapping (our error translation builds on it)."""
    config = make_config(llm_server, "openai")
    llm_server.enqueue(Fail(status=401))
    async with async_client(config) as client:
        with pytest.raises(openai.AuthenticationError):
            await _post_streaming(client, {**build_openai_params(REQUEST, config), "stream": True})
