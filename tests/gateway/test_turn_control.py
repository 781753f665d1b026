"""Issue 14, items 1, 2, 3 and 7 on the real ASGI stack (auth, routing, consumer, gateway,
channel layer, database), with the scripted model on real HTTP:

* queued input: a message sent while a turn streams, or during a 300-call tool step, is
  stored at once (marked queued) and enters the history after the turn's last message;
  one left queued by a crashed process is answered by the session's next turn;
* Stop: during streaming, during tools, during a compaction, with nothing running;
* a failed turn leaves a record (reason, the channel to check) and Retry runs it again;
* the provider's own "context too long" (both wires): one compaction, one more try.

The same over real Daphne processes: ``test_turn_control_daphne.py``.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any
from unittest.mock import ANY

import pytest
from channels.db import database_sync_to_async
from django.utils import timezone

from agents.models import ChatSession, Message, Role
from agents.selectors import history_load
from agents.services import message_append, messages_bulk_append, user_message_append
from condense import ORPHAN_CALL_PLACEHOLDER, ToolCall
from scripted_llm import Fail, Reply
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.support.sockets import connect, receive, receive_until, send, token_for
from tests.support.summaries import SUMMARY

pytestmark = pytest.mark.django_db(transaction=True)

LONG = "".join(f"第{i}句。" for i in range(200))  # ~1,000 characters, streamed slowly


def is_summary(body: dict[str, Any]) -> bool:
    """A summary request carries no tools; every chat request carries the agent's."""
    return not body.get("tools")


@database_sync_to_async
def _world(
    server: Any,
    *,
    provider: str = "openai_compatible",
    window: int = 200_000,
    history: int = 0,
    base_url: str | None = None,
    name: str = "",
) -> tuple[Any, ChatSession]:
    user = make_user()
    base = base_url or server.base_url_for(provider)
    channel = make_channel(
        provider=provider,
        base_url=base,
        context_window=window,
        is_auxiliary=True,
        **({"name": name} if name else {}),
    )
    agent = make_agent(model_channel=channel, auxiliary_model_channel=channel)
    session = make_session(owner=user, agent=agent)
    rows = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"第 {i} 轮 " + "内容" * 120}
        for i in range(history)
    ]
    if rows:
        messages_bulk_append(session=session, rows=rows)
    return user, session


@database_sync_to_async
def _history(session: ChatSession) -> list[Message]:
    """The full view, events included, in the history's order."""
    return history_load(session=session, view="full")


def assert_turns_whole(messages: list[Message]) -> None:
    """No message between an assistant's tool calls and their results, each call with
    exactly one result, and no user message inside an answer."""
    i = 0
    while i < len(messages):
        m = messages[i]
        i += 1
        if m.role != Role.ASSISTANT or not m.tool_calls:
            continue
        wanted = [c["id"] for c in m.tool_calls]
        results = []
        while i < len(messages) and messages[i].role == Role.TOOL:
            results.append(messages[i].tool_call_id)
            i += 1
        assert sorted(results) == sorted(wanted), f"calls of #{m.pk} and their results"


async def _until_n(ws: Any, kind: str, n: int, timeout: float = 30) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    async with asyncio.timeout(timeout):
        while sum(e["type"] == kind for e in seen) < n:
            seen.append(await receive(ws, timeout))
    return seen


def _roles(messages: list[Message]) -> list[str]:
    return [m.role for m in messages if not m.is_system_event]


# --- 1. queued input ------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["openai_compatible", "anthropic"])
async def test_a_message_sent_while_the_answer_streams_waits_for_the_turn(
    llm_server, provider
) -> None:
    llm_server.enqueue(
        Reply(text=LONG, chunk_size=8, delay_per_chunk=0.01), Reply(text="第二个回答。")
    )
    user, session = await _world(llm_server, provider=provider)
    ws, _ = await connect(token=await token_for(user), origin=None)
    sid = str(session.pk)
    await send(ws, {"type": "chat", "sessionId": sid, "content": "问题一"})
    await receive_until(ws, "delta")
    await send(ws, {"type": "chat", "sessionId": sid, "content": "问题二"})
    events = await _until_n(ws, "turn_done", 2)
    await ws.disconnect()

    stored = [e["message"] for e in events if e["type"] == "message"]
    queued = [m for m in stored if m["content"] == "问题二"]
    assert queued[0].get("queued") is True, "announced at once, as queued"
    assert "queued" not in queued[-1] and len(queued) == 2, "then released into the history"
    first_done = next(i for i, e in enumerate(events) if e["type"] == "turn_done")
    assert events.index(next(e for e in events if e.get("message") is queued[-1])) > first_done

    history = await _history(session)
    assert [(m.role, m.content) for m in history] == [
        ("user", "问题一"),
        ("assistant", LONG),
        ("user", "问题二"),
        ("assistant", "第二个回答。"),
    ]
    assert all(m.queued_at is None for m in history)
    # the second request ends with the question, after the whole first answer
    second = json.dumps(llm_server.requests[1].body["messages"], ensure_ascii=False)
    assert second.index(LONG[-20:]) < second.index("问题二")
    last = llm_server.requests[1].body["messages"][-1]
    assert last["role"] == "user" and "问题二" in json.dumps(last, ensure_ascii=False)


