"""Issue 27 item 12: an outage never leaves a turn without its end, nor one record per
asking. A database that fails under a turn: the socket still gets ``turn_done`` (with
``storage_error``), and the chat goes on once it is back; compactions refused while a dead
holder's lease lasts are recorded once, not once each."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.db import OperationalError
from django.utils import timezone

from agents import services
from agents.models import ChatSession, CompactionRecord
from compaction.request import CompactionRequest
from compaction.run import compact
from scripted_llm import Reply
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.support.history import session_to_compact
from tests.support.sockets import connect, receive_until, send, token_for

pytestmark = pytest.mark.django_db(transaction=True)


@database_sync_to_async
def _world(server: Any) -> tuple[Any, str]:
    user = make_user()
    channel = make_channel(base_url=server.openai_base_url, context_window=200_000)
    agent = make_agent(model_channel=channel, owner=user)
    return user, str(make_session(owner=user, agent=agent).pk)


async def test_a_database_outage_mid_turn_still_ends_the_turn(llm_server, monkeypatch) -> None:
    llm_server.enqueue(Reply(text="存不下的回答。"), Reply(text="恢复后回答。"))
    user, sid = await _world(llm_server)
    ws, _ = await connect(token=await token_for(user), origin=None)
    real = services.message_append

    def down(**kwargs: Any) -> Any:
        if kwargs.get("role") != "user":
            raise OperationalError("the server closed the connection unexpectedly")
        return real(**kwargs)

    monkeypatch.setattr(services, "message_append", down)
    await send(ws, {"type": "chat", "sessionId": sid, "content": "问"})
    events = await receive_until(ws, "turn_done", timeout=20)
    errors = [e for e in events if e["type"] == "error"]
    assert errors and errors[-1]["reason"] == "storage_error"
    monkeypatch.setattr(services, "message_append", real)  # the database is back
    await send(ws, {"type": "chat", "sessionId": sid, "content": "再问"})
    again = await receive_until(ws, "turn_done", timeout=20)
    await ws.disconnect()
    assert "".join(e["text"] for e in again if e["type"] == "delta") == "恢复后回答。"


def test_compactions_refused_during_one_dead_lease_are_recorded_once(llm_server) -> None:
    session = session_to_compact(llm_server)
    ChatSession.objects.filter(pk=session.pk).update(
        lease_holder="t/dead:1:abc", lease_expires_at=timezone.now() + timedelta(seconds=40)
    )
    outcomes = [compact(CompactionRequest(str(session.pk))) for _ in range(5)]
    assert {o.reason for o in outcomes} == {"in_progress"}
    assert CompactionRecord.objects.filter(session=session).count() == 1
