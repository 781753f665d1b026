"""Storage faults: a write failing inside the write-back, and a process killed mid-compaction.

* A database error on any one write of ``compaction_apply`` (the summary insert, the
  compacted marks, the prune marks, the event position, the event record, the
  session counters, the pause flag) rolls the whole compaction back: every row as it
  was, no summary, counters unchanged, no ``compaction_done`` announced, the lease
  released, the failure reported as ``storage_error`` — and the next compaction works.
* A Daphne process SIGKILLed while its auxiliary call is in flight leaves its lease
  behind (nothing can release it); until it expires every other compaction of that
  session is refused, after it a compaction in a fresh process succeeds, and no
  message is lost (PostgreSQL + Redis, real processes).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import websockets
from django.conf import settings
from django.db import OperationalError, connection
from django.utils import timezone
from rest_framework.authtoken.models import Token

from agents.events import CompactionDone, CompactionFailed
from agents.models import ChatSession, Message, Role
from agents.selectors import history_load
from agents.services import message_append
from compaction.request import CompactionRequest
from compaction.run import compact
from scripted_llm import Reply, ScriptedLLMServer
from scripted_llm.ports import free_port, wait_listening
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.support.history import fill_history, history_rows
from tests.support.summaries import SEED_SUMMARY

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------------
# a failing write inside compaction_apply


class FailingWrite:
    """An execute wrapper that fails the ``nth`` statement containing ``needle``, once."""

    def __init__(self, needle: str, nth: int = 1) -> None:
        self.needle, self.nth, self.seen, self.fired = needle, nth, 0, False

    def __call__(self, execute, sql, params, many, context):  # type: ignore[no-untyped-def]
        if not self.fired and self.needle in sql:
            self.seen += 1
            if self.seen == self.nth:
                self.fired = True
                raise OperationalError("disk I/O error (injected by the test)")
        return execute(sql, params, many, context)


def _summarizing_world(server: ScriptedLLMServer) -> ChatSession:
    channel = make_channel(base_url=server.openai_base_url, context_window=200_000)
    agent = make_agent(model_channel=channel, auxiliary_model_channel=channel)
    session = make_session(owner=make_user(), agent=agent)
    fill_history(session, messages=30, filler=60)
    return session


def _pruning_world(server: ScriptedLLMServer) -> ChatSession:
    """Over 70 % of 8,000 tokens only because of one old tool output: phase 1 suffices."""
    channel = make_channel(base_url=server.openai_base_url, context_window=8_000)
    agent = make_agent(model_channel=channel, auxiliary_model_channel=channel)
    session = make_session(owner=make_user(), agent=agent)
    for text in ("读一下 big.log", "好的", "请继续"):
        message_append(session=session, role=Role.USER, content=text)
    call = {"id": "call_1", "name": "read_file", "arguments": '{"path": "big.log"}'}
    message_append(session=session, role=Role.ASSISTANT, content="", tool_calls=[call])
    message_append(session=session, role=Role.TOOL, content="日志行 " * 6000, tool_call_id="call_1")
    for i in range(6):
        role = Role.USER if i % 2 == 0 else Role.ASSISTANT
        message_append(session=session, role=role, content=f"第 {i} 步 " + "分析" * 500)
    return session


# (scenario, the statement to fail, which occurrence) — every write of the write-back
WRITE_POINTS = [
    ("summarize", 'INSERT INTO "agents_message"', 1),  # the summary
    ("summarize", 'SET "compacted_at"', 1),  # the replaced messages' marks
    ("summarize", 'INSERT INTO "agents_message"', 2),  # the event record
    ("summarize", 'SET "compaction_count"', 1),  # the session's counters
    ("prune", 'SET "pruned_at"', 1),  # phase-1 prune marks
    ("prune", 'INSERT INTO "agents_message"', 1),  # the event record after pruning only
]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("scenario", "needle", "nth"),
    WRITE_POINTS,
    ids=[f"{s}:{n.split()[-1].strip(chr(34))}#{k}" for s, n, k in WRITE_POINTS],
)
def test_a_failing_write_inside_compaction_apply_rolls_everything_back(
    monkeypatch, scenario: str, needle: str, nth: int
) -> None:
    announced: list[Any] = []
    for stage in ("compaction.run", "compaction.storing"):
        monkeypatch.setattr(f"{stage}.publish", lambda sid, *events: announced.extend(events))
    with ScriptedLLMServer(responder=lambda body, wire: Reply(text=SEED_SUMMARY)) as server:
        session = _summarizing_world(server) if scenario == "summarize" else _pruning_world(server)
        reason = "manual" if scenario == "summarize" else "auto"
        rows = history_rows(session)
        events_before = Message.objects.filter(session=session, role=Role.SYSTEM).count()

        fault = FailingWrite(needle, nth)
        with connection.execute_wrapper(fault):
            outcome = compact(CompactionRequest(str(session.pk), reason=reason))

        assert fault.fired, f"the write {needle!r} #{nth} never happened: the test proves nothing"
        assert outcome.status == "failed" and outcome.reason == "storage_error", outcome
        session.refresh_from_db()
        assert history_rows(session) == rows, "every message row is as it was"
        assert not Message.objects.filter(session=session, is_compaction_summary=True).exists()
        assert session.compaction_count == 0 and session.auto_compaction_paused_reason == ""
        assert session.lease_holder == "", "the lease is released"
        failure = Message.objects.filter(session=session, role=Role.SYSTEM).order_by("-id")
        assert failure.count() == events_before + 1
        assert failure.first().metadata["reason"] == "storage_error"
        assert not [e for e in announced if isinstance(e, CompactionDone)]
        assert [e.reason for e in announced if isinstance(e, CompactionFailed)] == ["storage_error"]

        retry = compact(CompactionRequest(str(session.pk), reason=reason))
        assert retry.status == "done", retry
        session.refresh_from_db()
        assert session.compaction_count == 1


# ---------------------------------------------------------------------------
# SIGKILL mid-compaction (real Daphne processes on PostgreSQL + Redis)


LEASE_SECONDS = 3


@pytest.fixture
def daphne(tmp_path) -> Iterator[Any]:
    """Starts Daphne processes on the test database; stops (or has killed) them after."""
    db = connection.settings_dict
    url = f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "REDIS_URL": settings.REDIS_URL or "",
        "NETACLAW_VAR_DIR": str(tmp_path / "var"),
        "NETACLAW_CHANNEL_PREFIX": settings.CHANNEL_LAYERS["default"]["CONFIG"]["prefix"],
        # this process's (tests.settings, set by pytest-django), not the ASGI module's default
        "DJANGO_SETTINGS_MODULE": os.environ["DJANGO_SETTINGS_MODULE"],
        "NETACLAW_COMPACTION_LEASE_SECONDS": str(LEASE_SECONDS),
        "NETACLAW_AUXILIARY_TIMEOUT": "60",
    }
    procs: list[subprocess.Popen[Any]] = []

    def start() -> tuple[subprocess.Popen[Any], int]:
        port = free_port()
        cmd = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port)]
        proc = subprocess.Popen(
            [*cmd, "netaclaw.asgi:application"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=(tmp_path / f"daphne-{port}.log").open("w"),
        )
        procs.append(proc)
        wait_listening(port, proc)
        return proc, port

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


async def _client(port: int, token: str) -> Any:
    return await websockets.connect(
        f"ws://127.0.0.1:{port}/ws/chat/",
        additional_headers={"Authorization": f"Token {token}"},
        open_timeout=10,
    )


async def _until(ws: Any, kinds: set[str], timeout: float = 30) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    async with asyncio.timeout(timeout):
        while True:
            event = json.loads(await ws.recv())
            seen.append(event)
            if event["type"] in kinds:
                return seen


class SlowAuxiliary:
    """Summaries block until released (the compaction is 'in flight'); chats answer at once."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.summary_requests = 0

    def __call__(self, body: dict[str, Any], wire: str) -> Reply:
        if body.get("tools"):  # a chat turn (a summary request has none)
            return Reply(text="收到。")
        self.summary_requests += 1
        self.release.wait(timeout=30)
        return Reply(text=SEED_SUMMARY)


