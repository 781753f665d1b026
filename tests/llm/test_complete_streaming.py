"""``Provider.complete_streaming``: the blocking call, streamed through the SDKs' sync clients
against the scripted server (real SSE; nothing patched)."""

from __future__ import annotations

import pytest

from condense.types import ToolCall
from llm import Completion, LLMError, UsageReport, get_provider
from scripted_llm import Disconnect, Empty, Fail, NonJSON, Reply, ScriptedLLMServer
from tests.support.adapters import ALL_PROVIDERS, REQUEST, make_config


@pytest.mark.parametrize("provider", ALL_PROVIDERS)
def test_text_arrives_in_pieces_and_the_answer_is_the_blocking_ones(
    llm_server: ScriptedLLMServer, provider: str
) -> None:
    reply = Reply(text="A summary, written piece by piece.", chunk_size=6, output_tokens=9)
    llm_server.enqueue(reply, reply)
    provider_ = get_provider(make_config(llm_server, provider))
    pieces: list[str] = []
    streamed = provider_.complete_streaming(REQUEST, pieces.append)
    assert pieces == ["A summ", "ary, w", "ritten", " piece", " by pi", "ece."]
    assert streamed == provider_.complete(REQUEST)
    assert streamed.usage is not None and streamed.usage.output_tokens == 9
    assert [r.stream for r in llm_server.requests] == [True, False]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_finish_reason_usage_and_tool_calls_come_through_the_stream(
    llm_server: ScriptedLLMServer, provider: str
) -> None:
    call = ToolCall("c1", "read_file", '{"path": "a.txt"}')
    llm_server.enqueue(
        Reply(text="cut", stop="length", input_tokens=70, output_tokens=300),
        Reply(tool_calls=[call], input_tokens=71, output_tokens=5),
        Empty(input_tokens=72),
    )
    provider_ = get_provider(make_config(llm_server, provider))
    assert provider_.complete_streaming(REQUEST, lambda _: None) == Completion(
        text="cut", usage=UsageReport(70, 300), stop_reason="max_tokens"
    )
    tool_only = provider_.complete_streaming(REQUEST, lambda _: None)
    assert (tool_only.text, tool_only.tool_calls, tool_only.stop_reason) == (
        "",
        (call,),
        "tool_use",
    )
    empty = provider_.complete_streaming(REQUEST, lambda _: None)
    assert (empty.text, empty.stop_reason) == ("", "end_turn")
    assert empty.usage is not None and empty.usage.input_tokens == 72


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize(
    ("action", "reason"),
    [
        (Fail(status=429), "rate_limited"),
        (NonJSON(), "invalid_response"),
        (Disconnect(after_events=2), "connection_error"),
    ],
)
def test_a_failure_is_one_llm_error(
    llm_server: ScriptedLLMServer, provider: str, action: object, reason: str
) -> None:
    llm_server.enqueue(action)  # type: ignore[arg-type]
    with pytest.raises(LLMError) as caught:
        get_provider(make_config(llm_server, provider)).complete_streaming(REQUEST, lambda _: None)
    assert caught.value.reason == reason


class Enough(Exception):
    """What a caller's ``on_text`` raises to cut the stream."""


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_an_exception_of_on_text_cuts_the_stream_and_propagates(
    llm_server: ScriptedLLMServer, provider: str
) -> None:
    llm_server.enqueue(Reply(text="x" * 400, chunk_size=4, delay_per_chunk=0.01), Reply(text="ok"))
    provider_ = get_provider(make_config(llm_server, provider))
    pieces: list[str] = []

    def on_text(text: str) -> None:
        pieces.append(text)
        if len(pieces) == 3:
            raise Enough

    with pytest.raises(Enough):
        provider_.complete_streaming(REQUEST, on_text)
    assert len(pieces) == 3
    assert provider_.complete_streaming(REQUEST, lambda _: None).text == "ok"
