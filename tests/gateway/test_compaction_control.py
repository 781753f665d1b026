"""CONTRACT §7 over the socket: ``compact`` with ``upTo``, the ``undo`` frame and its
``compaction_undone`` event, mode ``ask``'s ``compaction_suggested``, mode ``off``, and
one counter (``compaction_done``'s figures are the token bar's)."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async

from agents.models import CompactionRecord, Message
from agents.selectors import llm_history_load
from scripted_llm import Reply, ToolCall
from tests.factories import make_user
from tests.support.history import chat_to_compact
from tests.support.sockets import connect, receive_until, send, token_for
from tests.support.summaries import SUMMARY, is_summary_request

pytestmark = pytest.mark.django_db(transaction=True)


_setup = database_sync_to_async(chat_to_compact)


@database_sync_to_async
def _visible_ids(session) -> list[int]:
    return [m.pk for m in llm_history_load(session=session)]


async def test_compact_up_to_then_undo_over_the_socket(llm_server) -> None:
    llm_server.enqueue(Reply(text=SUMMARY))
    user, session = await _setup(llm_server)
    sid = str(session.pk)
    before = await _visible_ids(session)
    ws, _ = await connect(token=await token_for(user), origin=None)
    await send(ws, {"type": "compact", "sessionId": sid, "upTo": before[12]})
    events = await receive_until(ws, "compaction_done", timeout=20)
    done = events[-1]
    assert done["removedCount"] > 0 and "compactionId" not in done  # CONTRACT §5: exact fields
    record = await database_sync_to_async(CompactionRecord.objects.get)(
        summary_message_id=done["summaryMessageId"]
    )
    later = await database_sync_to_async(
        lambda: list(Message.objects.filter(pk__in=before[12:], compacted_at__isnull=False))
    )()
    assert later == []
    await send(ws, {"type": "undo", "sessionId": sid, "compactionId": record.pk})
    events = await receive_until(ws, "compaction_undone", timeout=10)
    undone = events[-1]
    assert undone == {
        "type": "compaction_undone",
        "sessionId": sid,
        "summaryMessageId": done["summaryMessageId"],
        "restoredCount": done["removedCount"],
    }
    meter = (await receive_until(ws, "token_update", timeout=10))[-1]
    assert set(meter["context"]["breakdown"]) >= {"systemPrompt", "pins", "summary", "free"}
    assert meter["context"]["breakdown"]["summary"] == 0  # the summary is undone
    assert await _visible_ids(session) == before
    await send(ws, {"type": "undo", "sessionId": sid})
    refused = (await receive_until(ws, "error", timeout=10))[-1]
    assert refused["reason"] == "nothing_to_undo"
    await send(ws, {"type": "undo", "sessionId": sid, "compactionId": "x"})
    bad = (await receive_until(ws, "error", timeout=10))[-1]
    assert bad["reason"] == "bad_field"
    await ws.disconnect()


async def test_undo_of_a_foreign_session_is_refused(llm_server) -> None:
    _owner, session = await _setup(llm_server, history=4)
    stranger = await database_sync_to_async(make_user)()
    ws, _ = await connect(token=await token_for(stranger), origin=None)
    await send(ws, {"type": "undo", "sessionId": str(session.pk)})
    refused = (await receive_until(ws, "error", timeout=10))[-1]
    assert refused["reason"] == "unknown_session"
    await ws.disconnect()


async def test_mode_ask_suggests_once_instead_of_compacting(llm_server) -> None:
    llm_server.responder = lambda body, wire: (
        Reply(text=SUMMARY) if is_summary_request(body) else Reply(text="继续。")
    )
    user, session = await _setup(llm_server, window=6000, history=40, mode="ask")
    sid = str(session.pk)
    ws, _ = await connect(token=await token_for(user), origin=None)
    await send(ws, {"type": "chat", "sessionId": sid, "content": "继续修 bug"})
    events = await receive_until(ws, "turn_done", timeout=30)
    kinds = [e["type"] for e in events]
    assert "compaction_start" not in kinds
    suggested = [e for e in events if e["type"] == "compaction_suggested"]
    assert len(suggested) == 1
    assert suggested[0]["context"]["usedTokens"] >= suggested[0]["context"]["thresholdTokens"]
    await send(ws, {"type": "chat", "sessionId": sid, "content": "再来"})
    events = await receive_until(ws, "turn_done", timeout=30)
    assert "compaction_suggested" not in [e["type"] for e in events]  # once per crossing
    assert not any(is_summary_request(r.body) for r in llm_server.requests)
    await ws.disconnect()


async def test_mode_off_never_compacts_but_compact_still_works(llm_server) -> None:
    llm_server.responder = lambda body, wire: (
        Reply(text=SUMMARY) if is_summary_request(body) else Reply(text="继续。")
    )
    user, session = await _setup(llm_server, window=6000, history=40, mode="off")
    sid = str(session.pk)
    ws, _ = await connect(token=await token_for(user), origin=None)
    await send(ws, {"type": "chat", "sessionId": sid, "content": "继续修 bug"})
    events = await receive_until(ws, "turn_done", timeout=30)
    kinds = [e["type"] for e in events]
    assert "compaction_start" not in kinds and "compaction_suggested" not in kinds
    await send(ws, {"type": "compact", "sessionId": sid})
    events = await receive_until(ws, "compaction_done", timeout=20)
    done = events[-1]
    meter = (await receive_until(ws, "token_update", timeout=10))[-1]
    # one counter: the bubble's figures and the bar's
    assert meter["context"]["usedTokens"] == done["tokensAfter"]
    record = await database_sync_to_async(CompactionRecord.objects.get)(
        summary_message_id=done["summaryMessageId"]
    )
    assert (record.trigger, record.status) == ("manual", "done")
    await ws.disconnect()


async def test_mode_ask_suggests_between_tool_steps_of_one_turn(llm_server) -> None:
    """A tool loop that crosses the threshold mid-turn: ask mode says so before the turn
    ends (and the turn goes on), not only at the next user message."""
    window = 8000
    call = ToolCall("c1", "write_file", json.dumps({"path": "notes.md", "content": "x"}))
    llm_server.enqueue(
        Reply(tool_calls=[call], input_tokens=window * 9 // 10),  # over 70% after the call
        Reply(text="完成。"),
    )
    user, session = await _setup(llm_server, window=window, history=6, mode="ask")
    sid = str(session.pk)
    ws, _ = await connect(token=await token_for(user), origin=None)
    await send(ws, {"type": "chat", "sessionId": sid, "content": "写笔记"})
    events = await receive_until(ws, "turn_done", timeout=30)
    kinds = [e["type"] for e in events]
    assert "compaction_start" not in kinds
    assert kinds.count("compaction_suggested") == 1
    # said between the two model calls: after the tool result, before the final answer
    tool_stored = next(
        i for i, e in enumerate(events) if e["type"] == "message" and e["message"]["role"] == "tool"
    )
    answer = max(i for i, e in enumerate(events) if e["type"] == "delta")
    assert tool_stored < kinds.index("compaction_suggested") < answer
    await ws.disconnect()
