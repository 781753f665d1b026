"""A turn's events that are ready together cross the channel layer as one message
(``agents.broadcast.apublish``): fewer Redis round trips per turn, and still one frame per
event, in the same order, on every socket watching the session."""

from __future__ import annotations

import json
from typing import Any

import pytest
from channels.db import database_sync_to_async

from agents.events import (
    Delta,
    MessageStored,
    TurnDone,
    event_from_layer,
    events_from_layer,
    events_to_layer,
)
from condense import ToolCall
from scripted_llm import Reply
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.support.sockets import connect, receive_until, send, token_for

pytestmark = pytest.mark.django_db(transaction=True)


@database_sync_to_async
def _session(server):
    user = make_user()
    channel = make_channel(base_url=server.openai_base_url, context_window=200_000)
    session = make_session(owner=user, agent=make_agent(model_channel=channel))
    session.title = "named"  # no session_updated: only the session's own events
    session.save(update_fields=["title"])
    return user, session


def _record_session_sends(channel_layer, monkeypatch) -> list[list[str]]:
    """The event types of each layer message sent to a session's group, in order."""
    sent: list[list[str]] = []
    real = channel_layer.group_send

    async def recording(group: str, message: dict[str, Any]) -> None:
        if group.startswith("session."):
            if message["type"] == "session.events":
                sent.append([part["event_type"] for part in message["events"]])
            else:
                sent.append([message["event_type"]])
        await real(group, message)

    monkeypatch.setattr(channel_layer, "group_send", recording)
    return sent


async def _turn(user, session, content: str) -> list[str]:
    ws, connected = await connect(token=await token_for(user), origin=None)
    assert connected
    await send(ws, {"type": "chat", "sessionId": str(session.pk), "content": content})
    events = await receive_until(ws, "turn_done")
    await ws.disconnect()
    return [event["type"] for event in events]


CALL = ToolCall("call_1", "write_file", json.dumps({"path": "a.txt", "content": "x"}))

TURNS = [
    pytest.param(
        [Reply(text="four", chunk_size=2)],
        # the socket sees every event as its own frame, in the turn's order …
        ["message", "token_update", "delta", "delta", "message", "token_update", "turn_done"],
        # … the user's message with the meter, each delta at once, the answer with turn_done
        [
            ["message", "token_update"],
            ["delta"],
            ["delta"],
            ["message", "token_update", "turn_done"],
        ],
        id="answered: three layer messages and one per delta",
    ),
    pytest.param(
        [Reply(text="", tool_calls=[CALL]), Reply(text="done", chunk_size=4)],
        # the call (and its meter) and its result go when stored; only the last answer waits
        [
            *("message", "token_update"),
            *("message", "token_update", "message"),
            *("delta", "message", "token_update", "turn_done"),
        ],
        [
            ["message", "token_update"],
            ["message", "token_update"],
            ["message"],
            ["delta"],
            ["message", "token_update", "turn_done"],
        ],
        id="a tool step: published when stored",
    ),
]


@pytest.mark.parametrize(("replies", "frames", "layer_messages"), TURNS)
async def test_a_turns_events_cross_the_layer_together_and_reach_the_socket_one_by_one(
    llm_server, channel_layer, monkeypatch, replies, frames, layer_messages
) -> None:
    llm_server.enqueue(*replies)
    user, session = await _session(llm_server)
    sent = _record_session_sends(channel_layer, monkeypatch)

    assert await _turn(user, session, "hello") == frames
    assert sent == layer_messages


def test_several_events_go_as_one_layer_message_and_come_back_in_order() -> None:
    sid = "4c8a3f4e-2b1d-4d7e-9a55-0d1f8f1f2a3b"
    events = [
        MessageStored(sid, {"role": "assistant", "content": "hi"}),
        Delta(sid, "hi"),
        TurnDone(sid, stopped=True),
    ]
    message = events_to_layer(events)
    assert message["type"] == "session.events"
    assert events_from_layer(message) == events
    # one event keeps the single-event message every other publisher sends
    single = events_to_layer([TurnDone(sid)])
    assert single["type"] == "session.event" and event_from_layer(single) == TurnDone(sid)
