"""Two real Daphne processes sharing PostgreSQL and Redis, driven by a plain
``websockets`` client as an outside program would (issue: gateway "Done when")."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import websockets
from django.conf import settings
from django.db import connection
from rest_framework.authtoken.models import Token

from agents.services import messages_bulk_append
from scripted_llm import Reply, ScriptedLLMServer
from tests.factories import make_agent, make_channel, make_session, make_user

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
SUMMARY = "## 目标\n继续修复 parser.py 中的 bug。\n## 相关文件\n- src/parser.py\n" + "细节 " * 120


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_listening(port: int, proc: subprocess.Popen, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"daphne on {port} exited with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"daphne on {port} did not start")


@pytest.fixture
def two_servers(tmp_path) -> Iterator[list[int]]:
    db = connection.settings_dict
    url = f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "REDIS_URL": settings.REDIS_URL,
        "NETACLAW_VAR_DIR": str(tmp_path / "var"),
        "NETACLAW_CHANNEL_PREFIX": settings.CHANNEL_LAYERS["default"]["CONFIG"]["prefix"],
        # this process's (tests.settings, set by pytest-django), not the ASGI module's default
        "DJANGO_SETTINGS_MODULE": os.environ["DJANGO_SETTINGS_MODULE"],
    }
    ports = [_free_port(), _free_port()]
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "daphne",
                "-b",
                "127.0.0.1",
                "-p",
                str(p),
                "netaclaw.asgi:application",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=(tmp_path / f"daphne-{p}.log").open("w"),
        )
        for p in ports
    ]
    try:
        for port, proc in zip(ports, procs, strict=True):
            _wait_listening(port, proc)
        yield ports
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=15)


def _setup(
    server: ScriptedLLMServer, *, window: int = 200_000, messages: int = 40, filler: int = 80
):
    user = make_user()
    token = Token.objects.create(user=user).key
    channel = make_channel(
        base_url=server.openai_base_url, context_window=window, is_auxiliary=True
    )
    agent = make_agent(model_channel=channel, auxiliary_model_channel=channel)
    session = make_session(owner=user, agent=agent)
    rows = []
    for i in range(messages):
        role = "user" if i % 2 == 0 else "assistant"
        rows.append({"role": role, "content": f"第 {i} 轮：修改 src/parser.py " + "内容" * filler})
    messages_bulk_append(session=session, rows=rows)
    return token, session


async def _client(port: int, token: str):
    return await websockets.connect(
        f"ws://127.0.0.1:{port}/ws/chat/",
        additional_headers={"Authorization": f"Token {token}"},
        open_timeout=10,
    )


async def _events_until(ws, predicate, timeout: float = 30) -> list[dict]:
    seen: list[dict] = []
    async with asyncio.timeout(timeout):
        while True:
            event = json.loads(await ws.recv())
            seen.append(event)
            if predicate(event, seen):
                return seen


def test_two_clients_racing_compact_on_two_processes_compact_once(two_servers) -> None:
    def slow_summary(body, wire):
        time.sleep(1.5)
        return Reply(text=SUMMARY)

    with ScriptedLLMServer(responder=slow_summary) as server:
        token, session = _setup(server)
        sid = str(session.pk)

        async def race() -> tuple[list[dict], list[dict]]:
            a = await _client(two_servers[0], token)
            b = await _client(two_servers[1], token)
            frame = json.dumps({"type": "compact", "sessionId": sid})
            await asyncio.gather(a.send(frame), b.send(frame))

            def finished(event, seen):
                kinds = {e["type"] for e in seen}
                return "compaction_done" in kinds and (
                    "compaction_skipped" in kinds or "token_update" in kinds
                )

            got = await asyncio.gather(_events_until(a, finished), _events_until(b, finished))
            await a.close()
            await b.close()
            return got

        events_a, events_b = asyncio.run(race())

    summaries = [r for r in server.requests]
    assert len(summaries) == 1, "exactly one auxiliary request: one compaction"
    done = [e for e in events_a + events_b if e["type"] == "compaction_done"]
    assert len(done) == 2 and done[0] == done[1], "both sockets saw the same compaction"
    skipped = [e for e in events_a + events_b if e["type"] == "compaction_skipped"]
    assert len(skipped) == 1 and skipped[0]["reason"] == "in_progress"
    session.refresh_from_db()
    assert session.compaction_count == 1


def test_program_with_websockets_sees_auto_compaction_then_compacts_on_demand(two_servers) -> None:
    def model(body, wire):
        prompt = json.dumps(body, ensure_ascii=False)
        if (
            "交接摘要" in prompt
            or "hand-off summary" in prompt
            or "更新一份上下文压缩摘要" in prompt
        ):
            return Reply(text=SUMMARY)
        return Reply(text="好的，继续处理 src/parser.py。", chunk_size=4)

    with ScriptedLLMServer(responder=model) as server:
        # 40 messages of ~115 estimated tokens: over 70% of a 6,000-token window
        token, session = _setup(server, window=6_000, messages=40, filler=200)
        sid = str(session.pk)

        async def talk() -> tuple[list[dict], list[dict]]:
            ws = await _client(two_servers[0], token)
            watcher = await _client(two_servers[1], token)
            # the watcher joins the session's group with a harmless frame
            await watcher.send(json.dumps({"type": "chat", "sessionId": sid, "content": "在吗"}))
            turn = await _events_until(watcher, lambda e, s: e["type"] == "turn_done", 60)
            await ws.send(
                json.dumps({"type": "compact", "sessionId": sid, "instructions": "文件路径"})
            )
            manual = await _events_until(
                ws, lambda e, s: e["type"] in {"compaction_done", "compaction_failed"}, 60
            )
            await ws.close()
            await watcher.close()
            return turn, manual

        turn, manual = asyncio.run(talk())

    kinds = [e["type"] for e in turn]
    # seed §2.1: compaction before the model call, then the streamed answer
    assert kinds.index("compaction_start") < kinds.index("compaction_done") < kinds.index("delta")
    assert next(e for e in turn if e["type"] == "compaction_start")["reason"] == "auto"
    meter = [e for e in turn if e["type"] == "token_update"][-1]
    assert meter["context"]["maxTokens"] == 6000 and meter["context"]["thresholdPercent"] == 70
    assert meter["context"]["percent"] < 70
    session.refresh_from_db()
    assert session.compaction_count == 2
    start = [e for e in manual if e["type"] == "compaction_start"]
    assert start and start[0]["reason"] == "manual"
    done = manual[-1]
    assert done["type"] == "compaction_done", manual
    assert set(done) == {
        "type",
        "sessionId",
        "removedCount",
        "summaryMessageId",
        "tokensBefore",
        "tokensAfter",
    }
    assert done["tokensAfter"] <= done["tokensBefore"]