async def test_a_message_sent_during_a_300_call_tool_step_lands_after_the_turn(
    llm_server,
) -> None:
    calls = [ToolCall(f"call_{i}", "list_files", json.dumps({"path": "."})) for i in range(300)]
    llm_server.enqueue(
        Reply(text="我先看看文件。", tool_calls=calls),
        Reply(text="看完了。"),
        Reply(text="收到第二个问题。"),
    )
    user, session = await _world(llm_server)
    ws, _ = await connect(token=await token_for(user), origin=None)
    sid = str(session.pk)
    await send(ws, {"type": "chat", "sessionId": sid, "content": "列出文件"})
    while True:  # the step's first tool result: 299 more to come
        event = await receive(ws)
        if event["type"] == "message" and event["message"]["role"] == "tool":
            break
    await send(ws, {"type": "chat", "sessionId": sid, "content": "顺便问一句"})
    await _until_n(ws, "turn_done", 2, timeout=60)
    await ws.disconnect()

    history = [m for m in await _history(session) if not m.is_system_event]
    assert_turns_whole(history)
    assert _roles(history) == [
        "user",
        "assistant",
        *["tool"] * 300,
        "assistant",
        "user",
        "assistant",
    ]
    assert history[-2].content == "顺便问一句"
    # the next turn's request carries all 300 real results, none stubbed
    third = llm_server.requests[2].body["messages"]
    results = [m for m in third if m.get("role") == "tool"]
    assert len(results) == 300
    assert not [m for m in results if ORPHAN_CALL_PLACEHOLDER in str(m.get("content"))]


async def test_a_message_queued_by_a_crashed_process_is_answered_by_the_next_turn(
    llm_server,
) -> None:
    """A process died after storing a queued message: the page shows it queued, and the
    session's next turn takes it into the history (before the new message)."""
    llm_server.enqueue(Reply(text="两个都收到。"))
    user, session = await _world(llm_server)

    @database_sync_to_async
    def crash_leftover() -> Message:
        message_append(session=session, role=Role.USER, content="旧问题")
        message_append(session=session, role=Role.ASSISTANT, content="旧回答")
        return user_message_append(session=session, content="崩溃前排队的消息", queued=True)

    leftover = await crash_leftover()
    assert [m.content for m in await _history(session)] == ["旧问题", "旧回答"]
    ws, _ = await connect(token=await token_for(user), origin=None)
    await send(ws, {"type": "chat", "sessionId": str(session.pk), "content": "新消息"})
    events = await receive_until(ws, "turn_done")
    await ws.disconnect()
    history = await _history(session)
    assert [m.content for m in history] == [
        "旧问题",
        "旧回答",
        "崩溃前排队的消息",
        "新消息",
        "两个都收到。",
    ]
    assert next(m for m in history if m.pk == leftover.pk).queued_at is None
    announced = [e["message"]["content"] for e in events if e["type"] == "message"]
    assert announced[:2] == ["崩溃前排队的消息", "新消息"]


async def test_a_message_queued_behind_a_dead_holder_is_answered_once_its_lease_expires(
    llm_server, settings
) -> None:
    settings.NETACLAW = {**settings.NETACLAW, "COMPACTION_LEASE_SECONDS": 1}
    llm_server.enqueue(Reply(text="终于轮到我了。"))
    user, session = await _world(llm_server)

    @database_sync_to_async
    def dead_holder() -> None:
        ChatSession.objects.filter(pk=session.pk).update(
            lease_holder="t/dead-host:1:000000000000",
            lease_expires_at=timezone.now() + timezone.timedelta(seconds=1.5),
        )

    await dead_holder()
    ws, _ = await connect(token=await token_for(user), origin=None)
    started = time.monotonic()
    await send(ws, {"type": "chat", "sessionId": str(session.pk), "content": "有人吗"})
    first = await receive(ws)
    if first["type"] == "session_updated":  # the untitled chat took the message's words
        first = await receive(ws)
    assert first["type"] == "message" and first["message"].get("queued") is True
    events = await receive_until(ws, "turn_done", timeout=15)
    await ws.disconnect()
    assert time.monotonic() - started >= 1.0, "it waited for the dead holder's lease"
    assert [m.content for m in await _history(session)] == ["有人吗", "终于轮到我了。"]
    assert any(e["type"] == "delta" for e in events)


