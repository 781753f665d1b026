"""The real SDKs, through our adapters, against the scripted server (nothing patched)."""

from __future__ import annotations

import asyncio
import time

import pytest

from condense.types import Message, ToolCall
from llm import (
    Completion,
    LLMRequest,
    StreamEnd,
    TextDelta,
    ToolCallReady,
    UsageReport,
    get_provider,
)
from scripted_llm import Empty, Reply, ScriptedLLMServer, default_input_tokens
from tests.support.adapters import ALL_PROVIDERS, REQUEST, TOOL, events_of, make_config


async def collected(provider: object, request: LLMRequest = REQUEST) -> Completion:
    """One streamed call folded the way the ReAct loop folds it (``agents.runtime``)."""
    events = await events_of(provider, request)
    end = events[-1]
    assert isinstance(end, StreamEnd)
    usage = [e for e in events if isinstance(e, UsageReport)]
    return Completion(
        text="".join(e.text for e in events if isinstance(e, TextDelta)),
        tool_calls=tuple(e.call for e in events if isinstance(e, ToolCallReady)),
        usage=usage[-1] if usage else None,
        stop_reason=end.stop_reason,
    )


@pytest.mark.parametrize("provider", ALL_PROVIDERS)
async def test_streamed_text_and_usage(llm_server: ScriptedLLMServer, provider: str) -> None:
    llm_server.enqueue(Reply(text="Hello there, friend!", chunk_size=5))
    events = await events_of(get_provider(make_config(llm_server, provider)))
    body = llm_server.requests[0].body
    assert events == [
        TextDelta("Hello"),
        TextDelta(" ther"),
        TextDelta("e, fr"),
        TextDelta("iend!"),
        UsageReport(default_input_tokens(body), len("Hello there, friend!") // 4 + 1),
        StreamEnd("end_turn"),
    ]


@pytest.mark.parametrize("provider", ALL_PROVIDERS)
async def test_streamed_tool_calls_are_reassembled(
    llm_server: ScriptedLLMServer, provider: str
) -> None:
    calls = [
        ToolCall("call_1", "read_file", '{"path": "a.txt", "encoding": "utf-8"}'),
        ToolCall("call_2", "read_file", '{"path": "b.txt"}'),
    ]
    llm_server.enqueue(Reply(text="Reading.", tool_calls=calls, chunk_size=4, input_tokens=1234))
    events = await events_of(get_provider(make_config(llm_server, provider)))
    assert [e for e in events if isinstance(e, ToolCallReady)] == [ToolCallReady(c) for c in calls]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Read", "ing."]
    usage = [e for e in events if isinstance(e, UsageReport)]
    assert usage[0].input_tokens == 1234
    assert events[-1] == StreamEnd("tool_use")


@pytest.mark.parametrize("provider", ALL_PROVIDERS)
def test_sync_complete(llm_server: ScriptedLLMServer, provider: str) -> None:
    llm_server.enqueue(
        Reply(text="summary text", input_tokens=50, output_tokens=4),
        Reply(tool_calls=[ToolCall("c9", "read_file", '{"path": "x"}')]),
    )
    provider_ = get_provider(make_config(llm_server, provider))
    assert provider_.complete(REQUEST) == Completion(
        text="summary text", usage=UsageReport(50, 4), stop_reason="end_turn"
    )
    second = provider_.complete(REQUEST)
    assert second.tool_calls == (ToolCall("c9", "read_file", '{"path": "x"}'),)
    assert second.stop_reason == "tool_use"
    assert [r.stream for r in llm_server.requests] == [False, False]


async def test_openai_wire_request_is_exact(llm_server: ScriptedLLMServer) -> None:
    await events_of(get_provider(make_config(llm_server, "openai")))
    request = llm_server.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer test-key"
    assert request.body == {
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": "Be terse."},
            {"role": "user", "content": "Read a.txt please."},
        ],
        "max_completion_tokens": 300,
        "temperature": 0.3,
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "read_file",
                    "description": "Read a file.",
                    "parameters": {"type": "object", "properties": {}},
                },
            }
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
    }


@pytest.mark.parametrize("provider", ["deepseek", "openai_compatible"])
def test_openai_family_sync_request_is_exact(llm_server: ScriptedLLMServer, provider: str) -> None:
    get_provider(make_config(llm_server, provider, model="deepseek-chat")).complete(REQUEST)
    body = llm_server.requests[0].body
    assert body["max_tokens"] == 300
    assert "max_completion_tokens" not in body
    assert body["temperature"] == 0.3
    assert "stream" not in body and "stream_options" not in body
    assert not {"reasoning_effort", "thinking"} & body.keys()


