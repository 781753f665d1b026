"""Durable runs on real processes (issue 24 "Done when"): web processes of the worker runner,
``manage.py run_worker`` workers, one PostgreSQL, one Redis, real signals."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from typing import Any

import pytest
import websockets
from rest_framework.authtoken.models import Token

from agents.models import ChatSession, CompactionRecord, Message, Role
from agents.selectors import history_load
from scripted_llm import Reply, ScriptedLLMServer
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.support.history import fill_history
from tests.support.workers import SyncSocket, deployment, running_worker

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

STORY = "".join(f"第{i}句话讲的是一件事。" for i in range(1, 121))  # 120 sentences


def _world(server: ScriptedLLMServer) -> tuple[str, str]:
    user = make_user()
    channel = make_channel(
        base_url=server.openai_base_url, context_window=200_000, is_auxiliary=True
    )
    agent = make_agent(model_channel=channel, auxiliary_model_channel=channel, owner=user)
    session = make_session(owner=user, agent=agent)
    return Token.objects.create(user=user).key, str(session.pk)


async def _client(port: int, token: str) -> Any:
    return await websockets.connect(
        f"ws://127.0.0.1:{port}/ws/chat/",
        additional_headers={"Authorization": f"Token {token}"},
        open_timeout=15,
    )


async def _until(ws: Any, kind: str, timeout: float = 60) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    async with asyncio.timeout(timeout):
        while True:
            event = json.loads(await ws.recv())
            seen.append(event)
            if event["type"] == kind:
                return seen


def _answers(session_id: str) -> list[tuple[str, str]]:
    session = ChatSession.objects.get(pk=session_id)
    return [
        (m.role, m.content)
        for m in history_load(session=session, view="compacted")
        if m.role in {Role.USER, Role.ASSISTANT}
    ]


def test_a_turn_runs_on_a_worker_and_streams_to_the_web_process(tmp_path) -> None:
    with ScriptedLLMServer(responder=lambda b, w: Reply(text="工人回答。", chunk_size=2)) as llm:
        token, sid = _world(llm)
        with deployment(tmp_path / "var") as live:

            async def chat() -> list[dict[str, Any]]:
                ws = await _client(live.webs[0].port, token)
                await ws.send(json.dumps({"type": "chat", "sessionId": sid, "content": "你好"}))
                events = await _until(ws, "turn_done")
                await ws.close()
                return events

            events = asyncio.run(chat())
    deltas = [e for e in events if e["type"] == "delta"]
    assert "".join(d["text"] for d in deltas) == "工人回答。"
    assert [d["seq"] for d in deltas] == list(range(1, len(deltas) + 1))
    assert {d["turnId"] for d in deltas} == {events[-1]["turnId"]}
    assert _answers(sid) == [("user", "你好"), ("assistant", "工人回答。")]


def test_sigterm_to_the_web_process_mid_turn_loses_nothing_and_another_resumes_it(
    tmp_path,
) -> None:
    """The answer completes and is stored; a client on the other web process that sends
    ``resume`` receives it from seq 1, with no gap and no duplicate."""
    reply = Reply(text=STORY, chunk_size=6, delay_per_chunk=0.02)  # ~8 s of streaming
    with ScriptedLLMServer(responder=lambda b, w: reply) as llm:
        token, sid = _world(llm)
        with deployment(tmp_path / "var", webs=2) as live:
            a, b = live.webs

            async def scenario() -> list[dict[str, Any]]:
                ws = await _client(a.port, token)
                await ws.send(json.dumps({"type": "chat", "sessionId": sid, "content": "讲故事"}))
                for _ in range(5):
                    await _until(ws, "delta")
                import os

                os.kill(a.pid, signal.SIGTERM)  # a rolling deploy stops this web process
                other = await _client(b.port, token)
                await other.send(json.dumps({"type": "resume", "sessionId": sid}))
                events = await _until(other, "turn_done", timeout=60)
                await other.close()
                return events

            events = asyncio.run(scenario())
    deltas = [e for e in events if e["type"] == "delta"]
    assert [d["seq"] for d in deltas] == list(range(1, len(deltas) + 1)), "no gap, no duplicate"
    assert "".join(d["text"] for d in deltas) == STORY
    assert _answers(sid)[-1] == ("assistant", STORY)


def test_kill_9_of_the_worker_mid_turn_frees_the_session_within_15_s(tmp_path) -> None:
    """Nothing lost, no two questions under one answer: the dead worker's turn is recorded
    interrupted and answered again by another worker; the next message gets its own."""
    first = {"n": 0}

    def model(body: dict[str, Any], wire: str) -> Any:
        last = body["messages"][-1]["content"]
        if "第二个问题" in str(last):
            return Reply(text="第二个回答。")
        first["n"] += 1
        if first["n"] == 1:  # the first attempt streams slowly: the worker dies under it
            return Reply(text=STORY, chunk_size=6, delay_per_chunk=0.05)
        return Reply(text="重新回答。")

    with ScriptedLLMServer(responder=model) as llm:
        token, sid = _world(llm)
        with deployment(tmp_path / "var") as live:
            ws = SyncSocket(live.webs[0].port, token)
            ws.send({"type": "chat", "sessionId": sid, "content": "问题一"})
            ws.until("delta")  # the first worker runs the turn
            with running_worker(tmp_path / "var"):  # another worker, running already
                live.workers[0].signal(signal.SIGKILL)
                killed = time.monotonic()
                interrupted = ws.until("turn_done", timeout=30)
                freed = time.monotonic() - killed
                answered = ws.until("turn_done", timeout=30)
                ws.send({"type": "chat", "sessionId": sid, "content": "第二个问题"})
                second = ws.until("turn_done", timeout=30)
            ws.close()
    events = interrupted + answered
    assert freed < 15, f"the session was freed {freed:.1f} s after the kill"
    ends = [e for e in events if e["type"] == "turn_done"]
    assert ends[0].get("interrupted") is True and not ends[1].get("interrupted")
    assert ends[0]["turnId"] != ends[1]["turnId"], "answered again as a new turn"
    records = [
        e["message"]
        for e in events
        if e["type"] == "message" and e["message"]["metadata"].get("systemType") == "turn_event"
    ]
    assert [r["metadata"]["status"] for r in records] == ["interrupted"]
    assert _answers(sid) == [
        ("user", "问题一"),
        ("assistant", "重新回答。"),
        ("user", "第二个问题"),
        ("assistant", "第二个回答。"),
    ]
    assert [e["type"] for e in second if e["type"] == "turn_done"] == ["turn_done"]


def test_sigterm_mid_compaction_every_process_exits_within_30_s_and_the_session_is_free(
    tmp_path,
) -> None:
    import os
    import threading

    release = threading.Event()

    def model(body: dict[str, Any], wire: str) -> Any:
        if not body.get("tools"):  # a summary request: the auxiliary model never answers
            release.wait(120)
            return Reply(text="## 目标\n摘要")
        return Reply(text="好。")

    with ScriptedLLMServer(responder=model) as llm:
        token, sid = _world(llm)
        fill_history(ChatSession.objects.get(pk=sid), messages=40, filler=80)
        before = list(Message.objects.filter(session_id=sid).values_list("id", "compacted_at"))
        with deployment(tmp_path / "var") as live:
            ws = SyncSocket(live.webs[0].port, token)
            ws.send({"type": "compact", "sessionId": sid})
            ws.until("compaction_start")
            time.sleep(1.0)  # the summary request is in flight
            started = time.monotonic()
            for worker in live.workers:
                worker.signal(signal.SIGTERM)
            for web in live.webs:
                os.kill(web.pid, signal.SIGTERM)
            codes = [worker.wait(40) for worker in live.workers]
            exited = time.monotonic() - started
            while ChatSession.objects.filter(pk=sid).exclude(lease_holder="").exists():
                time.sleep(0.2)
                if time.monotonic() - started > 60:
                    break
            freed = time.monotonic() - started
        release.set()
    assert codes == [0], codes
    assert exited < 30, f"the worker exited {exited:.1f} s after SIGTERM"
    assert freed < 30, f"the session was free {freed:.1f} s after SIGTERM"
    after = list(Message.objects.filter(session_id=sid).values_list("id", "compacted_at"))
    assert [row for row in after if row in before] == before, "the history is unchanged"
    record = CompactionRecord.objects.get(session_id=sid)
    assert (record.status, record.reason) == ("interrupted", "compaction_interrupted")


def _queued_jobs() -> list[tuple[str, float]]:
    """The queue's safety-net jobs: (status, seconds until they are due)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT status, extract(epoch FROM scheduled_at - now()) FROM procrastinate_jobs"
            " WHERE task_name = 'netaclaw.session_queued'"
        )
        return [(str(status), float(due or 0)) for status, due in cursor.fetchall()]


