from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async

from agents.models import Message
from agents.services import messages_bulk_append
from condense import ToolCall
from scripted_llm import Fail, Reply
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.support.sockets import connect, receive, receive_until, send, token_for
from tests.support.summaries import SUMMARY, is_summary_request

pytestmark = pytest.mark.django_db(transaction=True)


@database_sync_to_async
def _setup(
    server, *, provider="openai_compatible", window=200_000, history=0, filler=200, aux=True
):
    user = make_user()
    base = server.openai_base_url if provider != "anthropic" else server.anthropic_base_url
    channel = make_channel(
        provider=provider, base_url=base, context_window=window, is_auxiliary=True
    )
    agent = make_agent(model_channel=channel, auxiliary_model_channel=channel if aux else None)
    session = make_session(owner=user, agent=agent)
    rows = [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"第 {i} 轮 src/parser.py " + "内容" * filler,
        }
        for i in range(history)
    ]
    if rows:
        messages_bulk_append(session=session, rows=rows)
    return user, session


@pytest.mark.parametrize("provider", ["openai_compatible", "anthropic"])
async def test_a_turn_streams_runs_tools_and_stores_everything(llm_server, provider) -> None:
    llm_server.enqueue(
        Reply(
            text="我先写文件。",
            tool_calls=[
                ToolCall(
                    "call_1", "write_file", json.dumps({"path": "notes/a.txt", "content": "hello"})
                )
            ],
        ),
        Reply(text="写好了 notes/a.txt。", chunk_size=3),
    )
    user, session = await _setup(llm_server, provider=provider)
    ws, _ = await connect(token=await token_for(user), origin=None)
    await send(ws, {"type": "chat", "sessionId": str(session.pk), "content": "写一个文件"})
    events = await receive_until(ws, "turn_done")
    # the untitled chat takes its title from the message: its owner's sockets hear of it
    assert {
        "type": "session_updated",
        "sessionId": str(session.pk),
        "title": "写一个文件",
    } in events
    events = [e for e in events if e["type"] != "session_updated"]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "message" and "delta" in kinds and kinds[-1] == "turn_done"
    stored = [e["message"] for e in events if e["type"] == "message"]
    assert [m["role"] for m in stored] == ["user", "assistant", "tool", "assistant"]
    assert stored[2]["tool_call_id"] == "call_1" and stored[2]["content"].startswith(
        "wrote 5 bytes"
    )
    meters = [e for e in events if e["type"] == "token_update"]
    assert meters and meters[-1]["current"]["apiCalls"] == 2
    assert (
        meters[-1]["context"]["estimated"] is True
    )  # the last answer is not in the reported input yet
    second = llm_server.requests[1].body
    assert "notes/a.txt" in json.dumps(second)
    await ws.disconnect()


async def test_auto_compaction_runs_before_the_model_call(llm_server) -> None:
    llm_server.responder = lambda body, wire: (
        Reply(text=SUMMARY) if is_summary_request(body) else Reply(text="继续。")
    )
    user, session = await _setup(llm_server, window=6000, history=40)
    ws, _ = await connect(token=await token_for(user), origin=None)
    await send(ws, {"type": "chat", "sessionId": str(session.pk), "content": "继续修 bug"})
    events = await receive_until(ws, "turn_done", timeout=30)
    kinds = [e["type"] for e in events]
    assert kinds.index("compaction_start") < kinds.index("compaction_done") < kinds.index("delta")
    assert events[kinds.index("compaction_start")]["reason"] == "auto"
    done = events[kinds.index("compaction_done")]
    assert done["tokensAfter"] < done["tokensBefore"] and done["removedCount"] > 0
    chat_request = [r for r in llm_server.requests if not is_summary_request(r.body)][-1].body
    sent = json.dumps(chat_request, ensure_ascii=False)
    assert "[CONTEXT COMPACTION]" in sent and "src/parser.py" in sent
    assert "第 5 轮" not in sent  # the middle was replaced by the summary
    await ws.disconnect()


