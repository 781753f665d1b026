"""No event is lost under a burst, on a real Daphne with the in-memory layer (``make run``'s)
and with Redis (issue 14, item 4).

The in-memory layer's default capacity is 100 messages per channel, and its ``group_send``
drops what does not fit without a word: one socket that sent 300 chat frames at once got
175 of its 300 ``turn_done``; one socket watching 200 sessions got 10 of 200.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter

import pytest
import websockets
from rest_framework.authtoken.models import Token

from scripted_llm import Reply, ScriptedLLMServer
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.support.daphne import running_daphne

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

LAYERS = [pytest.param("memory", id="in-memory"), pytest.param("redis", marks=pytest.mark.redis)]


def _sessions(server: ScriptedLLMServer, n: int) -> tuple[str, list[str]]:
    user = make_user()
    token = Token.objects.create(user=user).key
    channel = make_channel(base_url=server.openai_base_url, context_window=200_000)
    agent = make_agent(model_channel=channel)
    return token, [str(make_session(owner=user, agent=agent).pk) for _ in range(n)]


def _answer(body, wire) -> Reply:
    # a few deltas per turn: each turn publishes ~8 events to its session's group
    return Reply(text="fine, thanks for asking", chunk_size=6)


async def _connect(url: str, token: str):
    return await websockets.connect(
        url, additional_headers={"Authorization": f"Token {token}"}, open_timeout=20
    )


async def _turns_done(ws, expected: int, timeout: float) -> Counter[str]:
    """``turn_done`` per session, until ``expected`` of them arrived (or the time is up)."""
    done: Counter[str] = Counter()
    try:
        async with asyncio.timeout(timeout):
            while sum(done.values()) < expected:
                event = json.loads(await ws.recv())
                assert event["type"] != "error", event
                if event["type"] == "turn_done":
                    done[event["sessionId"]] += 1
    except TimeoutError:
        pass
    return done


@pytest.mark.parametrize("layer", LAYERS)
def test_a_burst_of_300_chat_frames_on_one_socket_gets_every_turn_done(tmp_path, layer) -> None:
    with ScriptedLLMServer(responder=_answer) as llm:
        token, sessions = _sessions(llm, 300)
        with running_daphne(tmp_path / "var", layer=layer) as server:

            async def burst() -> Counter[str]:
                ws = await _connect(server.ws_url, token)
                for sid in sessions:
                    await ws.send(json.dumps({"type": "chat", "sessionId": sid, "content": "hi"}))
                done = await _turns_done(ws, 300, timeout=100)
                await ws.close()
                return done

            done = asyncio.run(burst())
    assert sum(done.values()) == 300, f"{sum(done.values())} of 300 turn_done arrived"
    assert set(done) == set(sessions)


@pytest.mark.parametrize("layer", LAYERS)
def test_one_socket_watching_200_sessions_gets_every_turn_done(tmp_path, layer) -> None:
    """The watcher joins 200 sessions (one chat in each), then 200 other clients chat in
    them at once: the watcher sees all 200 turns end."""
    with ScriptedLLMServer(responder=_answer) as llm:
        token, sessions = _sessions(llm, 200)
        with running_daphne(tmp_path / "var", layer=layer) as server:

            async def watch() -> tuple[Counter[str], Counter[str]]:
                watcher = await _connect(server.ws_url, token)
                for sid in sessions:
                    await watcher.send(
                        json.dumps({"type": "chat", "sessionId": sid, "content": "joining"})
                    )
                joined = await _turns_done(watcher, 200, timeout=100)
                clients = await asyncio.gather(*(_connect(server.ws_url, token) for _ in sessions))
                await asyncio.gather(
                    *(
                        c.send(json.dumps({"type": "chat", "sessionId": sid, "content": "hi"}))
                        for c, sid in zip(clients, sessions, strict=True)
                    )
                )
                watched = await _turns_done(watcher, 200, timeout=100)
                await asyncio.gather(watcher.close(), *(c.close() for c in clients))
                return joined, watched

            joined, watched = asyncio.run(watch())
    assert sum(joined.values()) == 200, f"{sum(joined.values())} of 200 turn_done (joining)"
    assert sum(watched.values()) == 200, f"{sum(watched.values())} of 200 turn_done (watching)"
    assert set(watched) == set(sessions)