async def test_anthropic_wire_request_is_exact(llm_server: ScriptedLLMServer) -> None:
    request = LLMRequest(
        messages=(
            Message("system", "Be terse."),
            Message("user", "[summary]", is_summary=True),
            Message("user", "Go on."),
            Message("assistant", "", tool_calls=(ToolCall("toolu_1", "read_file", '{"p": 1}'),)),
            Message("tool", "content of a", tool_call_id="toolu_1"),
        ),
        tools=(TOOL,),
        max_tokens=300,
        temperature=0.3,
    )
    await events_of(get_provider(make_config(llm_server, "anthropic")), request)
    recorded = llm_server.requests[0]
    assert recorded.path == "/v1/messages"
    assert recorded.headers["authorization"] == "Bearer test-key"
    assert recorded.headers["x-api-key"] == "test-key"
    assert recorded.headers["anthropic-version"] == "2026-10-21"
    assert recorded.body == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 300,
        "system": "Be terse.",
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "[summary]"},
                    {"type": "text", "text": "Go on."},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"p": 1}}
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "content of a"}
                ],
            },
        ],
        "tools": [
            {
                "name": "read_file",
                "description": "Read a file.",
                "input_schema": {"type": "object", "properties": {}},
            }
        ],
        "stream": True,
    }


def test_anthropic_base_url_with_v1_suffix_still_works(llm_server: ScriptedLLMServer) -> None:
    config = make_config(llm_server, "anthropic", base_url=llm_server.url + "/v1/")
    get_provider(config).complete(REQUEST)
    assert llm_server.requests[0].path == "/v1/messages"


async def test_missing_usage_chunk_is_tolerated(llm_server: ScriptedLLMServer) -> None:
    llm_server.enqueue(Reply(text="no usage here", send_usage=False))
    config = make_config(llm_server, "openai_compatible", base_url=llm_server.openai_base_url)
    events = await events_of(get_provider(config))
    assert not [e for e in events if isinstance(e, UsageReport)]
    assert events[-1] == StreamEnd("end_turn")


async def test_stream_really_streams(llm_server: ScriptedLLMServer) -> None:
    llm_server.enqueue(Reply(text="abcdefgh", chunk_size=1, delay_per_chunk=0.05))
    started = time.monotonic()
    first_delta_at = None
    async for event in get_provider(make_config(llm_server, "openai")).stream(REQUEST):
        if isinstance(event, TextDelta) and first_delta_at is None:
            first_delta_at = time.monotonic() - started
    total = time.monotonic() - started
    assert first_delta_at is not None and total >= 0.4
    assert first_delta_at < total / 2


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_consumer_may_stop_early(llm_server: ScriptedLLMServer, provider: str) -> None:
    llm_server.enqueue(
        Reply(text="x" * 200, chunk_size=1, delay_per_chunk=0.01), Reply(text="next")
    )
    provider_ = get_provider(make_config(llm_server, provider))
    stream = provider_.stream(REQUEST)
    async for _event in stream:
        break
    await stream.aclose()  # type: ignore[attr-defined]
    assert (await collected(provider_)).text == "next"


async def test_concurrent_streams(llm_server: ScriptedLLMServer) -> None:
    provider = get_provider(make_config(llm_server, "anthropic"))
    results = await asyncio.gather(*(collected(provider) for _ in range(5)))
    assert [r.text for r in results] == ["ok"] * 5
    assert len(llm_server.requests) == 5


@pytest.mark.parametrize("provider", ALL_PROVIDERS)
async def test_empty_answer_is_a_valid_empty_completion(
    llm_server: ScriptedLLMServer, provider: str
) -> None:
    llm_server.enqueue(Empty(), Empty())
    provider_ = get_provider(make_config(llm_server, provider))
    streamed = await collected(provider_)
    assert (streamed.text, streamed.tool_calls, streamed.stop_reason) == ("", (), "end_turn")
    completed = provider_.complete(REQUEST)
    assert (completed.text, completed.tool_calls, completed.stop_reason) == ("", (), "end_turn")


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_length_stop_is_normalised(llm_server: ScriptedLLMServer, provider: str) -> None:
    llm_server.enqueue(Reply(text="cut", stop="length"), Reply(text="cut", stop="length"))
    provider_ = get_provider(make_config(llm_server, provider))
    assert (await collected(provider_)).stop_reason == "max_tokens"
    assert provider_.complete(REQUEST).stop_reason == "max_tokens"


async def test_default_input_tokens_grow_with_the_context(llm_server: ScriptedLLMServer) -> None:
    provider_ = get_provider(make_config(llm_server, "anthropic"))
    short = await collected(provider_)
    longer = LLMRequest(messages=(*REQUEST.messages, Message("user", "x" * 400)))
    long = await collected(provider_, longer)
    assert short.usage is not None and long.usage is not None
    assert long.usage.input_tokens - short.usage.input_tokens == 100
