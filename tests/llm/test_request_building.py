"""The pure request builders: exact wire shapes, no network."""

from __future__ import annotations

import pickle
from types import SimpleNamespace as NS

import pytest

from condense.types import Message, ToolCall
from llm import (
    ChannelConfig,
    LLMError,
    LLMRequest,
    StreamEnd,
    TextDelta,
    ToolCallReady,
    ToolSpec,
    UsageReport,
    build_anthropic_params,
    build_openai_params,
)
from llm.anthropic_adapter import (
    LEADING_USER_PLACEHOLDER,
    AnthropicStreamParser,
    arguments_to_input,
)
from llm.openai_adapter import OpenAIStreamParser, parse_openai_completion

TOOL = ToolSpec(
    name="read_file",
    description="Read a file.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}},
)
CONVERSATION = (
    Message("system", "You are helpful."),
    Message("user", "[summary] earlier turns", is_summary=True),
    Message("user", "What is in a.txt and b.txt?"),
    Message(
        "assistant",
        "Let me look.",
        tool_calls=(
            ToolCall("t1", "read_file", '{"path": "a.txt"}'),
            ToolCall("t2", "read_file", '{"path": "b.txt"}'),
        ),
    ),
    Message("tool", "A", tool_call_id="t1"),
    Message("tool", "B", tool_call_id="t2"),
    Message("user", "Thanks"),
    Message("system", "Be brief."),
)


def config(provider: str, model: str = "m", **kw: object) -> ChannelConfig:
    return ChannelConfig(provider=provider, model=model, api_key="k", **kw)  # type: ignore[arg-type]


def test_anthropic_params_merge_roles_and_hoist_system() -> None:
    request = LLMRequest(messages=CONVERSATION, tools=(TOOL,), max_tokens=512, temperature=0.3)
    params = build_anthropic_params(request, config("anthropic", "claude-sonnet-4-5"))
    assert params == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 512,
        "system": "You are helpful.\n\nBe brief.",
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "[summary] earlier turns"},
                    {"type": "text", "text": "What is in a.txt and b.txt?"},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Let me look."},
                    {
                        "type": "tool_use",
                        "id": "t1",
                        "name": "read_file",
                        "input": {"path": "a.txt"},
                    },
                    {
                        "type": "tool_use",
                        "id": "t2",
                        "name": "read_file",
                        "input": {"path": "b.txt"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "A"},
                    {"type": "tool_result", "tool_use_id": "t2", "content": "B"},
                    {"type": "text", "text": "Thanks"},
                ],
            },
        ],
        "tools": [
            {
                "name": "read_file",
                "description": "Read a file.",
                "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
            }
        ],
    }
    # the 2026-10-21 API rejects sampling parameters; thinking is never sent
    assert "temperature" not in params
    assert "thinking" not in params


def test_anthropic_roles_always_alternate() -> None:
    messages = (
        Message("user", "a"),
        Message("assistant", ""),  # empty: dropped, so the users around it merge
        Message("user", "b"),
        Message("tool", "orphan output without id"),
        Message("assistant", "x"),
        Message("assistant", "y"),
    )
    params = build_anthropic_params(LLMRequest(messages=messages), config("anthropic"))
    roles = [m["role"] for m in params["messages"]]
    assert roles == ["user", "assistant"]
    assert [b["text"] for b in params["messages"][0]["content"]] == [
        "a",
        "b",
        "orphan output without id",
    ]
    assert "system" not in params


def test_anthropic_tool_results_come_first_in_a_user_turn() -> None:
    messages = (
        Message("assistant", "", tool_calls=(ToolCall("t1", "f"),)),
        Message("user", "by the way"),
        Message("tool", "result", tool_call_id="t1"),
    )
    params = build_anthropic_params(LLMRequest(messages=messages), config("anthropic"))
    assert [b["type"] for b in params["messages"][2]["content"]] == ["tool_result", "text"]


def test_anthropic_conversation_opening_with_the_assistant_gets_a_user_turn_first() -> None:
    messages = (Message("system", "s"), Message("assistant", "Earlier I said hi."))
    params = build_anthropic_params(LLMRequest(messages=messages), config("anthropic"))
    assert params["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": LEADING_USER_PLACEHOLDER}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Earlier I said hi."}]},
    ]