async def test_manual_compact_and_a_second_request_while_in_flight_is_skipped(llm_server) -> None:
    import time

    def slow(body, wire):
        time.sleep(1.0)
        return Reply(text=SUMMARY)

    llm_server.responder = slow
    user, session = await _setup(llm_server, history=20)
    ws, _ = await connect(token=await token_for(user), origin=None)
    sid = str(session.pk)
    await send(ws, {"type": "compact", "sessionId": sid, "instructions": "保留文件路径"})
    await send(ws, {"type": "compact", "sessionId": sid})
    events = await receive_until(ws, "compaction_done", timeout=20)
    kinds = [e["type"] for e in events]
    assert "compaction_skipped" in kinds and kinds.count("compaction_start") == 1
    assert events[kinds.index("compaction_start")]["reason"] == "manual"
    prompt = llm_server.requests[0].body["messages"][0]["content"]
    assert "保留文件路径" in prompt
    await ws.disconnect()


async def test_a_message_sent_during_compaction_waits_and_is_answered(llm_server) -> None:
    import time

    def model(body, wire):
        if is_summary_request(body):
            time.sleep(1.0)
            return Reply(text=SUMMARY)
        return Reply(text="收到排队的消息。")

    llm_server.responder = model
    user, session = await _setup(llm_server, history=20)
    ws, _ = await connect(token=await token_for(user), origin=None)
    sid = str(session.pk)
    await send(ws, {"type": "compact", "sessionId": sid})
    await send(ws, {"type": "chat", "sessionId": sid, "content": "排队"})
    events = await receive_until(ws, "turn_done", timeout=20)
    kinds = [e["type"] for e in events]
    assert kinds.index("compaction_done") < kinds.index("delta")
    await ws.disconnect()


async def test_auxiliary_failure_is_reported_and_the_chat_goes_on(llm_server) -> None:
    llm_server.responder = lambda body, wire: (
        Fail(status=500, should_retry=False)
        if is_summary_request(body)
        else Reply(text="照常回答。")
    )
    user, session = await _setup(llm_server, window=6000, history=40)
    before = await database_sync_to_async(
        lambda: list(
            Message.objects.filter(session=session).values("id", "content", "compacted_at")
        )
    )()
    ws, _ = await connect(token=await token_for(user), origin=None)
    await send(ws, {"type": "chat", "sessionId": str(session.pk), "content": "继续"})
    events = await receive_until(ws, "turn_done", timeout=30)
    failed = [e for e in events if e["type"] == "compaction_failed"]
    assert failed and failed[0]["reason"] == "upstream_error"
    assert any(e["type"] == "delta" for e in events)
    after = await database_sync_to_async(
        lambda: list(
            Message.objects.filter(session=session, id__in=[r["id"] for r in before]).values(
                "id", "content", "compacted_at"
            )
        )
    )()
    assert after == before
    await ws.disconnect()


async def test_system_prompt_over_the_threshold_is_refused(llm_server) -> None:
    user, session = await _setup(llm_server, window=1000)
    await database_sync_to_async(
        lambda: (
            type(session.agent)
            .objects.filter(pk=session.agent_id)
            .update(system_prompt="规则" * 2000)
        )
    )()
    ws, _ = await connect(token=await token_for(user), origin=None)
    await send(ws, {"type": "chat", "sessionId": str(session.pk), "content": "hi"})
    # refused before it is stored (issue 16 item 9): no turn, nothing to send later
    event = await receive(ws)
    assert event["type"] == "error" and event["reason"] == "system_prompt_too_long"
    assert "系统提示过长" in event["error"]
    assert await ws.receive_nothing(timeout=0.3)
    assert llm_server.requests == []
    assert not await Message.objects.filter(session_id=session.pk).aexists()
    await ws.disconnect()
