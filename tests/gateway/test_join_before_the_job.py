"""With workers a turn can start the moment its job is stored, before the web process is
done with the frame: the socket must already listen to the session's group then (issue 24:
at 500 clients some first turns lost their pieces, or all of them, when it joined after)."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async

from agents.broadcast import apublish
from agents.events import TurnDone
from runs import runner
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.support.sockets import connect, receive_until, send, token_for

pytestmark = pytest.mark.django_db(transaction=True)


def _instant_worker(session_id: str, holder: str, reply_to: str) -> None:
    """Stores no job: plays a worker that ran the turn at once and announced its end."""
    async_to_sync(apublish)(session_id, TurnDone(session_id, turn_id="instant"))


@database_sync_to_async
def _world():
    user = make_user()
    agent = make_agent(model_channel=make_channel(context_window=200_000), owner=user)
    return user, agent, make_session(owner=user, agent=agent)


@pytest.fixture
def instant_worker(monkeypatch):
    monkeypatch.setattr(runner, "turn_deferrer", lambda: _instant_worker)
    monkeypatch.setattr(runner, "uses_workers", lambda: True)


async def test_a_chat_frames_socket_hears_a_turn_that_starts_with_its_job(instant_worker) -> None:
    user, _agent, session = await _world()
    ws, _ = await connect(token=await token_for(user), origin=None)
    await send(ws, {"type": "chat", "sessionId": str(session.pk), "content": "你好"})
    events = await receive_until(ws, "turn_done", timeout=5)
    assert events[-1] == {"type": "turn_done", "sessionId": str(session.pk), "turnId": "instant"}
    await ws.disconnect()


async def test_a_new_chats_socket_hears_its_first_turn_start_with_its_job(instant_worker) -> None:
    user, agent, _session = await _world()
    ws, _ = await connect(token=await token_for(user), origin=None)
    await send(ws, {"type": "chat", "agent": agent.pk, "content": "新对话"})
    events = await receive_until(ws, "turn_done", timeout=5)
    created = next(e for e in events if e["type"] == "session_created")
    assert events[-1]["turnId"] == "instant"
    assert events[-1]["sessionId"] == created["sessionId"]
    await ws.disconnect()


async def test_a_refused_chat_joins_nothing(instant_worker) -> None:
    user, _agent, _ = await _world()
    stranger_session = await database_sync_to_async(make_session)()
    ws, _ = await connect(token=await token_for(user), origin=None)
    await send(ws, {"type": "chat", "sessionId": str(stranger_session.pk), "content": "偷看"})
    (refusal,) = await receive_until(ws, "error", timeout=5)
    assert refusal["reason"] in {"unknown_session", "not_found"}
    await database_sync_to_async(_instant_worker)(str(stranger_session.pk), "", "")
    assert await ws.receive_nothing(timeout=0.5)
    await ws.disconnect()
