"""Characters no database stores (NUL, lone surrogates) and tool-call ids longer than the column
never crash a socket or a turn: they become a clear error or are stored safely, and the
session keeps working (issue 15, item 4). Run on SQLite and on PostgreSQL (``DATABASE_URL``),
where NUL in text and ``jsonb`` and an id over 200 characters are refused by the database."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async

from agents.models import Message
from agents.storable import MAX_TOOL_CALL_ID
from condense import ToolCall
from scripted_llm import Reply
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.support.sockets import connect, receive_until, send, token_for

pytestmark = pytest.mark.django_db(transaction=True)


@database_sync_to_async
def _setup(server):
    user = make_user()
    channel = make_channel(base_url=server.openai_base_url, context_window=200_000)
    session = make_session(owner=user, agent=make_agent(model_channel=channel))
    return user, session


@database_sync_to_async
def _stored(session):
    return list(
        Message.objects.filter(session=session)
        .order_by("position", "id")
        .values("role", "content", "tool_calls", "tool_call_id", "metadata")
    )


async def _turn(ws, session, content):
    await send(ws, {"type": "chat", "sessionId": str(session.pk), "content": content})
    return await receive_until(ws, "turn_done", timeout=30)


async def test_a_nul_in_a_chat_frame_is_refused_and_the_socket_goes_on(llm_server) -> None:
    llm_server.enqueue(Reply(text="好的。"))
    user, session = await _setup(llm_server)
    ws, _ = await connect(token=await token_for(user), origin=None)
    sid = str(session.pk)
    await send(ws, {"type": "chat", "sessionId": sid, "content": "a\x00b"})
    refused = json.loads(await ws.receive_from(timeout=10))
    assert refused["type"] == "error" and refused["reason"] == "invalid_characters", refused
    assert "NUL" in refused["error"]
    await send(ws, {"type": "compact", "sessionId": sid, "instructions": "keep \x00 this"})
    refused = json.loads(await ws.receive_from(timeout=10))
    assert refused["reason"] == "invalid_characters"
    events = await _turn(ws, session, "你好")
    assert [e["type"] for e in events][-1] == "turn_done"
    assert [m["content"] for m in await _stored(session)] == ["你好", "好的。"]
    await ws.disconnect()


async def test_nul_in_an_answer_and_a_tool_result_and_a_long_call_id_keep_the_turn(
    llm_server,
) -> None:
    long_id = "call_" + "x" * 300
    llm_server.enqueue(
        Reply(
            text="写\x00入",
            tool_calls=[
                ToolCall(long_id, "write_file", json.dumps({"path": "n.txt", "content": "a\x00b"})),
                ToolCall("call_2", "read_file", json.dumps({"path": "n.txt"})),
            ],
        ),
        Reply(text="完成\x00。"),
        Reply(text="第二轮。"),
    )
    user, session = await _setup(llm_server)
    ws, _ = await connect(token=await token_for(user), origin=None)
    events = await _turn(ws, session, "写文件")
    kinds = [e["type"] for e in events]
    assert "error" not in kinds, [e for e in events if e["type"] == "error"]
    assert kinds[-1] == "turn_done"
    stored = await _stored(session)
    assert [m["role"] for m in stored] == ["user", "assistant", "tool", "tool", "assistant"]
    answer, written, read, final = stored[1], stored[2], stored[3], stored[4]
    assert answer["content"] == "写\ufffd入" and final["content"] == "完成\ufffd。"
    assert read["content"] == "a\ufffdb"
    # the long id is shortened the same way on both sides: the pair still matches
    call_ids = [c["id"] for c in answer["tool_calls"]]
    assert len(call_ids[0]) <= MAX_TOOL_CALL_ID and call_ids[0].startswith("call_xxx")
    assert [written["tool_call_id"], read["tool_call_id"]] == call_ids
    # the chat goes on: the next turn's request pairs the shortened ids
    events = await _turn(ws, session, "再来")
    assert [e["type"] for e in events][-1] == "turn_done"
    sent = llm_server.requests[-1].body["messages"]
    ids = [c["id"] for m in sent for c in m.get("tool_calls") or []]
    results = [m["tool_call_id"] for m in sent if m["role"] == "tool"]
    assert ids == results == call_ids
    await ws.disconnect()


async def test_a_file_name_with_a_lone_surrogate_does_not_break_the_session(llm_server) -> None:
    name = "bad\udcffname.txt"
    llm_server.enqueue(
        Reply(
            tool_calls=[ToolCall("c1", "write_file", json.dumps({"path": name, "content": "x"}))]
        ),
        Reply(tool_calls=[ToolCall("c2", "list_files", "{}")]),
        Reply(tool_calls=[ToolCall("c3", "search_files", json.dumps({"pattern": "x"}))]),
        Reply(text="列好了。"),
        Reply(tool_calls=[ToolCall("c4", "list_files", "{}")]),
        Reply(text="还在。"),
    )
    user, session = await _setup(llm_server)
    ws, _ = await connect(token=await token_for(user), origin=None)
    for content, answer in (("写一个怪名字的文件", "列好了。"), ("再列一次", "还在。")):
        events = await _turn(ws, session, content)
        kinds = [e["type"] for e in events]
        assert "error" not in kinds, [e for e in events if e["type"] == "error"]
        assert kinds[-1] == "turn_done"
        answers = [e["message"]["content"] for e in events if e["type"] == "message"]
        assert answers[-1] == answer
    tools = [m for m in await _stored(session) if m["role"] == "tool"]
    listing = tools[1]["content"]
    assert "bad" in listing and "name.txt" in listing and "\\udcff" in listing
    for message in await _stored(session):
        json.dumps(message, ensure_ascii=False).encode("utf-8")  # all of it is valid UTF-8
    await ws.disconnect()
