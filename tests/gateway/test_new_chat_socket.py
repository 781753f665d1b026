"""Issue 16 item 3 on the socket: a chat is stored with its first message (a ``chat`` frame
with ``agent`` and no ``sessionId``), never empty; titles reach every socket of the owner
(``session_updated``); the chat page's socket renders a streaming answer as Markdown at a
bounded rate."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async
from django.conf import settings
from django.test import Client

from agents.models import ChatSession, Message
from scripted_llm import Reply
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.support.sockets import connect, receive, receive_until, send, token_for

pytestmark = pytest.mark.django_db(transaction=True)


@database_sync_to_async
def _user_and_agent(server, *, channel: bool = True, owner_only: bool = False):
    user = make_user()
    model = make_channel(base_url=server.openai_base_url, context_window=200_000)
    agent = make_agent(model_channel=model if channel else None, owner=user if owner_only else None)
    return user, agent


@database_sync_to_async
def _sessions(user) -> list[ChatSession]:
    return list(ChatSession.objects.filter(owner=user))


@database_sync_to_async
def _message_count() -> int:
    return Message.objects.count()


@database_sync_to_async
def _cookie(user) -> str:
    client = Client()
    client.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"


async def test_the_first_message_stores_the_chat_and_answers(llm_server) -> None:
    llm_server.enqueue(Reply(text="好的，开始规划。"))
    user, agent = await _user_and_agent(llm_server)
    ws, _ = await connect(token=await token_for(user), origin=None)
    await send(ws, {"type": "chat", "agent": agent.pk, "content": "  帮我规划重构  "})
    created = await receive(ws)
    assert created["type"] == "session_created"
    (session,) = await _sessions(user)
    assert created == {
        "type": "session_created",
        "sessionId": str(session.pk),
        "agent": agent.pk,
        "title": "帮我规划重构",
    }
    events = await receive_until(ws, "turn_done")
    stored = [e["message"] for e in events if e["type"] == "message"]
    assert [m["role"] for m in stored] == ["user", "assistant"]
    assert stored[0]["content"] == "  帮我规划重构  "
    assert all(e.get("sessionId") == str(session.pk) for e in events)
    assert session.title == "帮我规划重构" and session.agent_id == agent.pk
    # the next message goes to the chat by its id, like any other
    llm_server.enqueue(Reply(text="第二个回答。"))
    await send(ws, {"type": "chat", "sessionId": str(session.pk), "content": "继续"})
    events = await receive_until(ws, "turn_done")
    assert [e["message"]["role"] for e in events if e["type"] == "message"] == [
        "user",
        "assistant",
    ]
    assert len(await _sessions(user)) == 1
    await ws.disconnect()


async def test_a_page_form_value_is_an_agent_id_too(llm_server) -> None:
    """htmx's ws-send sends form values as strings (and an empty sessionId is none)."""
    llm_server.enqueue(Reply(text="好。"))
    user, agent = await _user_and_agent(llm_server)
    ws, _ = await connect(token=await token_for(user), origin=None)
    await send(ws, {"type": "chat", "sessionId": "", "agent": str(agent.pk), "content": "hi"})
    assert (await receive(ws))["type"] == "session_created"
    await receive_until(ws, "turn_done")
    await ws.disconnect()


@pytest.mark.parametrize(
    ("frame", "reason"),
    [
        ({"agent": 0}, "bad_field"),
        ({"agent": "x"}, "bad_field"),
        ({"agent": True}, "bad_field"),
        ({"agent": 999_999}, "unknown_agent"),
        ({"agent": 1, "content": "  "}, "empty_message"),
    ],
)
async def test_a_bad_new_chat_frame_is_refused_and_stores_nothing(
    llm_server, frame, reason
) -> None:
    user, _agent = await _user_and_agent(llm_server)
    ws, _ = await connect(token=await token_for(user), origin=None)
    await send(ws, {"type": "chat", "content": "hi", **frame})
    event = await receive(ws)
    assert event["type"] == "error" and event["reason"] == reason
    assert "sessionId" not in event
    assert await _sessions(user) == [] and await _message_count() == 0
    await ws.disconnect()