async def test_a_message_sent_during_a_compaction_waits_for_it(llm_server) -> None:
    release = threading.Event()

    def model(body: dict[str, Any], wire: str) -> Any:
        if is_summary(body):
            release.wait(15)
            return Reply(text=SUMMARY)
        return Reply(text="压缩后回答。")

    llm_server.responder = model
    user, session = await _world(llm_server, history=30)
    ws, _ = await connect(token=await token_for(user), origin=None)
    sid = str(session.pk)
    await send(ws, {"type": "compact", "sessionId": sid})
    await receive_until(ws, "compaction_start")
    await send(ws, {"type": "chat", "sessionId": sid, "content": "压缩时发送"})
    queued = await receive_until(ws, "message")
    assert queued[-1]["message"].get("queued") is True
    assert "压缩时发送" not in [m.content for m in await _history(session)]
    release.set()
    events = await receive_until(ws, "turn_done", timeout=30)
    await ws.disconnect()
    kinds = [e["type"] for e in events]
    assert kinds.index("compaction_done") < kinds.index("delta")
    visible = [m for m in await _history(session) if m.compacted_at is None]
    assert [m.content for m in visible][-2:] == ["压缩时发送", "压缩后回答。"]


# --- 2. Stop --------------------------------------------------------------------------


async def test_stop_during_streaming_keeps_the_partial_answer_marked_stopped(llm_server) -> None:
    llm_server.enqueue(Reply(text=LONG, chunk_size=4, delay_per_chunk=0.05))
    user, session = await _world(llm_server)
    ws, _ = await connect(token=await token_for(user), origin=None)
    sid = str(session.pk)
    await send(ws, {"type": "chat", "sessionId": sid, "content": "讲个长故事"})
    streamed = []
    for _ in range(3):
        streamed += await receive_until(ws, "delta")
    started = time.monotonic()
    await send(ws, {"type": "stop", "sessionId": sid})
    events = await receive_until(ws, "turn_done", timeout=10)
    assert time.monotonic() - started < 3, "the stream was cut, not read to its end"
    done = events[-1]
    assert done == {"type": "turn_done", "sessionId": sid, "stopped": True, "turnId": ANY}
    deltas = [e for e in streamed + events if e["type"] == "delta"]
    assert {e["turnId"] for e in deltas} == {done["turnId"]}
    assert [e["seq"] for e in deltas] == list(range(1, len(deltas) + 1))
    stored = [e["message"] for e in events if e["type"] == "message"]
    partial, record = stored[-2], stored[-1]
    assert partial["role"] == "assistant" and partial["metadata"]["stopped"] is True
    assert partial["content"] and LONG.startswith(partial["content"]) and partial["content"] != LONG
    assert record["metadata"]["systemType"] == "turn_event"
    assert (record["metadata"]["status"], record["metadata"]["reason"]) == ("stopped", "stopped")

    # the session goes on: the next message is answered, after the stopped answer
    llm_server.enqueue(Reply(text="好的，换个话题。"))
    await send(ws, {"type": "chat", "sessionId": sid, "content": "换个话题"})
    done = await receive_until(ws, "turn_done")
    assert "stopped" not in done[-1]
    await ws.disconnect()
    history = [m for m in await _history(session) if not m.is_system_event]
    assert [m.content for m in history][-2:] == ["换个话题", "好的，换个话题。"]


async def test_stop_during_a_tool_step_gives_every_call_a_result(llm_server) -> None:
    calls = [ToolCall(f"call_{i}", "list_files", json.dumps({"path": "."})) for i in range(300)]
    llm_server.enqueue(Reply(text="逐个查看。", tool_calls=calls))
    user, session = await _world(llm_server)
    ws, _ = await connect(token=await token_for(user), origin=None)
    sid = str(session.pk)
    await send(ws, {"type": "chat", "sessionId": sid, "content": "查看全部"})
    seen = 0
    while seen < 3:
        event = await receive(ws)
        seen += event["type"] == "message" and event["message"]["role"] == "tool"
    await send(ws, {"type": "stop", "sessionId": sid})
    events = await receive_until(ws, "turn_done", timeout=20)
    await ws.disconnect()
    assert events[-1]["stopped"] is True
    history = [m for m in await _history(session) if not m.is_system_event]
    assert_turns_whole(history)
    results = [m for m in history if m.role == Role.TOOL]
    assert len(results) == 300
    stopped = [m for m in results if m.metadata.get("stopped")]
    assert 0 < len(stopped) <= 297, "the calls after the stop got a stopped result"
    assert all(m.metadata["isError"] for m in stopped)
    assert len(llm_server.requests) == 1, "no further model call after the stop"


