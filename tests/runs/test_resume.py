"""Re-attach (issue 24 item 4; CONTRACT §8): every delta carries ``turnId`` and ``seq``; a
socket that sends ``resume`` gets the running answer's pieces after ``afterSeq`` first, then
the live ones — no gap, no duplicate — then ``turn_done``; the page's socket resumes by
itself on connect, after what it rendered from the stored answers."""

from __future__ import annotations

from typing import Any

import pytest
from channels.db import database_sync_to_async

from agents import replay
from agents.events import CompactionProgress, Delta, MessageStored, TurnDone
from scripted_llm import Reply
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.support.sockets import connect, receive, receive_until, send, token_for

pytestmark = pytest.mark.django_db(transaction=True)

STORY = "".join(f"第{i}段。" for i in range(1, 61))


@database_sync_to_async
def _world(server: Any) -> tuple[Any, str]:
    user = make_user()
    channel = make_channel(base_url=server.openai_base_url, context_window=200_000)
    agent = make_agent(model_channel=channel, owner=user)
    return user, str(make_session(owner=user, agent=agent).pk)


def _deltas(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == "delta"]


@pytest.mark.parametrize("after", [0, 4])
async def test_a_socket_that_resumes_mid_answer_gets_it_whole_without_gap_or_duplicate(
    llm_server, after: int
) -> None:
    llm_server.enqueue(Reply(text=STORY, chunk_size=3, delay_per_chunk=0.02))
    user, sid = await _world(llm_server)
    token = await token_for(user)
    first, _ = await connect(token=token, origin=None)
    await send(first, {"type": "chat", "sessionId": sid, "content": "讲"})
    seen = []
    for _ in range(6):
        seen += await receive_until(first, "delta")
    late, _ = await connect(token=token, origin=None)
    await send(late, {"type": "resume", "sessionId": sid, "afterSeq": after})
    resumed = await receive_until(late, "turn_done", timeout=30)
    await receive_until(first, "turn_done", timeout=30)
    await first.disconnect()
    await late.disconnect()
    pieces = _deltas(resumed)
    assert [p["seq"] for p in pieces] == list(range(after + 1, after + 1 + len(pieces)))
    assert "".join(p["text"] for p in _deltas(seen))[: after * 3].startswith(
        "".join(p["text"] for p in _deltas(seen)[:after])
    )
    whole = "".join(p["text"] for p in _deltas(seen)[:after]) + "".join(p["text"] for p in pieces)
    assert whole == STORY
    assert resumed[-1]["turnId"] == pieces[0]["turnId"]


async def test_resume_after_the_turn_ended_replays_it_and_says_it_ended(llm_server) -> None:
    llm_server.enqueue(Reply(text="短回答。", chunk_size=2))
    user, sid = await _world(llm_server)
    token = await token_for(user)
    ws, _ = await connect(token=token, origin=None)
    await send(ws, {"type": "chat", "sessionId": sid, "content": "问"})
    done = (await receive_until(ws, "turn_done"))[-1]
    await send(ws, {"type": "resume", "sessionId": sid})  # this socket has it all already
    assert [e["type"] for e in await receive_until(ws, "turn_done")] == ["turn_done"]
    await ws.disconnect()
    other, _ = await connect(token=token, origin=None)  # a reload, a second tab
    await send(other, {"type": "resume", "sessionId": sid})
    again = await receive_until(other, "turn_done")
    await other.disconnect()
    assert "".join(p["text"] for p in _deltas(again)) == "短回答。"
    assert again[-1]["turnId"] == done["turnId"]


async def test_a_resume_for_someone_elses_session_is_refused(llm_server) -> None:
    owner, sid = await _world(llm_server)
    stranger = await database_sync_to_async(make_user)()
    ws, _ = await connect(token=await token_for(stranger), origin=None)
    await send(ws, {"type": "resume", "sessionId": sid, "afterSeq": 0})
    event = await receive(ws)
    await ws.disconnect()
    assert (event["type"], event["reason"]) == ("error", "unknown_session")


@pytest.mark.parametrize("after", [-1, "3", True, 1.5])
async def test_a_bad_after_seq_is_a_bad_field(llm_server, after: Any) -> None:
    user, sid = await _world(llm_server)
    ws, _ = await connect(token=await token_for(user), origin=None)
    await send(ws, {"type": "resume", "sessionId": sid, "afterSeq": after})
    event = await receive(ws)
    await ws.disconnect()
    assert (event["type"], event["reason"]) == ("error", "bad_field")


# --- the log itself -------------------------------------------------------------------


async def test_the_log_keeps_one_turn_per_session_and_the_latest_summary_progress() -> None:
    log = replay.MemoryReplay()
    await log.record("s", [Delta("s", "a", "t1", 1), Delta("s", "b", "t1", 2)])
    await log.record("s", [CompactionProgress("s", "摘要进行中", 1, 1)])
    found = await log.read("s", 1)
    assert (found.turn_id, found.deltas, found.ended) == ("t1", ((2, "b"),), False)
    assert found.progress is not None and found.progress["text"] == "摘要进行中"
    await log.record("s", [Delta("s", "c", "t2", 1), TurnDone("s", turn_id="t2")])
    found = await log.read("s", 0)
    assert (found.turn_id, found.deltas, found.ended) == ("t2", ((1, "c"),), True)


@pytest.mark.redis
async def test_the_redis_log_reads_what_any_process_wrote(settings) -> None:
    log = replay.RedisReplay(settings.REDIS_URL, "netaclaw-test-replay")
    sid = "00000000-0000-0000-0000-000000000001"
    await log.record(sid, [Delta(sid, "一", "t9", 1), Delta(sid, "二", "t9", 2)])
    await log.record(sid, [Delta(sid, "三", "t9", 3), TurnDone(sid, turn_id="t9")])
    found = await log.read(sid, 1)
    assert (found.turn_id, found.deltas, found.ended) == ("t9", ((2, "二"), (3, "三")), True)
    await log.record(sid, [Delta(sid, "新", "t10", 1)])  # a new turn drops the last one's
    found = await log.read(sid, 0)
    assert (found.turn_id, found.deltas, found.ended) == ("t10", ((1, "新"),), False)


def _user_message(sid: str, *, queued: bool = False) -> MessageStored:
    message: dict[str, Any] = {"id": 1, "role": "user", "content": "再想想"}
    if queued:
        message["queued"] = True
    return MessageStored(sid, message)


async def _a_new_turn_forgets_the_ended_one(log: Any, sid: str) -> None:
    await log.record(sid, [Delta(sid, "好的。", "t1", 1), TurnDone(sid, turn_id="t1")])
    await log.record(sid, [_user_message(sid, queued=True)])  # waits: t1's log stands
    assert (await log.read(sid, 0)).ended
    await log.record(sid, [_user_message(sid)])  # its turn starts, nothing streamed yet
    found = await log.read(sid, 0)
    # a page reloaded now must not be told that a turn ended: its own has just begun
    assert replay.events_of(sid, found, 0) == []


async def test_a_users_message_ends_the_log_of_the_turn_before() -> None:
    await _a_new_turn_forgets_the_ended_one(replay.MemoryReplay(), "s")


@pytest.mark.redis
async def test_a_users_message_ends_the_redis_log_of_the_turn_before(settings) -> None:
    log = replay.RedisReplay(settings.REDIS_URL, "netaclaw-test-replay")
    await _a_new_turn_forgets_the_ended_one(log, "00000000-0000-0000-0000-000000000002")
