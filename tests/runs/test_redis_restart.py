"""Issue 27 item 12: a Redis restart closes a socket with a code the page's socket reconnects
on (htmx's ws extension: 1006, 1011, 1012, 1013), and the reconnected socket resumes the
running answer, which went on meanwhile and comes whole."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import websockets
from rest_framework.authtoken.models import Token

from scripted_llm import Reply, ScriptedLLMServer
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.support.daphne import free_port, running_daphne
from tests.support.workers import SyncSocket

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server"),
]


def _redis(port: int, var: Path) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(var),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc
        time.sleep(0.05)
    raise RuntimeError("redis-server did not start")


def test_after_a_redis_restart_a_reconnected_socket_resumes_the_whole_answer(tmp_path) -> None:
    story = "".join(f"第{i}句。" for i in range(1, 101))
    var = tmp_path / "var"
    var.mkdir()
    port = free_port()
    redis = _redis(port, var)
    try:
        with ScriptedLLMServer(
            responder=lambda b, w: Reply(text=story, chunk_size=3, delay_per_chunk=0.05)
        ) as llm:
            user = make_user()
            channel = make_channel(base_url=llm.openai_base_url, context_window=200_000)
            session = make_session(owner=user, agent=make_agent(model_channel=channel, owner=user))
            token, sid = Token.objects.create(user=user).key, str(session.pk)
            env = {"REDIS_URL": f"redis://127.0.0.1:{port}/0", "NETACLAW_RUNNER": "inprocess"}
            with running_daphne(var, env=env) as web:
                ws = SyncSocket(web.port, token)
                ws.send({"type": "chat", "sessionId": sid, "content": "讲"})
                ws.until("delta")
                redis.terminate()
                redis.wait(10)
                redis = _redis(port, var)  # back a moment later, empty
                with pytest.raises(websockets.ConnectionClosed) as closed:
                    ws.until("turn_done", timeout=30)
                code = closed.value.rcvd.code if closed.value.rcvd else 1006
                assert code in {1006, 1011, 1012, 1013}, code
                again = SyncSocket(web.port, token)
                again.send({"type": "resume", "sessionId": sid})
                events: list[dict[str, Any]] = again.until("turn_done", timeout=60)
                again.close()
    finally:
        redis.terminate()
        redis.wait(10)
    text = "".join(e["text"] for e in events if e["type"] == "delta")
    assert text.endswith("第100句。")