async def test_stop_during_a_compaction_cancels_it_at_once(llm_server) -> None:
    release = threading.Event()

    def model(body: dict[str, Any], wire: str) -> Any:
        if is_summary(body):
            release.wait(15)
            return Reply(text=SUMMARY)
        return Reply(text="照常回答。")

    llm_server.responder = model
    user, session = await _world(llm_server, history=30)

    @database_sync_to_async
    def rows() -> list[tuple[Any, ...]]:
        return list(Message.objects.filter(session=session).order_by("id").values_list())

    before = await rows()
    ws, _ = await connect(token=await token_for(user), origin=None)
    sid = str(session.pk)
    await send(ws, {"type": "compact", "sessionId": sid})
    await receive_until(ws, "compaction_start")
    await asyncio.to_thread(llm_server.wait_for_requests, 1, 10)
    await send(ws, {"type": "stop", "sessionId": sid})
    failed = await receive_until(ws, "compaction_failed", timeout=5)
    assert failed[-1]["reason"] == "cancelled"
    fresh = await database_sync_to_async(ChatSession.objects.get)(pk=session.pk)
    assert fresh.lease_holder == "", "the lease is released"
    release.set()  # the summary comes back now: it is thrown away
    await asyncio.sleep(1.0)
    assert await rows() == before, "the history is unchanged"
    fresh = await database_sync_to_async(ChatSession.objects.get)(pk=session.pk)
    assert fresh.compaction_count == 0

    await send(ws, {"type": "chat", "sessionId": sid, "content": "继续"})
    events = await receive_until(ws, "turn_done")
    await ws.disconnect()
    assert [e for e in events if e["type"] == "delta"]


async def test_stop_with_nothing_running_is_refused(llm_server) -> None:
    user, session = await _world(llm_server)
    ws, _ = await connect(token=await token_for(user), origin=None)
    await send(ws, {"type": "stop", "sessionId": str(session.pk)})
    event = await receive(ws)
    await send(ws, {"type": "stop", "sessionId": "not-a-session"})
    foreign = await receive(ws)
    await ws.disconnect()
    assert (event["type"], event["reason"], event["sessionId"]) == (
        "error",
        "nothing_to_stop",
        str(session.pk),
    )
    assert foreign["reason"] == "unknown_session"


# --- 3. failed turns and Retry --------------------------------------------------------


async def test_a_failed_turn_leaves_a_record_and_retry_runs_it_again(llm_server) -> None:
    llm_server.enqueue(
        Fail(status=500, body={"error": {"message": "upstream exploded"}}, should_retry=False),
        Reply(text="这次好了。"),
    )
    user, session = await _world(llm_server, name="主力渠道")
    ws, _ = await connect(token=await token_for(user), origin=None)
    sid = str(session.pk)
    await send(ws, {"type": "chat", "sessionId": sid, "content": "你好"})
    events = await receive_until(ws, "turn_done")
    record = [e["message"] for e in events if e["type"] == "message"][-1]
    meta = record["metadata"]
    assert (meta["systemType"], meta["status"], meta["reason"]) == (
        "turn_event",
        "failed",
        "upstream_error",
    )
    assert "主力渠道" in record["content"] and "HTTP 500" in record["content"]
    error = next(e for e in events if e["type"] == "error")
    assert error["reason"] == "upstream_error" and "主力渠道" in error["error"]

    await send(ws, {"type": "retry", "sessionId": sid})
    retried = await receive_until(ws, "turn_done")
    await send(ws, {"type": "retry", "sessionId": sid})
    again = await receive(ws)
    await ws.disconnect()
    assert [e["message"]["content"] for e in retried if e["type"] == "message"] == ["这次好了。"]
    assert (again["type"], again["reason"]) == ("error", "nothing_to_retry")
    history = await _history(session)
    assert [(m.role, m.is_system_event) for m in history] == [
        ("user", False),
        ("system", True),
        ("assistant", False),
    ]
    request = llm_server.requests[1].body["messages"]
    assert request[-1]["role"] == "user" and "turn_event" not in json.dumps(request)


