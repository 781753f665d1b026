"""The API key reaches the provider's auth headers and nowhere else.

Not in LLMError text, not in a formatted traceback (SDK exceptions carry the
request and raw body, so they are not chained), not in any log line the SDKs or
httpx2 write at DEBUG level.
"""

from __future__ import annotations

import logging
import traceback

import pytest

from condense.types import Message
from llm import ChannelConfig, LLMError, LLMRequest, get_provider
from scripted_llm import Disconnect, Fail, Hang, NonJSON, ScriptedLLMServer

SECRET = "sk-secret-for-leak-tests-9f8e7d6c5b4a"
REQUEST = LLMRequest(messages=(Message("user", "hi"),), max_tokens=16)
ECHO = {"error": {"type": "authentication_error", "message": f"Bad key {SECRET}"}}


def make_config(server: ScriptedLLMServer, wire: str) -> ChannelConfig:
    return ChannelConfig(
        provider=wire,  # type: ignore[arg-type]
        model="m",
        api_key=SECRET,
        base_url=server.base_url_for(wire),
        timeout_seconds=0.3,
        max_retries=0,
    )


def everything_about(error: LLMError) -> str:
    return "\n".join(
        [str(error), repr(error), *map(str, error.args), *traceback.format_exception(error)]
    )


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
@pytest.mark.parametrize(
    "action", [Fail(status=401, body=ECHO), Fail(status=500), NonJSON(), Disconnect(), Hang(5)]
)
async def test_key_absent_from_errors_tracebacks_and_debug_logs(
    llm_server: ScriptedLLMServer,
    caplog: pytest.LogCaptureFixture,
    wire: str,
    action: object,
) -> None:
    caplog.set_level(logging.DEBUG)
    provider = get_provider(make_config(llm_server, wire))
    llm_server.enqueue(action, action)  # type: ignore[arg-type]
    errors: list[LLMError] = []
    with pytest.raises(LLMError) as streamed:
        async for _ in provider.stream(REQUEST):
            pass
    errors.append(streamed.value)
    with pytest.raises(LLMError) as completed:
        provider.complete(REQUEST)
    errors.append(completed.value)
    assert caplog.records, "DEBUG logging should have captured the SDKs' request logs"
    assert SECRET not in caplog.text
    for error in errors:
        assert SECRET not in everything_about(error)
        assert error.__cause__ is None and error.__suppress_context__


def test_the_key_is_sent_where_it_belongs(llm_server: ScriptedLLMServer) -> None:
    for wire in ("openai", "anthropic"):
        get_provider(make_config(llm_server, wire)).complete(REQUEST)
    openai_request, anthropic_request = llm_server.requests
    assert openai_request.headers["authorization"] == f"Bearer {SECRET}"
    assert anthropic_request.headers["x-api-key"] == SECRET
    assert SECRET not in repr(make_config(llm_server, "openai"))
    assert SECRET not in repr(get_provider(make_config(llm_server, "openai")))
