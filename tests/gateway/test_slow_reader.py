"""Issue 27 item 11 on the real server (``python -m netaclaw.serve``): a client that never
reads cannot make the server hold its events without bound. Once more than
``NETACLAW_WS_MAX_PENDING_BYTES`` wait unsent on its connection, the server drops it; the
answer is still stored whole, for the page to show when it reconnects."""

from __future__ import annotations

import asyncio
import json
import socket
import time

import pytest
import websockets
from rest_framework.authtoken.models import Token

from agents.models import Message, Role
from scripted_llm import Reply, ScriptedLLMServer
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.support.daphne import running_daphne

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

BOUND = 256 * 1024
ANSWER_CHARS = 12_000_000  # far past the kernel's socket buffers on both sides


def _world(server: ScriptedLLMServer) -> tuple[str, str]:
    user = make_user()
    channel = make_channel(base_url=server.openai_base_url, context_window=200_000)
    session = make_session(owner=user, agent=make_agent(model_channel=channel))
    return Token.objects.create(user=user).key, str(session.pk)


async def _never_read(url: str, token: str, sid: str, stored: asyncio.Event) -> tuple[int, bool]:
    """Ask for the long answer, read nothing until it is stored, then read what is left:
    the bytes of the deltas received, and whether ``turn_done`` came."""
    sock = socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1].split("/")[0])))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    ws = await websockets.connect(
        url,
        sock=sock,
        additional_headers={"Authorization": f"Token {token}"},
        max_queue=1,  # the client library stops reading the socket once one frame waits
        max_size=None,
        open_timeout=20,
    )
    await ws.send(json.dumps({"type": "chat", "sessionId": sid, "content": "很长"}))
    await stored.wait()
    received, done = 0, False
    try:
        async with asyncio.timeout(30):
            while True:
                event = json.loads(await ws.recv())
                received += len(event.get("text", ""))
                done = done or event["type"] == "turn_done"
    except websockets.ConnectionClosed:
        pass
    except TimeoutError:  # still open: nothing dropped it
        await ws.close()
    return received, done


def _stored_answer(sid: str) -> Message | None:
    return Message.objects.filter(session__pk=sid, role=Role.ASSISTANT).first()


def test_a_client_that_never_reads_is_dropped_and_the_answer_is_kept(tmp_path) -> None:
    text = "读" * ANSWER_CHARS
    with ScriptedLLMServer(responder=lambda b, w: Reply(text=text, chunk_size=16_000)) as llm:
        token, sid = _world(llm)
        env = {
            "NETACLAW_WS_MAX_PENDING_BYTES": str(BOUND),
            "NETACLAW_MAX_ANSWER_CHARS": str(ANSWER_CHARS),
        }
        with running_daphne(tmp_path / "var", env=env) as server:
            stored = asyncio.Event()

            async def scenario() -> tuple[int, bool]:
                async def watch() -> None:
                    deadline = time.monotonic() + 120
                    while time.monotonic() < deadline:
                        if await asyncio.to_thread(_stored_answer, sid) is not None:
                            break
                        await asyncio.sleep(0.5)
                    stored.set()

                watcher = asyncio.create_task(watch())
                outcome = await _never_read(server.ws_url, token, sid, stored)
                await watcher
                return outcome

            received, done = asyncio.run(scenario())
            log = server.log.read_text(errors="replace")
    answer = _stored_answer(sid)
    assert answer is not None and len(answer.content) == ANSWER_CHARS, "the answer is kept"
    assert "dropping a WebSocket that left" in log, log[-2000:]
    assert not done and received < ANSWER_CHARS // 2, (received, done)
