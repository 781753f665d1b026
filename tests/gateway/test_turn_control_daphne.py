"""Queued input and Stop on real Daphne processes, driven by a plain ``websockets`` client
as an outside program would (issue 14, items 1 and 2).

One Daphne runs on whatever the suite runs on (SQLite and the in-memory layer by default);
two Daphnes sharing PostgreSQL and Redis show that neither needs the process that runs the
turn: a message sent to the other process waits for the turn, and a stop sent to the other
process ends it (the turn's holder hears it on the channel layer).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import websockets
from django.conf import settings
from django.db import connection
from rest_framework.authtoken.models import Token

from agents.models import ChatSession, Message
from agents.selectors import history_load
from agents.services import messages_bulk_append
from scripted_llm import Reply, ScriptedLLMServer
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.support.summaries import SUMMARY

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]
LONG = "".join(f"第{i}句。" for i in range(300))
DAPHNE = [sys.executable, "-m", "daphne", "-b", "127.0.0.1"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _database_url() -> str:
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    host, port = db["HOST"] or "127.0.0.1", db["PORT"] or 5432
    return f"postgres://{db['USER']}@{host}:{port}/{db['NAME']}"


@pytest.fixture
def daphne(tmp_path) -> Iterator[Callable[[], int]]:
    """Starts a Daphne on the test database; returns its port. Stopped after the test."""
    if connection.vendor == "sqlite" and ":memory:" in str(connection.settings_dict["NAME"]):
        pytest.skip("needs a test database another process can open")
    env = {
        **os.environ,
        "DATABASE_URL": _database_url(),
        "REDIS_URL": settings.REDIS_URL or "",
        "NETACLAW_VAR_DIR": str(tmp_path / "var"),
        # this process's settings (tests.settings), not the ASGI module's default
        "DJANGO_SETTINGS_MODULE": settings.SETTINGS_MODULE or "tests.settings",
    }
    if settings.REDIS_URL:
        env["NETACLAW_CHANNEL_PREFIX"] = settings.CHANNEL_LAYERS["default"]["CONFIG"]["prefix"]
    env.pop("NETACLAW_TEST_DB_NAME", None)
    procs: list[subprocess.Popen[bytes]] = []

    def start() -> int:
        port = _free_port()
        proc = subprocess.Popen(
            [*DAPHNE, "-p", str(port), "netaclaw.asgi:application"],
            cwd=ROOT,
            env=env,
            stdout=(tmp_path / f"daphne-{port}.log").open("w"),
            stderr=subprocess.STDOUT,
        )
        procs.append(proc)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"daphne exited: {(tmp_path / f'daphne-{port}.log').read_text()}"
                )
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    return port
            time.sleep(0.1)
        raise TimeoutError("daphne did not start")

    yield start
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


def _world(server: ScriptedLLMServer, history: int = 0) -> tuple[str, ChatSession]:
    user = make_user()
    token = Token.objects.create(user=user).key
    channel = make_channel(
        base_url=server.openai_base_url, context_window=200_000, is_auxiliary=True
    )
    agent = make_agent(model_channel=channel, auxiliary_model_channel=channel)
    session = make_session(owner=user, agent=agent)
    if history:
        messages_bulk_append(
            session=session,
            rows=[
                {
                    "role": "user" if i % 2 == 0 else "assistant",
                    "content": f"第 {i} 轮 " + "内容" * 100,
                }
                for i in range(history)
            ],
        )
    return token, session


async def _client(port: int, token: str) -> Any:
    return await websockets.connect(
        f"ws://127.0.0.1:{port}/ws/chat/",
        additional_headers={"Authorization": f"Token {token}"},
        open_timeout=10,
        max_size=None,
    )


async def _until(
    ws: Any, done: Callable[[dict[str, Any], list[dict[str, Any]]], bool], timeout: float = 30
) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    async with asyncio.timeout(timeout):
        while True:
            event = json.loads(await ws.recv())
            seen.append(event)
            if done(event, seen):
                return seen


def _kind(kind: str, n: int = 1) -> Callable[[dict[str, Any], list[dict[str, Any]]], bool]:
    return lambda event, seen: sum(e["type"] == kind for e in seen) >= n


def _contents(session: ChatSession) -> list[tuple[str, str]]:
    return [
        (m.role, m.content)
        for m in history_load(session=session, view="full")
        if not m.is_system_event
    ]


def test_a_queued_message_and_a_stop_on_one_daphne(daphne) -> None:
    port = daphne()
    with ScriptedLLMServer() as server:
        server.enqueue(
            Reply(text=LONG, chunk_size=6, delay_per_chunk=0.01),
            Reply(text=LONG, chunk_size=3, delay_per_chunk=0.05),
        )
        token, session = _world(server)
        sid = str(session.pk)

        async def talk() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
            ws = await _client(port, token)
            await ws.send(json.dumps({"type": "chat", "sessionId": sid, "content": "问题一"}))
            await _until(ws, _kind("delta"))
            await ws.send(json.dumps({"type": "chat", "sessionId": sid, "content": "问题二"}))
            first = await _until(ws, _kind("turn_done"))
            # the queued question's turn streams now: stop it
            await _until(ws, _kind("delta", 3))
            await ws.send(json.dumps({"type": "stop", "sessionId": sid}))
            second = await _until(ws, _kind("turn_done"), timeout=10)
            await ws.close()
            return first, second

        first, second = asyncio.run(talk())

    queued = [e for e in first if e["type"] == "message" and e["message"]["content"] == "问题二"]
    assert queued and queued[0]["message"]["queued"] is True
    assert second[-1]["stopped"] is True
    stored = _contents(session)
    assert stored[:3] == [("user", "问题一"), ("assistant", LONG), ("user", "问题二")]
    assert stored[3][0] == "assistant" and LONG.startswith(stored[3][1]) and stored[3][1] != LONG
    deadline = time.monotonic() + 5  # released right after its turn_done
    while time.monotonic() < deadline:
        session.refresh_from_db()
        if not session.lease_holder:
            break
        time.sleep(0.05)
    assert session.lease_holder == ""


@pytest.mark.postgres
@pytest.mark.redis
def test_a_message_and_a_stop_sent_to_another_process_reach_the_running_turn(daphne) -> None:
    port_a, port_b = daphne(), daphne()
    with ScriptedLLMServer() as server:
        server.enqueue(
            Reply(text=LONG, chunk_size=6, delay_per_chunk=0.01),
            Reply(text=LONG, chunk_size=3, delay_per_chunk=0.05),
        )
        token, session = _world(server)
        sid = str(session.pk)

        async def talk() -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
            a = await _client(port_a, token)
            b = await _client(port_b, token)
            await a.send(json.dumps({"type": "chat", "sessionId": sid, "content": "问题一"}))
            await _until(a, _kind("delta"))
            await b.send(json.dumps({"type": "chat", "sessionId": sid, "content": "问题二"}))
            queued = await _until(b, _kind("message"))
            first = await _until(a, _kind("turn_done"))
            await _until(a, _kind("delta", 3))  # the second turn, on process A
            started = time.monotonic()
            await b.send(json.dumps({"type": "stop", "sessionId": sid}))
            second = await _until(a, _kind("turn_done"), timeout=10)
            assert time.monotonic() - started < 5
            await a.close()
            await b.close()
            return queued, first, second

        queued, first, second = asyncio.run(talk())

    assert queued[-1]["message"]["queued"] is True
    assert second[-1]["stopped"] is True
    stored = _contents(session)
    assert stored[:3] == [("user", "问题一"), ("assistant", LONG), ("user", "问题二")]
    assert stored[3][0] == "assistant" and stored[3][1] != LONG
    assert len(server.requests) == 2


@pytest.mark.postgres
@pytest.mark.redis
def test_a_stop_sent_to_another_process_cancels_its_compaction(daphne) -> None:
    port_a, port_b = daphne(), daphne()
    release = threading.Event()

    def model(body: dict[str, Any], wire: str) -> Any:
        if not body.get("tools"):
            release.wait(20)
            return Reply(text=SUMMARY)
        return Reply(text="照常。")

    with ScriptedLLMServer(responder=model) as server:
        token, session = _world(server, history=30)
        before = list(Message.objects.filter(session=session).order_by("id").values_list())
        sid = str(session.pk)

        async def talk() -> list[dict[str, Any]]:
            a = await _client(port_a, token)
            b = await _client(port_b, token)
            await a.send(json.dumps({"type": "compact", "sessionId": sid}))
            await _until(a, _kind("compaction_start"))
            await asyncio.to_thread(server.wait_for_requests, 1, 10)
            await b.send(json.dumps({"type": "stop", "sessionId": sid}))
            failed = await _until(a, _kind("compaction_failed"), timeout=5)
            release.set()
            await asyncio.sleep(1)
            await a.close()
            await b.close()
            return failed

        failed = asyncio.run(talk())

    assert failed[-1]["reason"] == "cancelled"
    assert list(Message.objects.filter(session=session).order_by("id").values_list()) == before
    session.refresh_from_db()
    assert session.compaction_count == 0 and session.lease_holder == ""
