from __future__ import annotations

import json

import pytest

from agents import runtime
from agents.tools import TodoStore, Workspace, default_registry
from condense import Message, ToolCall
from llm import ChannelConfig, get_provider
from scripted_llm import Fail, Reply


def _provider(server, provider: str):
    return get_provider(
        ChannelConfig(
            provider=provider,
            model="m",
            api_key="k",
            base_url=server.base_url_for(provider),
            max_retries=0,
        )
    )


async def _run(server, provider, tmp_path, **kwargs):
    events: list = []

    async def on_event(event):
        events.append(event)

    result = await runtime.run_agent(
        provider=_provider(server, provider),
        messages=[Message(role="system", content="help"), Message(role="user", content="go")],
        tools=default_registry(Workspace(tmp_path), TodoStore()),
        on_event=on_event,
        max_tokens=512,
        **kwargs,
    )
    return result, events


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_tool_round_then_answer(llm_server, tmp_path, provider) -> None:
    llm_server.enqueue(
        Reply(
            tool_calls=[
                ToolCall("t1", "write_file", json.dumps({"path": "a.txt", "content": "hi"}))
            ]
        ),
        Reply(tool_calls=[ToolCall("t2", "read_file", json.dumps({"path": "a.txt"}))]),
        Reply(text="the file says hi", chunk_size=4),
    )
    result, events = await _run(llm_server, provider, tmp_path)
    answers = [e for e in events if isinstance(e, runtime.AssistantMessage)]
    assert (result, answers[-1].content, len(answers), len(llm_server.requests)) == (
        "done",
        "the file says hi",
        3,
        3,
    )
    assert (tmp_path / "a.txt").read_text() == "hi"
    results = [e for e in events if isinstance(e, runtime.ToolResult)]
    assert [(r.call_id, r.content) for r in results] == [
        ("t1", "wrote 2 bytes to a.txt"),
        ("t2", "hi"),
    ]
    assert len([e for e in events if isinstance(e, runtime.TextDelta)]) >= 4
    third = json.dumps(llm_server.requests[2].body)
    assert ("t2" in third and '"hi"' in third) or "hi" in third
    if provider == "anthropic":
        blocks = llm_server.requests[2].body["messages"][-1]["content"]
        assert blocks[0]["type"] == "tool_result" and blocks[0]["tool_use_id"] == "t2"
    else:
        last = llm_server.requests[2].body["messages"][-1]
        assert last == {"role": "tool", "tool_call_id": "t2", "content": "hi"}


async def test_failing_tool_is_a_result_and_the_turn_goes_on(llm_server, tmp_path) -> None:
    llm_server.enqueue(
        Reply(tool_calls=[ToolCall("t1", "read_file", json.dumps({"path": "../../etc/passwd"}))]),
        Reply(text="could not read it"),
    )
    result, events = await _run(llm_server, "openai", tmp_path)
    failed = next(e for e in events if isinstance(e, runtime.ToolResult))
    assert failed.is_error and failed.content == "path escapes the workspace"
    assert result == "done"


async def test_step_limit_keeps_tool_pairing(llm_server, tmp_path) -> None:
    llm_server.responder = lambda body, wire: Reply(
        tool_calls=[ToolCall(f"t{len(body['messages'])}", "list_files", "{}")]
    )
    result, events = await _run(llm_server, "openai", tmp_path, max_steps=3)
    assert result == "step_limit" and len(llm_server.requests) == 3
    assert isinstance(events[-1], runtime.StepLimitReached)
    assert isinstance(events[-2], runtime.ToolResult)  # the last calls got their results


async def test_provider_error_is_reported(llm_server, tmp_path) -> None:
    llm_server.enqueue(Fail(status=500, should_retry=False))
    result, events = await _run(llm_server, "openai", tmp_path)
    assert result == "error"
    assert [type(e) for e in events] == [runtime.RunFailed]
    assert events[0].reason == "upstream_error"


async def test_before_step_messages_are_used_for_the_next_call(llm_server, tmp_path) -> None:
    llm_server.enqueue(Reply(tool_calls=[ToolCall("t1", "list_files", "{}")]), Reply(text="done"))

    async def before_step(messages):
        return [Message(role="system", content="COMPACTED CONTEXT"), *messages[-2:]]

    result, _ = await _run(llm_server, "openai", tmp_path, before_step=before_step)
    assert result == "done"
    second = llm_server.requests[1].body["messages"]
    assert second[0]["content"] == "COMPACTED CONTEXT" and len(second) == 3