def test_anthropic_tool_result_without_content_has_no_content_key() -> None:
    messages = (
        Message("user", "go"),
        Message("assistant", "", tool_calls=(ToolCall("t1", "f"),)),
        Message("tool", "", tool_call_id="t1"),
    )
    params = build_anthropic_params(LLMRequest(messages=messages), config("anthropic"))
    assert params["messages"][2] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t1"}],
    }


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ("", {}),
        ("not json", {"_raw": "not json"}),
        ("[1, 2]", {"_raw": "[1, 2]"}),
    ],
)
def test_arguments_to_input(arguments: str, expected: dict) -> None:
    assert arguments_to_input(arguments) == expected


def test_openai_params_nested_tool_calls_and_tool_messages() -> None:
    request = LLMRequest(messages=CONVERSATION, tools=(TOOL,), max_tokens=512, temperature=0.3)
    params = build_openai_params(request, config("openai", "gpt-4o"))
    assert params == {
        "model": "gpt-4o",
        "max_completion_tokens": 512,
        "temperature": 0.3,
        "messages": [
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": "[summary] earlier turns"},
            {"role": "user", "content": "What is in a.txt and b.txt?"},
            {
                "role": "assistant",
                "content": "Let me look.",
                "tool_calls": [
                    {
                        "id": "t1",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'},
                    },
                    {
                        "id": "t2",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "b.txt"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "t1", "content": "A"},
            {"role": "tool", "tool_call_id": "t2", "content": "B"},
            {"role": "user", "content": "Thanks"},
            {"role": "system", "content": "Be brief."},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "read_file",
                    "description": "Read a file.",
                    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
                },
            }
        ],
    }


@pytest.mark.parametrize("provider", ["deepseek", "openai_compatible"])
def test_openai_family_uses_max_tokens(provider: str) -> None:
    request = LLMRequest(messages=(Message("user", "hi"),), max_tokens=100, temperature=0.3)
    params = build_openai_params(request, config(provider, base_url="http://x/v1"))
    assert params == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 100,
        "temperature": 0.3,
    }


def test_openai_assistant_with_only_tool_calls_has_null_content() -> None:
    message = Message("assistant", "", tool_calls=(ToolCall("c", "f", ""),))
    params = build_openai_params(LLMRequest(messages=(message,)), config("openai"))
    assert params["messages"][0]["content"] is None
    assert params["messages"][0]["tool_calls"][0]["function"]["arguments"] == "{}"


def test_openai_reasoning_models_get_no_temperature() -> None:
    request = LLMRequest(messages=(Message("user", "hi"),), temperature=0.3)
    for model in ("o3-mini", "gpt-5", "o1"):
        assert "temperature" not in build_openai_params(request, config("openai", model))
        assert "reasoning_effort" not in build_openai_params(request, config("openai", model))


def test_llm_request_has_no_thinking_switch() -> None:
    with pytest.raises(TypeError):
        LLMRequest(messages=(Message("user", "hi"),), thinking=True)  # type: ignore[call-arg]


def test_no_temperature_when_not_given() -> None:
    request = LLMRequest(messages=(Message("user", "hi"),))
    assert "temperature" not in build_openai_params(request, config("openai", "gpt-4o"))


# ---------------------------------------------------------------- stream parsers


def test_openai_parser_requires_a_finish_reason() -> None:
    parser = OpenAIStreamParser("openai")
    chunk = {
        "usage": None,
        "choices": [
            {"index": 0, "delta": {"content": "hi", "tool_calls": None}, "finish_reason": None}
        ],
    }
    assert parser.feed(chunk) == [TextDelta("hi")]
    with pytest.raises(LLMError) as caught:
        parser.finish()
    assert caught.value.reason == "invalid_response"


