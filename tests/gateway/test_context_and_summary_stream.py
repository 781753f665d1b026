"""Issue 17 items 11 and 12 over the socket: ``token_update`` carries the context breakdown
(kept by the turn's own tally, equal to a fresh reading), and the summary streams as
``compaction_progress`` while the auxiliary model writes it, on both wires."""

from __future__ import annotations

import itertools

import pytest
from channels.db import database_sync_to_async

from agents.meter import context_reading
from agents.models import Message
from agents.services import messages_bulk_append
from compaction.controls import message_pin
from condense import summary_body
from scripted_llm import Reply
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.support.history import apply_compaction
from tests.support.sockets import connect, receive_until, send, token_for
from tests.support.summaries import SUMMARY, is_summary_request

pytestmark = pytest.mark.django_db(transaction=True)

PARTS = ("systemPrompt", "toolDefinitions", "pins", "summary", "messages")


@database_sync_to_async
def _setup(server, *, aux_provider: str = "openai_compatible"):
    user = make_user()
    main = make_channel(base_url=server.openai_base_url, context_window=200_000)
    aux = make_channel(
        provider=aux_provider,
        base_url=server.base_url_for(aux_provider),
        model="claude-aux" if aux_provider == "anthropic" else "aux-model",
        is_auxiliary=True,
    )
    agent = make_agent(model_channel=main, auxiliary_model_channel=aux)
    session = make_session(owner=user, agent=agent)
    rows = [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"第 {i} 轮 src/parser.py " + "内容" * 200,
        }
        for i in range(20)
    ]
    return user, session, messages_bulk_append(session=session, rows=rows)


@database_sync_to_async
def _pin_and_summarize(session, rows) -> None:
    apply_compaction(session, rows[2:8])
    message_pin(session=session, message_id=rows[10].pk, pinned=True)


@database_sync_to_async
def _fresh_breakdown(session) -> dict[str, int]:
    session.refresh_from_db()
    reading = context_reading(session=session)
    assert reading.breakdown is not None
    return reading.breakdown


async def test_every_token_update_of_a_turn_carries_the_breakdown(llm_server) -> None:
    llm_server.enqueue(Reply(text="好的。", input_tokens=9_000))
    user, session, rows = await _setup(llm_server)
    await _pin_and_summarize(session, rows)
    ws, _ = await connect(token=await token_for(user), origin=None)
    await send(ws, {"type": "chat", "sessionId": str(session.pk), "content": "继续"})
    events = await receive_until(ws, "turn_done", timeout=20)
    meters = [e["context"] for e in events if e["type"] == "token_update"]
    assert len(meters) >= 2  # before the model call, and after its reported answer
    for context in meters:
        breakdown = context["breakdown"]
        assert sum(breakdown[k] for k in PARTS) == context["usedTokens"]
        assert breakdown["free"] == max(0, context["maxTokens"] - context["usedTokens"])
        assert breakdown["pins"] > 0 and breakdown["summary"] > 0
    # the last one comes from the turn's tally, without a query: a fresh reading agrees
    assert meters[-1]["breakdown"] == await _fresh_breakdown(session)
    await ws.disconnect()


@database_sync_to_async
def _summary_content(message_id: int) -> str:
    return Message.objects.get(pk=message_id).content


@pytest.mark.parametrize("aux_provider", ["openai_compatible", "anthropic"])
async def test_the_summary_streams_live_and_the_last_text_is_the_stored_summary(
    llm_server, aux_provider: str
) -> None:
    llm_server.responder = lambda body, wire: (
        Reply(text=SUMMARY, chunk_size=12, delay_per_chunk=0.01)
        if is_summary_request(body)
        else Reply(text="继续。")
    )
    user, session, _rows = await _setup(llm_server, aux_provider=aux_provider)
    ws, _ = await connect(token=await token_for(user), origin=None)
    await send(ws, {"type": "compact", "sessionId": str(session.pk)})
    events = await receive_until(ws, "compaction_done", timeout=30)
    kinds = [e["type"] for e in events]
    progress = [e for e in events if e["type"] == "compaction_progress"]
    assert len(progress) >= 6, kinds  # ~37 pieces over ~0.4 s a request: throttled events
    assert kinds.index("compaction_start") < kinds.index("compaction_progress")
    assert max(i for i, k in enumerate(kinds) if k == "compaction_progress") < kinds.index(
        "compaction_done"
    )
    # the auxiliary model's 8,000-token window takes the middle in parts, written at once
    # (in the compaction's thread and a helper of the core's) and then merged: every
    # request's text grows, and the last request, the merge, writes the summary
    chunks = {e["chunks"] for e in progress}
    assert len(chunks) == 1 and chunks.pop() > 1
    assert {e["sessionId"] for e in progress} == {str(session.pk)}
    order = [e["chunk"] for e in progress]
    assert set(order) == set(range(1, progress[-1]["chunks"] + 1))
    assert order[-1] == progress[-1]["chunks"]
    for chunk in set(order):
        texts = [e["text"] for e in progress if e["chunk"] == chunk]
        assert all(b.startswith(a) and len(b) > len(a) for a, b in itertools.pairwise(texts))
    texts = [e["text"] for e in progress]
    assert texts[-1] == SUMMARY.strip()  # the whole answer, as the checks kept it
    stored = await _summary_content(events[-1]["summaryMessageId"])
    assert summary_body(stored).startswith(texts[-1])  # the summary the drawer shows
    summaries = [r for r in llm_server.requests if is_summary_request(r.body)]
    assert summaries and all(r.stream for r in summaries)
    await ws.disconnect()
