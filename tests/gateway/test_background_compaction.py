"""Background compaction through the socket (issue 14 item 6): once a chat passes the soft
threshold its summary is written between turns, and the turn that crosses the threshold
applies it instead of waiting for the auxiliary model."""

from __future__ import annotations

from typing import Any

import pytest
from channels.db import database_sync_to_async

from agents.services import messages_bulk_append
from compaction import background
from scripted_llm import Reply
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.support.sockets import connect, receive_until, send, token_for
from tests.support.summaries import SUMMARY, is_summary_request

pytestmark = pytest.mark.django_db(transaction=True)

WINDOW = 6_000


@database_sync_to_async
def _world(server) -> tuple[Any, str]:
    user = make_user()
    channel = make_channel(base_url=server.openai_base_url, context_window=WINDOW)
    aux = make_channel(
        name="aux", base_url=server.openai_base_url, context_window=200_000, is_auxiliary=True
    )
    agent = make_agent(
        model_channel=channel, auxiliary_model_channel=aux, compaction_threshold_percent=80
    )
    session = make_session(owner=user, agent=agent)
    rows = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} " + "x" * 600}
        for i in range(24)  # about 3,700 of the window's 6,000 tokens: under the soft 4,200
    ]
    messages_bulk_append(session=session, rows=rows)
    return user, str(session.pk)


async def test_the_crossing_turn_applies_the_summary_written_between_turns(
    llm_server, background_compaction
) -> None:
    summaries: list[float] = []

    def respond(body: dict[str, Any], wire: str) -> Any:
        if is_summary_request(body):
            summaries.append(1)
            return Reply(text=SUMMARY, delay=0.3)
        return Reply(text="ok")  # usage: chars/4 of the request, like the meter's estimate

    llm_server.responder = respond
    user, sid = await _world(llm_server)
    ws, _ = await connect(token=await token_for(user), origin=None)
    asked_before_crossing = None
    for i in range(12):
        asked = len(summaries)
        await send(ws, {"type": "chat", "sessionId": sid, "content": f"step {i} " + "y" * 1200})
        events = await receive_until(ws, "turn_done", timeout=30)
        kinds = [e["type"] for e in events]
        assert "error" not in kinds and "compaction_failed" not in kinds, events
        if "compaction_done" in kinds:
            asked_before_crossing = asked
            break
        await database_sync_to_async(background.wait)(sid, 30)  # the user reads and types
    await ws.disconnect()

    assert asked_before_crossing is not None, "no compaction in 12 turns"
    assert asked_before_crossing == 1, "the summary was not prepared before the crossing turn"
    assert len(summaries) == 1, "the crossing turn asked the auxiliary model again"