def _kill_mid_compaction(
    daphne: Any, server: ScriptedLLMServer, aux: SlowAuxiliary, *, queued: str
):
    """Start a compaction on process A, queue a chat behind it, SIGKILL A mid-summary."""
    channel = make_channel(base_url=server.openai_base_url, context_window=200_000)
    agent = make_agent(model_channel=channel, auxiliary_model_channel=channel)
    user = make_user()
    session = make_session(owner=user, agent=agent)
    fill_history(session, messages=30, filler=60)
    token = Token.objects.create(user=user).key
    sid = str(session.pk)
    proc_a, port_a = daphne()

    async def start_then_queue() -> None:
        ws = await _client(port_a, token)
        await ws.send(json.dumps({"type": "compact", "sessionId": sid}))
        await _until(ws, {"compaction_start"})
        await asyncio.to_thread(server.wait_for_requests, 1, 15)  # the summary is in flight
        await ws.send(json.dumps({"type": "chat", "sessionId": sid, "content": queued}))
        # the message is stored and announced while its turn waits behind the compaction
        stored = await _until(ws, {"message"}, timeout=10)
        assert stored[-1]["message"]["content"] == queued, stored
        os.kill(proc_a.pid, signal.SIGKILL)
        proc_a.wait(timeout=10)
        with pytest.raises(websockets.ConnectionClosed):
            async with asyncio.timeout(5):
                while True:  # whatever was already buffered, then the closed connection
                    await ws.recv()

    rows = history_rows(session)
    contents = dict(Message.objects.filter(session=session).values_list("id", "content"))
    asyncio.run(start_then_queue())
    aux.release.set()  # the orphaned HTTP request may finish now; nobody reads it
    return session, token, rows, contents, proc_a


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_sigkill_mid_compaction_leaves_a_lease_that_expires_then_nothing_is_lost(daphne) -> None:
    aux = SlowAuxiliary()
    with ScriptedLLMServer(responder=aux) as server:
        session, token, rows, contents, killed = _kill_mid_compaction(
            daphne, server, aux, queued="压缩时发的消息"
        )
        session.refresh_from_db()
        assert f":{killed.pid}:" in session.lease_holder, "the dead process's lease"
        assert session.lease_expires_at > timezone.now()
        after = history_rows(session)
        assert after[: len(rows)] == rows, "the killed compaction changed no row"
        queued = Message.objects.get(session=session, content="压缩时发的消息")
        assert [row[0] for row in after[len(rows) :]] == [json.dumps(queued.pk)], (
            "only the chat message sent during the compaction was added (stored on arrival)"
        )
        contents[queued.pk] = queued.content

        # while the lease lasts, nobody else may compact this session
        blocked = compact(CompactionRequest(str(session.pk), reason="manual"))
        assert (blocked.status, blocked.reason) == ("skipped", "in_progress")

        deadline = session.lease_expires_at + timedelta(seconds=0.2)
        while timezone.now() < deadline:
            time.sleep(0.1)

        _, port_b = daphne()  # a fresh process takes over once the lease has expired

        async def compact_again() -> list[dict[str, Any]]:
            ws = await _client(port_b, token)
            await ws.send(json.dumps({"type": "compact", "sessionId": str(session.pk)}))
            events = await _until(
                ws, {"compaction_done", "compaction_failed", "compaction_skipped"}
            )
            # the message queued behind the dead process is answered after the compaction
            events += await _until(ws, {"turn_done"})
            await ws.close()
            return events

        events = asyncio.run(compact_again())

    assert "compaction_done" in [e["type"] for e in events], events
    deadline = time.monotonic() + 5  # the turn gives the lease back right after its turn_done
    session.refresh_from_db()
    while session.lease_holder and time.monotonic() < deadline:
        time.sleep(0.05)
        session.refresh_from_db()
    assert session.compaction_count == 1 and session.lease_holder == ""
    full = [m for m in history_load(session=session, view="full") if not m.is_system_event]
    written = {m.pk: m.content for m in full if not m.is_compaction_summary}
    assert {pk: written.get(pk) for pk in contents} == contents, (
        "every message ever written is there, with its content"
    )
    assert full[-1].role == "assistant" and full[-2].pk == queued.pk, "and the queued one answered"
    assert sum(m.is_compaction_summary for m in full) == 1


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_a_message_sent_during_a_compaction_survives_a_crash(daphne) -> None:
    aux = SlowAuxiliary()
    queued = "压缩期间发送、进程随后崩溃的消息"
    with ScriptedLLMServer(responder=aux) as server:
        session, *_ = _kill_mid_compaction(daphne, server, aux, queued=queued)
    assert Message.objects.filter(session=session, role=Role.USER, content=queued).exists()
