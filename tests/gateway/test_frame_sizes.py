"""No frame size closes a socket (issue 14, item 5), on a real Daphne with a plain
``websockets`` client and its default 1 MiB limit on what it receives.

Daphne hands autobahn a 1 MiB limit on *incoming* messages (``--websocket-max-message-size``,
default 1024 * 1024); a client library usually limits what it receives to the same 1 MiB
(``websockets``' ``max_size``). A legal 200,000-apostrophe chat message came back on the
HTML socket as a 1.2 MB bubble (each ``'`` escaped to ``&#x27;``), a large model answer as a
larger JSON frame: the client closed the socket. Now every frame the server sends is at most
``NETACLAW["MAX_FRAME_BYTES"]``: a large message travels as a preview flagged ``truncated``
whose whole text the page or the program fetches over HTTP, a large streamed chunk as
several ``delta`` frames. A client frame over the limit is answered with ``error`` /
``frame_too_large``, the socket stays open.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request

import pytest
import websockets
from django.conf import settings
from rest_framework.authtoken.models import Token

from agents.models import Message
from scripted_llm import Reply, ScriptedLLMServer
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.support.daphne import running_daphne

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

CLIENT_LIMIT = 2**20  # websockets' default max_size, like most client libraries'
BIG_ANSWER = "".join(f"line {i}: “quoted” <b>&amp;</b> 'x'\n" for i in range(40_000))  # 1.4 MB


def _session(llm: ScriptedLLMServer) -> tuple[str, str]:
    user = make_user()
    token = Token.objects.create(user=user).key
    channel = make_channel(base_url=llm.openai_base_url, context_window=2_000_000)
    agent = make_agent(model_channel=channel)
    return token, str(make_session(owner=user, agent=agent).pk)


async def _connect(url: str, token: str):
    return await websockets.connect(
        url,
        additional_headers={"Authorization": f"Token {token}"},
        open_timeout=20,
        max_size=CLIENT_LIMIT,
    )


async def _until(ws, predicate, timeout: float = 60) -> list:
    seen = []
    async with asyncio.timeout(timeout):
        while True:
            frame = await ws.recv()
            assert len(frame.encode()) <= settings.NETACLAW["MAX_FRAME_BYTES"]
            seen.append(frame)
            if predicate(frame):
                return seen


def _get_json(url: str, token: str) -> dict:
    request = urllib.request.Request(url, headers={"Authorization": f"Token {token}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def test_a_large_answer_reaches_a_json_client_in_pieces_and_by_reference(tmp_path) -> None:
    with ScriptedLLMServer(
        responder=lambda b, w: Reply(text=BIG_ANSWER, chunk_size=700_000)
    ) as llm:
        token, sid = _session(llm)
        over = {"NETACLAW_MAX_ANSWER_CHARS": str(len(BIG_ANSWER))}  # allowed, if rare
        with running_daphne(tmp_path / "var", env=over) as server:

            async def talk() -> list[dict]:
                ws = await _connect(server.ws_url, token)
                await ws.send(json.dumps({"type": "chat", "sessionId": sid, "content": "all"}))
                frames = await _until(ws, lambda f: json.loads(f)["type"] == "turn_done")
                # still open: the next frame is answered
                await ws.send(json.dumps({"type": "nonsense"}))
                refused = json.loads((await _until(ws, lambda f: True))[0])
                assert refused["reason"] == "unknown_type"
                await ws.close()
                return [json.loads(f) for f in frames]

            events = asyncio.run(talk())
            assert "".join(e["text"] for e in events if e["type"] == "delta") == BIG_ANSWER
            answer = next(
                e["message"]
                for e in events
                if e["type"] == "message" and e["message"]["role"] == "assistant"
            )
            assert answer["truncated"] is True
            assert BIG_ANSWER.startswith(answer["content"]) and answer["content"]
            full = _get_json(server.http_url + answer["full_url"], token)
    assert full["id"] == answer["id"] and full["content"] == BIG_ANSWER
    assert "truncated" not in full


def test_200000_apostrophes_on_the_html_socket_keep_it_open(tmp_path) -> None:
    content = "'" * 200_000  # legal: the protocol takes 200,000 characters
    with ScriptedLLMServer() as llm:
        token, sid = _session(llm)
        with running_daphne(tmp_path / "var") as server:

            async def talk() -> list[str]:
                ws = await _connect(f"{server.ws_url}html/?session={sid}", token)
                await ws.send(json.dumps({"type": "chat", "sessionId": sid, "content": content}))
                frames = await _until(ws, lambda f: 'data-busy="false"' in f)
                await ws.close()
                return frames

            frames = asyncio.run(talk())
    user = Message.objects.get(session_id=sid, role="user")
    assert user.content == content
    bubble = next(f for f in frames if 'data-role="user"' in f)
    assert f"/chat/{sid}/messages/{user.pk}/" in bubble  # the page loads the whole text
    assert "&#x27;" * 1000 in bubble


def test_an_incoming_frame_over_the_limit_is_answered_with_an_error(tmp_path) -> None:
    limit = settings.NETACLAW["MAX_FRAME_BYTES"]
    with ScriptedLLMServer() as llm:
        token, sid = _session(llm)
        with running_daphne(tmp_path / "var") as server:

            async def talk() -> list[dict]:
                ws = await _connect(server.ws_url, token)
                answers = []
                for size in (limit + 1, 3 * limit, 8 * limit):
                    frame = {"type": "chat", "sessionId": sid, "content": "x" * size}
                    await ws.send(json.dumps(frame))
                    answers.append(json.loads((await _until(ws, lambda f: True))[0]))
                await ws.send(json.dumps({"type": "chat", "sessionId": sid, "content": "hi"}))
                await _until(ws, lambda f: json.loads(f)["type"] == "turn_done")
                await ws.close()
                return answers

            answers = asyncio.run(talk())
    assert [a["type"] for a in answers] == ["error"] * 3
    assert {a["reason"] for a in answers} == {"frame_too_large"}