def test_a_message_queued_behind_a_gone_holder_waits_as_a_scheduled_job_then_is_answered(
    tmp_path,
) -> None:
    """A message queued behind a holder that never comes back (a lease no job holds) is
    answered once that lease expires, by a job scheduled for then: it holds no worker slot
    while it waits (polling jobs starved the turns at 500 queued messages)."""
    from agents import services

    with ScriptedLLMServer(responder=lambda b, w: Reply(text="迟到的回答。")) as llm:
        token, sid = _world(llm)
        with deployment(tmp_path / "var") as live:
            gone = services.lease_acquire(session_id=sid, holder="turn:gone/process:1", seconds=6)
            assert gone
            ws = SyncSocket(live.webs[0].port, token)
            ws.send({"type": "chat", "sessionId": sid, "content": "有人吗"})
            queued = ws.until("message")
            waiting = _queued_jobs()
            answered = ws.until("turn_done", timeout=30)
            ws.close()
    assert queued[-1]["message"].get("queued") is True
    assert [status for status, _due in waiting] == ["todo"]
    assert 1 < waiting[0][1] <= 8  # due when the lease expires, not polling now
    assert "".join(e["text"] for e in answered if e["type"] == "delta") == "迟到的回答。"
    assert _answers(sid) == [("user", "有人吗"), ("assistant", "迟到的回答。")]
