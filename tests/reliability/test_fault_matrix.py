"""The fault matrix: every auxiliary-model failure × every way a compaction is started.

Faults (seed §9): the auxiliary model answers 500, 429, hangs past
``AUXILIARY_TIMEOUT_SECONDS``, answers a 200 that is not JSON, answers empty, answers a
summary under the 200-character floor, or nothing listens on its port.
Triggers: automatic (a chat turn over the threshold), ``/compact`` over the socket,
the ``compact_session`` command, and ``POST /api/sessions/<id>/compact/``.

Every cell proves the same four things: the failure is reported with the right
reason (``compaction_failed`` / exit 1 with a one-line reason / the REST error
JSON); every message row is byte-identical afterwards (only the failure bubble, a
system event, is added); no summary exists and the compaction count did not move;
and the chat goes on — the next chat turn is answered by the main model.
"""

from __future__ import annotations

import io
import socket
from collections.abc import Callable, Iterator
from contextlib import redirect_stderr
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.test import AsyncClient
from rest_framework.authtoken.models import Token

from agents.models import ChatSession, Message
from scripted_llm import Action, Empty, Fail, Hang, NonJSON, Reply, ScriptedLLMServer
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.support.history import fill_history, history_rows
from tests.support.sockets import connect, receive_until, send

pytestmark = pytest.mark.django_db(transaction=True)

ANSWER = "好的，我们继续。"
AUX_KEY = "sk-auxiliary-secret-4e5f6a"

# fault → (what the auxiliary endpoint does, the reason the user is told)
FAULTS: dict[str, tuple[Callable[[], Action] | None, str]] = {
    "http-500": (lambda: Fail(status=500), "upstream_error"),
    "http-429": (lambda: Fail(status=429), "rate_limited"),
    "timeout": (lambda: Hang(seconds=5), "timeout"),
    "non-json": (lambda: NonJSON(), "invalid_response"),
    "empty": (lambda: Empty(), "summary_empty"),  # asked once more, empty again
    "too-short": (lambda: Reply(text="## 目标\n修 bug。"), "summary_too_short"),
    "refused": (None, "connection_error"),  # the auxiliary channel points at a closed port
}
TRIGGERS = ["auto", "socket", "command", "rest"]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again on exit: connecting is refused


@pytest.fixture
def fast_auxiliary(settings) -> None:
    settings.NETACLAW = {**settings.NETACLAW, "AUXILIARY_TIMEOUT_SECONDS": 0.4}


@pytest.fixture
def server() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer() as srv:
        yield srv


def _is_summary_request(body: dict[str, Any]) -> bool:
    """The auxiliary call carries no tools; a chat turn always does (both stream)."""
    return not body.get("tools")


@database_sync_to_async
def _world(server: ScriptedLLMServer, *, auto: bool, refused: bool) -> dict[str, Any]:
    user = make_user()
    main = make_channel(base_url=server.openai_base_url, context_window=6_000 if auto else 200_000)
    aux_url = f"http://127.0.0.1:{_closed_port()}/v1" if refused else server.openai_base_url
    aux = make_channel(base_url=aux_url, api_key=AUX_KEY, is_auxiliary=True)
    agent = make_agent(model_channel=main, auxiliary_model_channel=aux)
    session = make_session(owner=user, agent=agent)
    # auto: ~4,600 estimated tokens, over 70 % of 6,000; manual: far under, forced
    fill_history(session, messages=40, filler=200 if auto else 60)
    return {
        "session": session,
        "sid": str(session.pk),
        "token": Token.objects.create(user=user).key,
        "rows": history_rows(session),
        "count": session.compaction_count,
    }


@database_sync_to_async
def _state(session: ChatSession) -> tuple[list[tuple[Any, ...]], int, int]:
    session.refresh_from_db()
    summaries = Message.objects.filter(session=session, is_compaction_summary=True).count()
    return history_rows(session), session.compaction_count, summaries


def _run_command(sid: str) -> tuple[int, str]:
    from compaction.management.commands.compact_session import Command

    err = io.StringIO()
    with redirect_stderr(err):
        try:
            Command().run_from_argv(["manage.py", "compact_session", sid, "--skip-checks"])
        except SystemExit as exc:
            return int(exc.code or 0), err.getvalue()
    return 0, err.getvalue()


async def _chat(ws: Any, sid: str, content: str) -> list[dict[str, Any]]:
    await send(ws, {"type": "chat", "sessionId": sid, "content": content})
    return await receive_until(ws, "turn_done", timeout=30)


def _answered(events: list[dict[str, Any]]) -> bool:
    return any(
        e["type"] == "message"
        and e["message"]["role"] == "assistant"
        and e["message"]["content"] == ANSWER
        for e in events
    )


@pytest.mark.parametrize("trigger", TRIGGERS)
@pytest.mark.parametrize("fault", list(FAULTS))
async def test_auxiliary_fault_is_reported_history_untouched_chat_goes_on(
    fast_auxiliary, server: ScriptedLLMServer, fault: str, trigger: str
) -> None:
    make_fault, reason = FAULTS[fault]
    server.responder = lambda body, wire: (
        make_fault() if make_fault and _is_summary_request(body) else Reply(text=ANSWER)
    )
    world = await _world(server, auto=trigger == "auto", refused=make_fault is None)
    sid = world["sid"]
    ws, connected = await connect(token=world["token"], origin=None)
    assert connected

    if trigger == "auto":
        events = await _chat(ws, sid, "继续修 parser")
        kinds = [e["type"] for e in events]
        assert "compaction_start" in kinds, kinds
        start = events[kinds.index("compaction_start")]
        assert start["reason"] == "auto"
        failed = [e for e in events if e["type"] == "compaction_failed"]
        assert failed and failed[0]["reason"] == reason, failed
        assert kinds.index("compaction_failed") < kinds.index("delta"), kinds
        assert _answered(events), "the turn that triggered the failed compaction is answered"
    elif trigger == "socket":
        await send(ws, {"type": "compact", "sessionId": sid})
        events = await receive_until(ws, "compaction_failed", timeout=30)
        assert events[-1]["reason"] == reason and events[-1]["error"], events[-1]
        assert [e["reason"] for e in events if e["type"] == "compaction_start"] == ["manual"]
        # the meter follows once the service has returned (lease released): only then read,
        # or SQLite's shared-cache test database refuses the service's last write
        await receive_until(ws, "token_update", timeout=30)
    elif trigger == "command":
        code, stderr = await database_sync_to_async(_run_command)(sid)
        assert code == 1, stderr
        last = stderr.strip().splitlines()[-1]
        assert last.startswith(f"CommandError: {reason}: "), stderr
    else:
        response = await AsyncClient().post(  # constructor headers never reach the scope
            f"/api/sessions/{sid}/compact/",
            {},
            content_type="application/json",
            headers={"Authorization": f"Token {world['token']}"},
        )
        assert response.status_code == 502, response.content
        body = response.json()
        assert body["reason"] == reason and body["error"], body
        assert AUX_KEY not in response.content.decode()

    rows, count, summaries = await _state(world["session"])
    if trigger == "auto":  # the turn added its user and assistant messages, at the end
        assert rows[: len(world["rows"])] == world["rows"]
        assert len(rows) == len(world["rows"]) + 2
    else:
        assert rows == world["rows"], "the history is byte-identical"
    assert count == world["count"] and summaries == 0

    events = await _chat(ws, sid, "那就先不压缩，继续吧")
    assert _answered(events), [e["type"] for e in events]
    assert not [e for e in events if e["type"] == "error"], events
    await ws.disconnect()