async def test_someone_elses_agent_and_an_agent_without_a_model_store_nothing(
    llm_server,
) -> None:
    owner, private = await _user_and_agent(llm_server, owner_only=True)
    _, no_model = await _user_and_agent(llm_server, channel=False)
    user = await database_sync_to_async(make_user)()
    ws, _ = await connect(token=await token_for(user), origin=None)
    await send(ws, {"type": "chat", "agent": private.pk, "content": "hi"})
    assert await receive(ws) == {
        "type": "error",
        "error": "no such agent",
        "reason": "unknown_agent",
    }
    await send(ws, {"type": "chat", "agent": no_model.pk, "content": "hi"})
    event = await receive(ws)
    assert event["reason"] == "no_model_channel" and "sessionId" not in event
    assert await ws.receive_nothing(timeout=0.3)
    assert await _sessions(user) == [] and await _message_count() == 0
    await ws.disconnect()


async def test_a_title_from_the_first_message_reaches_every_socket_of_the_owner(
    llm_server,
) -> None:
    llm_server.enqueue(Reply(text="好。"))
    user, agent = await _user_and_agent(llm_server)
    untitled = await database_sync_to_async(make_session)(owner=user, agent=agent)
    other = await database_sync_to_async(make_session)(owner=user, agent=agent, title="别的")
    token = await token_for(user)
    sender, _ = await connect(token=token, origin=None)
    watcher, _ = await connect(token=token, origin=None)  # watches nothing in particular
    await send(sender, {"type": "chat", "sessionId": str(untitled.pk), "content": "发布清单"})
    events = await receive_until(sender, "turn_done")
    updated = {"type": "session_updated", "sessionId": str(untitled.pk), "title": "发布清单"}
    assert events.count(updated) == 1
    assert await receive(watcher) == updated
    # a chat with a title keeps it, and nobody is told
    llm_server.enqueue(Reply(text="好。"))
    await send(sender, {"type": "chat", "sessionId": str(other.pk), "content": "改名？"})
    events = await receive_until(sender, "turn_done")
    assert not [e for e in events if e["type"] == "session_updated"]
    assert await watcher.receive_nothing(timeout=0.3)
    await sender.disconnect()
    await watcher.disconnect()


async def test_the_page_socket_starts_a_chat_and_renders_the_stream_as_markdown(
    llm_server,
) -> None:
    text = "## 计划\n\n**第一步**：读代码。\n\n" + "".join(f"- 第 {i} 项\n" for i in range(60))
    llm_server.enqueue(Reply(text=text, chunk_size=4, delay_per_chunk=0.01))
    user, agent = await _user_and_agent(llm_server)
    ws, connected = await connect(path="/ws/chat/html/", cookie=await _cookie(user))
    assert connected
    await send(ws, {"type": "chat", "agent": str(agent.pk), "content": "给个计划"})
    frames: list[str] = []
    while True:
        frame = await ws.receive_from(timeout=10)
        frames.append(frame)
        if 'id="turn-status"' in frame and 'data-busy="false"' in frame:
            break
    (session,) = await _sessions(user)
    signal = frames[0]
    assert 'id="session-signal"' in signal and 'data-kind="created"' in signal
    assert f'data-url="/chat/{session.pk}/"' in signal and 'id="session-items"' in signal
    previews = [f for f in frames if f.startswith('<div id="stream-text" hx-swap-oob="true"')]
    rendered = [f for f in previews if "<h2>计划</h2>" in f]
    deltas = len(text) // 4
    assert rendered and all("**" not in f for f in previews)
    assert "<strong>第一步</strong>" in rendered[-1]
    assert len(previews) < deltas / 3, (len(previews), deltas)  # a bounded rate
    assert not [f for f in frames if '<div id="stream-text" hx-swap-oob="beforeend">' in f]
    await ws.disconnect()