def test_openai_parser_assembles_tool_call_fragments_by_index() -> None:
    parser = OpenAIStreamParser("openai_compatible")

    def piece(index: int, id: str | None = None, name: str | None = None, args: str | None = None):
        return {"index": index, "id": id, "function": {"name": name, "arguments": args}}

    def chunk(*pieces: dict, finish: str | None = None) -> dict:
        delta = {"content": None, "tool_calls": list(pieces)}
        return {"usage": None, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    parser.feed(chunk(piece(0, "a", "read", ""), piece(1, None, "write", '{"x"')))
    parser.feed(chunk(piece(0, args='{"p": 1}'), piece(1, args=": 2}")))
    parser.feed(chunk(finish="stop"))  # a local server that says "stop" after tool calls
    assert parser.finish() == [
        ToolCallReady(ToolCall("a", "read", '{"p": 1}')),
        ToolCallReady(ToolCall("call_1", "write", '{"x": 2}')),
        StreamEnd("tool_use"),
    ]


def test_anthropic_parser_counts_cached_input_and_needs_a_stop() -> None:
    parser = AnthropicStreamParser()
    usage = NS(
        input_tokens=10, cache_creation_input_tokens=5, cache_read_input_tokens=100, output_tokens=1
    )
    parser.feed(NS(type="message_start", message=NS(usage=usage)))
    parser.feed(NS(type="content_block_start", index=0, content_block=NS(type="text", text="")))
    assert parser.feed(
        NS(type="content_block_delta", index=0, delta=NS(type="text_delta", text="hi"))
    ) == [TextDelta("hi")]
    truncated = AnthropicStreamParser()
    truncated.feed(NS(type="message_start", message=NS(usage=usage)))
    with pytest.raises(LLMError) as caught:
        truncated.finish()
    assert caught.value.reason == "invalid_response"
    parser.feed(
        NS(
            type="message_delta",
            delta=NS(stop_reason="end_turn"),
            usage=NS(output_tokens=7, input_tokens=None),
        )
    )
    assert parser.finish() == [UsageReport(115, 7), StreamEnd("end_turn")]


def test_anthropic_parser_accepts_message_stop_without_a_stop_reason() -> None:
    parser = AnthropicStreamParser()
    start = NS(type="content_block_start", index=0, content_block=NS(type="text", text="Hi"))
    assert parser.feed(start) == [TextDelta("Hi")]  # gateways that open a block with text
    parser.feed(NS(type="message_stop"))
    assert parser.finish() == [StreamEnd("end_turn")]


def test_anthropic_blank_text_is_never_sent() -> None:
    messages = (
        Message("system", "  "),
        Message("user", "hi"),
        Message("assistant", " \n", tool_calls=(ToolCall("t1", "f"),)),
        Message("tool", "  ", tool_call_id="t1"),
        Message("user", "\t"),
    )
    params = build_anthropic_params(LLMRequest(messages=messages), config("anthropic"))
    assert "system" not in params
    assert params["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]},
    ]


def test_openai_parser_without_indexes_groups_fragments_by_id() -> None:
    parser = OpenAIStreamParser("openai_compatible")

    def chunk(id: str | None, name: str | None, args: str, finish: str | None = None) -> dict:
        piece = {"index": None, "id": id, "function": {"name": name, "arguments": args}}
        delta = {"content": None, "tool_calls": [piece]}
        return {"usage": None, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    parser.feed(chunk("a", "read", '{"p":'))
    parser.feed(chunk(None, None, " 1}"))
    parser.feed(chunk("b", "write", "{}"))
    parser.feed(chunk("b", None, "", finish="tool_calls"))
    assert parser.finish() == [
        ToolCallReady(ToolCall("a", "read", '{"p": 1}')),
        ToolCallReady(ToolCall("b", "write", "{}")),
        StreamEnd("tool_use"),
    ]


def test_openai_completion_tool_call_without_id_gets_one() -> None:
    call = NS(id=None, function=NS(name="read", arguments=""))
    completion = NS(
        choices=[NS(message=NS(content=None, tool_calls=[call]), finish_reason="tool_calls")],
        usage=None,
    )
    parsed = parse_openai_completion(completion)
    assert parsed.tool_calls == (ToolCall("call_0", "read", "{}"),)
    assert (parsed.text, parsed.usage, parsed.stop_reason) == ("", None, "tool_use")


def test_llm_error_survives_pickling() -> None:
    error = LLMError("rate_limited", "Slow down", status=429, provider="openai", cause="X")
    clone = pickle.loads(pickle.dumps(error))
    assert (clone.reason, clone.message, clone.status, clone.provider, clone.cause) == (
        "rate_limited",
        "Slow down",
        429,
        "openai",
        "X",
    )
