"""SIGTERM to a web process that runs its own jobs (``make run``; issue 24 item 3): it
drains — a running turn finishes and is stored, or, past the grace period, is recorded as
interrupted — and exits; a thread waiting on a silent model does not hold it up."""

from __future__ import annotations

import signal
import time
from typing import Any

import pytest
from rest_framework.authtoken.models import Token

from agents.models import ChatSession, Message, Role
from scripted_llm import Reply, ScriptedLLMServer
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.support.daphne import running_daphne
from tests.support.workers import SyncSocket

pytestmark = pytest.mark.django_db(transaction=True)

STORY = "".join(f"第{i}句。" for i in range(1, 81))


def _world(server: ScriptedLLMServer) -> tuple[str, str]:
    user = make_user()
    channel = make_channel(base_url=server.openai_base_url, context_window=200_000)
    agent = make_agent(model_channel=channel, owner=user)
    session = make_session(owner=user, agent=agent)
    return Token.objects.create(user=user).key, str(session.pk)


def _stop_mid_answer(tmp_path: Any, reply: Reply, grace: str) -> tuple[str, float, int]:
    with ScriptedLLMServer(responder=lambda body, wire: reply) as llm:
        token, sid = _world(llm)
        env = {"NETACLAW_RUNNER": "inprocess", "NETACLAW_DRAIN_SECONDS": grace}
        with running_daphne(tmp_path / "var", env=env) as web:
            ws = SyncSocket(web.port, token)
            ws.send({"type": "chat", "sessionId": sid, "content": "讲"})
            for _ in range(3):
                ws.until("delta")
            started = time.monotonic()
            proc = web.process
            assert proc is not None
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=60)
            took = time.monotonic() - started
    return sid, took, code


def test_sigterm_lets_the_running_turn_finish_and_stores_it(tmp_path) -> None:
    reply = Reply(text=STORY, chunk_size=8, delay_per_chunk=0.1)  # ~4 s more of streaming
    sid, took, code = _stop_mid_answer(tmp_path, reply, grace="20")
    answers = Message.objects.filter(session_id=sid, role=Role.ASSISTANT)
    assert [m.content for m in answers] == [STORY], "the whole answer, stored"
    assert took < 20, f"exited {took:.1f} s after SIGTERM"
    assert ChatSession.objects.get(pk=sid).lease_holder == "", "the session is free"


def test_past_the_grace_the_turn_is_recorded_interrupted_and_the_process_exits(tmp_path) -> None:
    reply = Reply(text=STORY, chunk_size=2, delay_per_chunk=0.3)  # ~12 s: longer than the grace
    sid, took, code = _stop_mid_answer(tmp_path, reply, grace="2")
    records = Message.objects.filter(session_id=sid, metadata__systemType="turn_event")
    assert [r.metadata["status"] for r in records] == ["interrupted"]
    assert not Message.objects.filter(session_id=sid, role=Role.ASSISTANT).exists()
    assert took < 15, f"exited {took:.1f} s after SIGTERM"
    assert ChatSession.objects.get(pk=sid).lease_holder == "", "the session is free"
