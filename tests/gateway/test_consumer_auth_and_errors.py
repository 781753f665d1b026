from __future__ import annotations

import uuid

import pytest
from channels.db import database_sync_to_async
from django.conf import settings
from django.test import Client

from agents.models import Message
from tests.factories import make_agent, make_session, make_user
from tests.support.sockets import connect, receive, send, token_for

pytestmark = pytest.mark.django_db(transaction=True)


@database_sync_to_async
def _user_and_session():
    user = make_user()
    return user, make_session(owner=user, agent=make_agent())


@database_sync_to_async
def _session_cookie(user) -> str:
    client = Client()
    client.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"


async def test_anonymous_socket_is_refused() -> None:
    communicator, connected = await connect()
    assert not connected
    await communicator.disconnect()


async def test_token_socket_needs_no_origin_but_refuses_a_foreign_one() -> None:
    user, _ = await _user_and_session()
    token = await token_for(user)
    communicator, connected = await connect(token=token, origin=None)
    assert connected
    await communicator.disconnect()
    communicator, connected = await connect(token=token, origin=b"http://evil.example")
    assert not connected
    await communicator.disconnect()
    communicator, connected = await connect(token="not-a-token", origin=None)
    assert not connected
    await communicator.disconnect()


async def test_cookie_socket_requires_an_allowed_origin() -> None:
    user, _ = await _user_and_session()
    cookie = await _session_cookie(user)
    communicator, connected = await connect(cookie=cookie)
    assert connected
    await communicator.disconnect()
    for origin in (b"http://evil.example", None):
        communicator, connected = await connect(cookie=cookie, origin=origin)
        assert not connected, origin
        # a refused socket's consumer is still waiting on the channel layer: end it here,
        # not in the event loop's teardown (a cancelled channels-redis receive could hang
        # there until Redis's 30 s socket timeout)
        await communicator.disconnect()


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("{oops", "bad_json"),
        ('{"type": "teleport", "sessionId": "x"}', "unknown_type"),
        ('{"type": "chat", "content": "hi"}', "bad_field"),
        ('{"type": "chat", "sessionId": "x", "content": "   "}', "empty_message"),
    ],
)
async def test_bad_frames_get_an_error_and_the_socket_stays_open(raw: str, reason: str) -> None:
    user, session = await _user_and_session()
    communicator, _ = await connect(token=await token_for(user), origin=None)
    await communicator.send_to(text_data=raw)
    event = await receive(communicator)
    assert event["type"] == "error" and event["reason"] == reason
    # still open: a valid frame for an unknown session is answered
    await send(communicator, {"type": "compact", "sessionId": str(uuid.uuid4())})
    assert (await receive(communicator))["reason"] == "unknown_session"
    await communicator.disconnect()


async def test_oversized_and_binary_frames(settings) -> None:
    settings.NETACLAW = {**settings.NETACLAW, "MAX_FRAME_BYTES": 1024}
    user, session = await _user_and_session()
    communicator, _ = await connect(token=await token_for(user), origin=None)
    await communicator.send_to(text_data='{"type":"chat","content":"' + "x" * 5000 + '"}')
    assert (await receive(communicator))["reason"] == "frame_too_large"
    await communicator.send_to(bytes_data=b"\x00\x01")
    assert (await receive(communicator))["reason"] == "binary_frame"
    await communicator.disconnect()


async def test_another_users_session_looks_like_an_unknown_one() -> None:
    _, foreign = await _user_and_session()
    me, _ = await _user_and_session()
    communicator, _ = await connect(token=await token_for(me), origin=None)
    for session_id in (str(foreign.pk), str(uuid.uuid4()), "not-a-uuid"):
        await send(communicator, {"type": "chat", "sessionId": session_id, "content": "hi"})
        event = await receive(communicator)
        assert event == {
            "type": "error",
            "error": "no such session",
            "reason": "unknown_session",
            "sessionId": session_id,
        }
    await communicator.disconnect()


async def test_chat_without_a_model_channel_is_refused_and_stores_nothing() -> None:
    """Issue 16 item 9: a message the agent cannot answer is not stored, so it is never sent
    later beside the next one as a second user turn."""
    user, session = await _user_and_session()
    communicator, _ = await connect(token=await token_for(user), origin=None)
    await send(communicator, {"type": "chat", "sessionId": str(session.pk), "content": "你好"})
    event = await receive(communicator)
    assert event["type"] == "error" and event["reason"] == "no_model_channel"
    assert event["sessionId"] == str(session.pk) and "model channel" in event["error"]
    assert await communicator.receive_nothing(timeout=0.3)
    assert not await Message.objects.filter(session=session).aexists()
    await communicator.disconnect()
