"""One behaviour suite for both runners (issue 24 item 2): the same chat, queued input,
stop, retry and compaction, seen from a socket, whether jobs run inside the web process
(``make run``) or in worker processes apart from it (production)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from rest_framework.authtoken.models import Token

from agents.models import ChatSession, Role
from agents.selectors import history_load
from scripted_llm import Reply, ScriptedLLMServer
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.support.daphne import running_daphne
from tests.support.history import fill_history
from tests.support.workers import SyncSocket, deployment

pytestmark = pytest.mark.django_db(transaction=True)

SLOW = "".join(f"第{i}句。" for i in range(1, 61))
SUMMARY = "## 目标\n继续。\n## 相关文件\n- src/app.py\n" + "细节 " * 80


@contextmanager
def _web(runner: str, var: Path) -> Iterator[int]:
    """The port of a web process whose jobs run as ``runner`` says."""
    if runner == "worker":
        if "postgresql" not in settings.DATABASES["default"]["ENGINE"] or not settings.REDIS_URL:
            pytest.skip("the worker runner needs PostgreSQL and Redis")
        with deployment(var) as live:
            yield live.webs[0].port
    else:
        with running_daphne(var, env={"NETACLAW_RUNNER": "inprocess"}) as web:
            yield web.port


def _model(body: dict[str, Any], wire: str) -> Any:
    if not body.get("tools"):
        return Reply(text=SUMMARY)
    users = [m for m in body["messages"] if m.get("role") == "user"]
    last = str(users[-1].get("content")) if users else ""
    if "慢" in last:
        return Reply(text=SLOW, chunk_size=3, delay_per_chunk=0.05)
    return Reply(text=f"回答：{last[-4:]}")


def _world(server: ScriptedLLMServer) -> tuple[str, str]:
    user = make_user()
    channel = make_channel(
        base_url=server.openai_base_url, context_window=200_000, is_auxiliary=True
    )
    agent = make_agent(model_channel=channel, auxiliary_model_channel=channel, owner=user)
    return Token.objects.create(user=user).key, str(make_session(owner=user, agent=agent).pk)


def _history(sid: str) -> list[tuple[str, str]]:
    session = ChatSession.objects.get(pk=sid)
    return [
        (m.role, m.content)
        for m in history_load(session=session, view="compacted")
        if m.role in {Role.USER, Role.ASSISTANT} and not m.is_compaction_summary
    ]


RUNNERS = ["inprocess", "worker"]


@pytest.mark.parametrize("runner", RUNNERS)
def test_a_message_sent_during_a_turn_is_queued_then_answered_after_it(runner, tmp_path) -> None:
    with ScriptedLLMServer(responder=_model) as llm:
        token, sid = _world(llm)
        with _web(runner, tmp_path / "var") as port:
            ws = SyncSocket(port, token)
            ws.send({"type": "chat", "sessionId": sid, "content": "慢慢讲"})
            ws.until("delta")
            ws.send({"type": "chat", "sessionId": sid, "content": "第二问"})
            first = ws.until("turn_done")
            second = ws.until("turn_done")
            ws.close()
    queued = [e for e in first if e["type"] == "message" and e["message"].get("queued")]
    assert [q["message"]["content"] for q in queued] == ["第二问"]
    assert "".join(e["text"] for e in second if e["type"] == "delta") == "回答：第二问"
    assert _history(sid) == [
        ("user", "慢慢讲"),
        ("assistant", SLOW),
        ("user", "第二问"),
        ("assistant", "回答：第二问"),
    ]


@pytest.mark.parametrize("runner", RUNNERS)
def test_stop_ends_the_turn_and_retry_runs_it_again(runner, tmp_path) -> None:
    with ScriptedLLMServer(responder=_model) as llm:
        token, sid = _world(llm)
        with _web(runner, tmp_path / "var") as port:
            ws = SyncSocket(port, token)
            ws.send({"type": "chat", "sessionId": sid, "content": "慢慢讲"})
            ws.until("delta")
            started = time.monotonic()
            ws.send({"type": "stop", "sessionId": sid})
            stopped = ws.until("turn_done", timeout=20)
            took = time.monotonic() - started
            ws.send({"type": "retry", "sessionId": sid})
            again = ws.until("turn_done", timeout=60)
            ws.close()
    assert stopped[-1].get("stopped") is True and took < 5, took
    assert "".join(e["text"] for e in again if e["type"] == "delta") == SLOW


@pytest.mark.parametrize("runner", RUNNERS)
def test_compact_compacts_and_a_second_socket_resumes_a_running_answer(runner, tmp_path) -> None:
    with ScriptedLLMServer(responder=_model) as llm:
        token, sid = _world(llm)
        fill_history(ChatSession.objects.get(pk=sid), messages=30, filler=80)
        with _web(runner, tmp_path / "var") as port:
            ws = SyncSocket(port, token)
            ws.send({"type": "compact", "sessionId": sid})
            done = ws.until("compaction_done", timeout=60)
            ws.send({"type": "chat", "sessionId": sid, "content": "慢慢讲"})
            ws.until("delta")
            other = SyncSocket(port, token)
            other.send({"type": "resume", "sessionId": sid})
            resumed = other.until("turn_done", timeout=60)
            ws.close()
            other.close()
    assert done[-1]["summaryMessageId"]
    pieces = [e for e in resumed if e["type"] == "delta"]
    assert [p["seq"] for p in pieces] == list(range(1, len(pieces) + 1))
    assert "".join(p["text"] for p in pieces) == SLOW


@pytest.mark.parametrize("runner", RUNNERS)
def test_regenerate_and_edit_answer_again_and_keep_the_earlier_versions(runner, tmp_path) -> None:
    """Issue 26 item 1 under both runners: the answer that follows a regenerate or an edit
    runs as a turn does (with workers: its job stored with the change)."""
    with ScriptedLLMServer(responder=_model) as llm:
        token, sid = _world(llm)
        with _web(runner, tmp_path / "var") as port:
            ws = SyncSocket(port, token)
            ws.send({"type": "chat", "sessionId": sid, "content": "第一问"})
            first = ws.until("turn_done")
            answer = next(
                e["message"]["id"]
                for e in first
                if e["type"] == "message" and e["message"]["role"] == "assistant"
            )
            ws.send({"type": "regenerate", "sessionId": sid, "messageId": answer})
            again = ws.until("turn_done", timeout=60)
            changed = next(e for e in again if e["type"] == "branch_changed")
            question = changed["marked"]["id"]
            ws.send(
                {"type": "edit", "sessionId": sid, "messageId": question, "content": "改过的问"}
            )
            edited = ws.until("turn_done", timeout=60)
            fork = next(e for e in edited if e["type"] == "branch_changed")["forkId"]
            ws.send({"type": "branch", "sessionId": sid, "forkId": fork, "version": 1})
            switched = ws.until("branch_changed")
            ws.close()
    assert (changed["setAsideFrom"], changed["version"]) == (answer, 2)
    assert "".join(e["text"] for e in again if e["type"] == "delta") == "回答：第一问"
    assert "".join(e["text"] for e in edited if e["type"] == "delta") == "回答：改过的问"
    # the edit's first version is back, with the regenerated answer chosen in it
    assert switched[-1]["version"] == 1 and switched[-1]["marked"]["id"] == question
    assert switched[-1]["marked"]["branch"]["versions"] == 2  # the edit's two versions
    assert switched[-1]["marked"]["answers"]["versions"] == 2  # the answers to 第一问
    assert _history(sid) == [("user", "第一问"), ("assistant", "回答：第一问")]
