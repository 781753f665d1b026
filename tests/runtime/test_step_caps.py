"""Per-step caps on tool calls keep the tool pairing (issue 15, item 5)."""

from __future__ import annotations

import json

from agents import runtime
from agents.tools import TodoStore, Workspace, default_registry
from condense import Message, ToolCall
from llm import ChannelConfig, get_provider
from scripted_llm import Reply


async def _run(server, tmp_path, provider="openai"):
    events: list = []

    async def on_event(event):
        events.append(event)

    result = await runtime.run_agent(
        provider=get_provider(
            ChannelConfig(
                provider=provider,
                model="m",
                api_key="k",
                base_url=server.base_url_for(provider),
                max_retries=0,
            )
        ),
        messages=[Message(role="system", content="help"), Message(role="user", content="go")],
        tools=default_registry(Workspace(tmp_path), TodoStore()),
        on_event=on_event,
        max_tokens=512,
    )
    return result, events


def _write(i: int, size: int = 10) -> ToolCall:
    return ToolCall(f"t{i}", "write_file", json.dumps({"path": f"f{i}.txt", "content": "x" * size}))


async def test_calls_over_the_per_step_cap_get_error_results_in_place(
    llm_server, tmp_path, settings
) -> None:
    settings.NETACLAW = {**settings.NETACLAW, "TOOL_CALLS_PER_STEP": 3}
    llm_server.enqueue(Reply(tool_calls=[_write(i) for i in range(1, 8)]), Reply(text="ok"))
    result, events = await _run(llm_server, tmp_path)
    assert result == "done"
    results = [e for e in events if isinstance(e, runtime.ToolResult)]
    assert [r.call_id for r in results] == [f"t{i}" for i in range(1, 8)]
    assert [r.is_error for r in results] == [False] * 3 + [True] * 4
    assert "at most 3 tool calls are run per step (this was call 4 of 7)" in results[3].content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f1.txt", "f2.txt", "f3.txt"]
    # the next request answers every call of the assistant message exactly once
    sent = llm_server.requests[1].body["messages"]
    asked = [c["id"] for m in sent if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    answered = [m["tool_call_id"] for m in sent if m["role"] == "tool"]
    assert asked == answered == [f"t{i}" for i in range(1, 8)]


async def test_oversized_arguments_are_neither_run_nor_stored_nor_resent(
    llm_server, tmp_path, settings
) -> None:
    settings.NETACLAW = {
        **settings.NETACLAW,
        "TOOL_ARGUMENT_BYTES": 5_000,
        "TOOL_STEP_ARGUMENT_BYTES": 8_000,
    }
    llm_server.enqueue(
        Reply(tool_calls=[_write(1, 20_000), _write(2, 4_000), _write(3, 4_000), _write(4, 10)]),
        Reply(text="ok"),
    )
    result, events = await _run(llm_server, tmp_path, provider="anthropic")
    assert result == "done"
    assistant = next(e for e in events if isinstance(e, runtime.AssistantMessage))
    # what the turn stores: the refused calls without their arguments
    assert [c.arguments == "{}" for c in assistant.tool_calls] == [True, False, True, False]
    results = [e for e in events if isinstance(e, runtime.ToolResult)]
    assert [(r.call_id, r.is_error) for r in results] == [
        ("t1", True),
        ("t2", False),
        ("t3", True),
        ("t4", False),
    ]
    assert "the limit is 5000 bytes per tool call" in results[0].content
    assert "would exceed 8000 bytes together" in results[2].content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f2.txt", "f4.txt"]
    assert len(json.dumps(llm_server.requests[1].body)) < 8_000
