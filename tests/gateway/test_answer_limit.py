"""Issue 27 item 11: a model answer has a size limit. Past ``NETACLAW_MAX_ANSWER_CHARS`` the
rest of its stream is not read (the connection to the provider is closed), and the answer is
stored cut, with a marker the page shows and the model reads; the turn ends normally."""

from __future__ import annotations

import time

import pytest
from channels.db import database_sync_to_async

from agents.models import Message, Role
from agents.runtime import answer_cut_marker
from condense import ToolCall
from scripted_llm import Reply
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.support.sockets import connect, receive_until, send, token_for

pytestmark = pytest.mark.django_db(transaction=True)

LIMIT = 1_000


@pytest.fixture
def answer_limit(settings) -> int:
    settings.NETACLAW = {**settings.NETACLAW, "MAX_ANSWER_CHARS": LIMIT}
    return LIMIT


@database_sync_to_async
def _chat(server) -> tuple[object, str]:
    user = make_user()
    channel = make_channel(base_url=server.openai_base_url, context_window=200_000)
    session = make_session(owner=user, agent=make_agent(model_channel=channel))
    return user, str(session.pk)


@database_sync_to_async
def _answers(sid: str) -> list[Message]:
    return list(Message.objects.filter(session__pk=sid, role=Role.ASSISTANT).order_by("position"))


async def test_an_answer_past_the_limit_is_cut_with_a_marker(llm_server, answer_limit) -> None:
    # 50 chunks of 100 characters, 0.05 s apart: 2.5 s if it were read to the end
    long = "".join(f"{i:04d}" + "长" * 96 for i in range(50))
    llm_server.enqueue(
        Reply(
            text=long,
            chunk_size=100,
            delay_per_chunk=0.05,
            tool_calls=[ToolCall("call_1", "list_files", "{}")],
        )
    )
    user, sid = await _chat(llm_server)
    ws, _ = await connect(token=await token_for(user), origin=None)
    started = time.monotonic()
    await send(ws, {"type": "chat", "sessionId": sid, "content": "写很长的回答"})
    events = await receive_until(ws, "turn_done", timeout=30)
    took = time.monotonic() - started
    await ws.disconnect()

    (answer,) = await _answers(sid)
    marker = answer_cut_marker(LIMIT)
    assert answer.content == long[:LIMIT] + marker
    assert answer.metadata["cutAt"] == LIMIT and not answer.tool_calls, (
        "a cut answer is not acted on"
    )
    streamed = "".join(e["text"] for e in events if e["type"] == "delta")
    assert streamed == answer.content, "the page streamed what is stored, the marker included"
    assert "error" not in [e["type"] for e in events]
    assert took < 2.0, f"the rest of the stream was read: {took:.1f} s"
    assert len(llm_server.requests) == 1, "no tool ran, no second model call"


async def test_an_answer_under_the_limit_is_whole(llm_server, answer_limit) -> None:
    text = "短" * LIMIT  # exactly the limit
    llm_server.enqueue(Reply(text=text, chunk_size=300))
    user, sid = await _chat(llm_server)
    ws, _ = await connect(token=await token_for(user), origin=None)
    await send(ws, {"type": "chat", "sessionId": sid, "content": "刚好"})
    await receive_until(ws, "turn_done", timeout=30)
    await ws.disconnect()

    (answer,) = await _answers(sid)
    assert answer.content == text and "cutAt" not in answer.metadata
