"""Issue 27 item 5: one user's slow background summaries never stall another user's
threshold turn, and a turn at the threshold waits for its own preparation only so long
(``background.WAIT_SECONDS``) before it compacts by itself."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.contrib.auth import get_user_model

from agents.services import messages_bulk_append
from compaction import background
from compaction.models import PreparedCompaction
from scripted_llm import Reply
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.support.sockets import connect, receive_until, send, token_for
from tests.support.summaries import SUMMARY, is_summary_request

pytestmark = pytest.mark.django_db(transaction=True)

WINDOW = 6_000  # threshold 80%: 4,800 tokens; preparing starts at 70%: 4,200
SLOW = 8.0  # seconds a slow summary takes


@database_sync_to_async
def _chat(server, owner_name: str, rows: int) -> tuple[Any, str]:
    """A chat of ``rows`` turns tagged with its owner's name (one more chat of theirs when
    they have one): 28 rows are over the soft threshold and under the threshold."""
    user = get_user_model().objects.filter(username=owner_name).first() or make_user(owner_name)
    channel = make_channel(base_url=server.openai_base_url, context_window=WINDOW)
    aux = make_channel(
        name=f"aux {owner_name} {time.monotonic_ns()}",
        base_url=server.openai_base_url,
        context_window=200_000,
        is_auxiliary=True,
    )
    agent = make_agent(
        model_channel=channel, auxiliary_model_channel=aux, compaction_threshold_percent=80
    )
    session = make_session(owner=user, agent=agent)
    messages_bulk_append(
        session=session,
        rows=[
            {
                "role": "user" if i % 2 == 0 else "assistant",
                "content": f"{owner_name} turn {i} " + "x" * 600,
            }
            for i in range(rows)
        ],
    )
    return user, str(session.pk)


def _owner_of(body: dict[str, Any]) -> str:
    text = json.dumps(body, ensure_ascii=False)
    return "alice" if "alice turn" in text else "bob"


async def _crossing_turn(user: Any, sid: str) -> tuple[float, list[str]]:
    """Seconds from the message that crosses the threshold to its ``turn_done``."""
    ws, _ = await connect(token=await token_for(user), origin=None)
    started = time.monotonic()
    await send(ws, {"type": "chat", "sessionId": sid, "content": "cross " + "y" * 2400})
    events = await receive_until(ws, "turn_done", timeout=60)
    took = time.monotonic() - started
    await ws.disconnect()
    return took, [e["type"] for e in events]


async def _start_preparation(sid: str) -> None:
    assert await database_sync_to_async(background.start)(sid), "the preparation started"


@database_sync_to_async
def _preparing(sids: list[str]) -> int:
    return PreparedCompaction.objects.filter(
        session__pk__in=sids, status=PreparedCompaction.Status.PREPARING
    ).count()


async def test_another_users_slow_summaries_do_not_stall_a_threshold_turn(
    llm_server, background_compaction
) -> None:
    asked: dict[str, int] = {"alice": 0, "bob": 0}
    lock = threading.Lock()

    def respond(body: dict[str, Any], wire: str) -> Any:
        if is_summary_request(body):
            owner = _owner_of(body)
            with lock:
                asked[owner] += 1
            return Reply(text=SUMMARY, delay=SLOW if owner == "alice" else 0.2)
        return Reply(text="ok")

    llm_server.responder = respond
    alices = []
    for _ in range(5):  # more than a shared pool of four threads would run at once
        _alice, sid = await _chat(llm_server, "alice", 30)
        alices.append(sid)
    bob, bob_sid = await _chat(llm_server, "bob", 28)
    for sid in alices:
        await _start_preparation(sid)
    await _start_preparation(bob_sid)

    took, kinds = await _crossing_turn(bob, bob_sid)

    assert "compaction_done" in kinds and "error" not in kinds, kinds
    assert await _preparing(alices) == 5, "alice's summaries were still being written"
    assert took < SLOW / 2, f"bob's threshold turn took {took:.1f} s behind alice's summaries"
    assert asked["bob"] == 1, "bob's turn applied the summary prepared for it"


async def test_a_preparation_that_hangs_is_waited_for_only_so_long(
    llm_server, background_compaction, monkeypatch
) -> None:
    monkeypatch.setattr(background, "WAIT_SECONDS", 1.5)
    asked = {"n": 0}
    lock = threading.Lock()

    def respond(body: dict[str, Any], wire: str) -> Any:
        if is_summary_request(body):
            with lock:
                asked["n"] += 1
                first = asked["n"] == 1
            return Reply(text=SUMMARY, delay=SLOW if first else 0.2)
        return Reply(text="ok")

    llm_server.responder = respond
    bob, sid = await _chat(llm_server, "bob", 28)
    await _start_preparation(sid)

    took, kinds = await _crossing_turn(bob, sid)

    assert "compaction_done" in kinds and "error" not in kinds, kinds
    assert 1.5 <= took < SLOW - 2, f"the turn took {took:.1f} s"
    assert asked["n"] == 2, "the turn compacted by itself instead of waiting for the first"