async def test_a_connection_failure_names_the_channel_and_no_exception_class(llm_server) -> None:
    user, session = await _world(llm_server, base_url="http://127.0.0.1:9/v1", name="本地 Ollama")
    ws, _ = await connect(token=await token_for(user), origin=None)
    await send(ws, {"type": "chat", "sessionId": str(session.pk), "content": "在吗"})
    events = await receive_until(ws, "turn_done", timeout=30)
    await ws.disconnect()
    record = [e["message"] for e in events if e["type"] == "message"][-1]
    assert record["metadata"]["reason"] == "connection_error"
    assert "本地 Ollama" in record["content"] and "scripted-model" in record["content"]
    for event in events:
        text = json.dumps(event, ensure_ascii=False)
        assert "Error" not in text.replace("connection_error", ""), text


async def test_retry_while_the_agent_works_or_with_nothing_to_retry_is_refused(
    llm_server,
) -> None:
    llm_server.enqueue(Reply(text=LONG, chunk_size=4, delay_per_chunk=0.02))
    user, session = await _world(llm_server)
    ws, _ = await connect(token=await token_for(user), origin=None)
    sid = str(session.pk)
    await send(ws, {"type": "retry", "sessionId": sid})
    nothing = await receive(ws)
    await send(ws, {"type": "chat", "sessionId": sid, "content": "长回答"})
    await receive_until(ws, "delta")
    await send(ws, {"type": "retry", "sessionId": sid})
    events = await receive_until(ws, "turn_done", timeout=30)
    await ws.disconnect()
    assert nothing["reason"] == "nothing_to_retry"
    assert [e["reason"] for e in events if e["type"] == "error"] == ["turn_in_progress"]


# --- 7. the provider's "context too long" ---------------------------------------------

CONTEXT_TOO_LONG = {
    "openai_compatible": Fail(
        status=400,
        body={
            "error": {
                "message": "This model's maximum context length is 8192 tokens. However, "
                "your messages resulted in 9100 tokens. Please reduce the length.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
        should_retry=False,
    ),
    "anthropic": Fail(
        status=400,
        body={
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "prompt is too long: 210183 tokens > 200000 maximum",
            },
        },
        should_retry=False,
    ),
}


@pytest.mark.parametrize("provider", ["openai_compatible", "anthropic"])
async def test_context_too_long_compacts_once_and_runs_the_turn_again(llm_server, provider) -> None:
    chats: list[int] = []

    def model(body: dict[str, Any], wire: str) -> Any:
        if is_summary(body):
            return Reply(text=SUMMARY)
        chats.append(1)
        return CONTEXT_TOO_LONG[provider] if len(chats) == 1 else Reply(text="压缩后继续。")

    llm_server.responder = model
    user, session = await _world(llm_server, provider=provider, history=40)
    ws, _ = await connect(token=await token_for(user), origin=None)
    await send(ws, {"type": "chat", "sessionId": str(session.pk), "content": "继续"})
    events = await receive_until(ws, "turn_done", timeout=30)
    await ws.disconnect()
    kinds = [e["type"] for e in events]
    assert "error" not in kinds, [e for e in events if e["type"] == "error"]
    assert kinds.index("compaction_start") < kinds.index("compaction_done") < kinds.index("delta")
    assert next(e for e in events if e["type"] == "compaction_start")["reason"] == "auto"
    assert len(chats) == 2, "one retry"
    history = await _history(session)
    assert not [m for m in history if m.metadata.get("systemType") == "turn_event"]
    assert [m.content for m in history if m.compacted_at is None][-1] == "压缩后继续。"


async def test_context_too_long_twice_fails_the_turn_with_that_reason(llm_server) -> None:
    llm_server.responder = lambda body, wire: (
        Reply(text=SUMMARY) if is_summary(body) else CONTEXT_TOO_LONG["openai_compatible"]
    )
    user, session = await _world(llm_server, history=40)
    ws, _ = await connect(token=await token_for(user), origin=None)
    await send(ws, {"type": "chat", "sessionId": str(session.pk), "content": "继续"})
    events = await receive_until(ws, "turn_done", timeout=30)
    await ws.disconnect()
    chat_requests = [r for r in llm_server.requests if not is_summary(r.body)]
    assert len(chat_requests) == 2
    assert [e["reason"] for e in events if e["type"] == "error"] == ["context_too_long"]
    assert [e["type"] for e in events].count("compaction_done") == 1
