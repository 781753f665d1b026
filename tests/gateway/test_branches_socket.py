"""Regenerate, edit and the version switch over the socket (issue 26 item 1), with the
official SDK against the scripted model: the model is asked with the active branch only,
the answer streams as a turn's does, and a switch brings the earlier version back."""

from __future__ import annotations

import time

import pytest
from channels.db import database_sync_to_async

from agents.models import Message, MessageFork
from agents.selectors import llm_history_load
from agents.services import messages_bulk_append
from scripted_llm import Reply
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.support.sockets import connect, receive_until, send, token_for

pytestmark = pytest.mark.django_db(transaction=True)


@database_sync_to_async
def _setup(server):
    user = make_user()
    channel = make_channel(base_url=server.openai_base_url, context_window=200_000)
    session = make_session(owner=user, agent=make_agent(model_channel=channel))
    stored = messages_bulk_append(
        session=session,
        rows=[
            {"role": "user", "content": "first question"},
            {"role": "assistant", "content": "first answer"},
            {"role": "user", "content": "second question"},
            {"role": "assistant", "content": "second answer"},
        ],
    )
    return user, session, [m.pk for m in stored]


@database_sync_to_async
def _history(session) -> list[str]:
    return [m.content for m in llm_history_load(session=session)]


def _sent_to_model(server) -> list[str]:
    return [m.get("content") for m in server.requests[-1].body["messages"][1:]]


async def test_regenerate_answers_the_question_again_and_keeps_the_first_answer(
    llm_server,
) -> None:
    user, session, (q1, a1, q2, a2) = await _setup(llm_server)
    sid = str(session.pk)
    llm_server.enqueue(Reply(text="a better second answer", chunk_size=4))
    ws, _ = await connect(token=await token_for(user), origin=None)
    await send(ws, {"type": "regenerate", "sessionId": sid, "messageId": str(a2)})
    events = await receive_until(ws, "turn_done")
    kinds = [e["type"] for e in events]
    assert kinds[0] == "branch_changed" and "delta" in kinds
    changed = events[0]
    assert changed["setAsideFrom"] == a2 and changed["setAsideThrough"] == a2
    assert (changed["kind"], changed["version"], changed["versions"], changed["turn"]) == (
        "regenerate",
        2,
        2,
        True,
    )
    assert changed["marked"]["id"] == q2 and changed["marked"]["answers"]["versions"] == 2
    # the model was asked with the history up to the question, not the answer set aside
    assert _sent_to_model(llm_server) == ["first question", "first answer", "second question"]
    assert await _history(session) == [
        "first question",
        "first answer",
        "second question",
        "a better second answer",
    ]
    fork_id = changed["forkId"]
    await send(ws, {"type": "branch", "sessionId": sid, "forkId": fork_id, "version": "1"})
    switched = await receive_until(ws, "branch_changed")
    assert switched[-1]["turn"] is False and switched[-1]["version"] == 1
    assert (await _history(session))[-1] == "second answer"
    await ws.disconnect()


async def test_edit_sends_the_new_text_and_the_old_turn_waits_as_a_version(llm_server) -> None:
    user, session, (q1, a1, q2, a2) = await _setup(llm_server)
    sid = str(session.pk)
    llm_server.enqueue(Reply(text="answer to the edited question"))
    ws, _ = await connect(token=await token_for(user), origin=None)
    await send(
        ws, {"type": "edit", "sessionId": sid, "messageId": q1, "content": "edited question"}
    )
    events = await receive_until(ws, "turn_done")
    changed, stored = events[0], events[1]
    assert changed["type"] == "branch_changed" and changed["kind"] == "edit"
    assert (changed["setAsideFrom"], changed["setAsideThrough"]) == (q1, a2)
    assert stored["type"] == "message" and stored["message"]["content"] == "edited question"
    assert stored["message"]["branch"]["version"] == 2
    assert _sent_to_model(llm_server) == ["edited question"]
    assert await _history(session) == ["edited question", "answer to the edited question"]
    assert await Message.objects.filter(session=session).acount() == 6
    await ws.disconnect()


async def test_refusals_change_nothing(llm_server) -> None:
    user, session, (q1, a1, q2, a2) = await _setup(llm_server)
    sid = str(session.pk)
    ws, _ = await connect(token=await token_for(user), origin=None)
    await send(ws, {"type": "regenerate", "sessionId": sid, "messageId": q1})
    error = (await receive_until(ws, "error"))[-1]
    assert error["reason"] == "not_regenerable"
    await send(ws, {"type": "edit", "sessionId": sid, "messageId": q1, "content": "  "})
    assert (await receive_until(ws, "error"))[-1]["reason"] == "empty_message"
    await send(ws, {"type": "branch", "sessionId": sid, "forkId": "x", "version": 1})
    assert (await receive_until(ws, "error"))[-1]["reason"] == "bad_field"
    # someone else's chat is unknown, as every frame's
    other = await database_sync_to_async(make_user)()
    ws2, _ = await connect(token=await token_for(other), origin=None)
    await send(ws2, {"type": "regenerate", "sessionId": sid, "messageId": a2})
    assert (await receive_until(ws2, "error"))[-1]["reason"] == "unknown_session"
    assert not await MessageFork.objects.aexists()
    assert len(await _history(session)) == 4
    assert llm_server.requests == []
    await ws.disconnect()
    await ws2.disconnect()


async def test_a_regenerate_while_the_agent_works_is_refused(llm_server) -> None:
    def slow(body, wire):
        time.sleep(1.5)
        return Reply(text="slow answer")

    llm_server.responder = slow
    user, session, (q1, a1, q2, a2) = await _setup(llm_server)
    sid = str(session.pk)
    ws, _ = await connect(token=await token_for(user), origin=None)
    await send(ws, {"type": "chat", "sessionId": sid, "content": "third question"})
    await receive_until(ws, "message")
    await send(ws, {"type": "regenerate", "sessionId": sid, "messageId": a2})
    refusal = await receive_until(ws, "error")
    assert refusal[-1]["reason"] == "turn_in_progress"
    await receive_until(ws, "turn_done", timeout=20)
    assert not await MessageFork.objects.aexists()
    await ws.disconnect()
