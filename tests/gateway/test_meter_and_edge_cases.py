"""The context meter against real token counts, the seed's §10 edge cases at the gateway,
and two sockets watching one session.

The scripted model here counts input tokens the way real tokenizers treat Chinese
(one token per CJK character, the rest chars/4) and refuses any request larger than
its window, as providers do — so a trigger that trusted the seed's chars/4 estimate
would overflow the window instead of compacting.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
from channels.db import database_sync_to_async

from agents.models import Agent, ChatSession
from agents.services import messages_bulk_append
from scripted_llm import Fail, Reply
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.support.sockets import connect, receive_until, send, token_for
from tests.support.summaries import SUMMARY, is_summary_request

pytestmark = pytest.mark.django_db(transaction=True)

_CJK = re.compile(r"[\u3400-\u9fff]")


def cjk_aware_tokens(body: dict[str, Any]) -> int:
    """A stand-in for a real tokenizer: a CJK character is a token, other text chars/4."""
    text = json.dumps([body.get("system"), body.get("messages")], ensure_ascii=False)
    cjk = len(_CJK.findall(text))
    return cjk + (len(text) - cjk) // 4


def strict_model(window: int, answer: str = "好的，我记下了这一步。"):
    """Chat requests report CJK-aware usage; one over ``window`` is refused (HTTP 400)."""
    chat_sizes: list[int] = []

    def respond(body: dict[str, Any], wire: str) -> Any:
        if is_summary_request(body):
            return Reply(text=SUMMARY)
        tokens = cjk_aware_tokens(body)
        chat_sizes.append(tokens)
        if tokens > window:
            message = f"This model's maximum context length is {window} tokens ({tokens} given)"
            return Fail(status=400, body={"error": {"message": message}}, should_retry=False)
        return Reply(text=answer, input_tokens=tokens, chunk_size=8)

    return respond, chat_sizes


@database_sync_to_async
def _world(server, *, window: int, history: list[str] = (), protect: int = 3) -> tuple[Any, Any]:
    user = make_user()
    channel = make_channel(base_url=server.openai_base_url, context_window=window)
    aux = make_channel(
        name="aux", base_url=server.openai_base_url, context_window=200_000, is_auxiliary=True
    )
    agent = make_agent(
        model_channel=channel,
        auxiliary_model_channel=aux,
        system_prompt="你是一个代码助手。",
        compaction_protect_first_n=protect,
    )
    session = make_session(owner=user, agent=agent)
    rows = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": c} for i, c in enumerate(history)
    ]
    if rows:
        messages_bulk_append(session=session, rows=rows)
    return user, session


async def _turn(ws, sid: str, content: str, timeout: float = 30) -> list[dict[str, Any]]:
    await send(ws, {"type": "chat", "sessionId": sid, "content": content})
    return await receive_until(ws, "turn_done", timeout=timeout)


def _kinds(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


async def test_a_chinese_conversation_compacts_before_the_real_count_reaches_the_window(
    llm_server,
) -> None:
    window = 4_000
    threshold = window * 70 // 100
    llm_server.responder, chat_sizes = strict_model(window)
    user, session = await _world(llm_server, window=window)
    sid = str(session.pk)
    ws, _ = await connect(token=await token_for(user), origin=None)

    seen: list[dict[str, Any]] = []
    turns_after = 0
    for i in range(45):
        step = (
            f"第{i}步：请把解析器里处理空行和注释的逻辑拆成独立的函数，并补上对应的单元测试。" * 3
        )
        events = await _turn(ws, sid, step)
        seen += events
        assert "error" not in _kinds(events), [e for e in events if e["type"] == "error"]
        if "compaction_done" in _kinds(seen):
            turns_after += 1
            if turns_after == 3:
                break
    await ws.disconnect()

    kinds = _kinds(seen)
    assert "compaction_done" in kinds, f"no compaction in {len(chat_sizes)} turns: {chat_sizes}"
    start = seen[kinds.index("compaction_start")]
    done = seen[kinds.index("compaction_done")]
    assert start["reason"] == "auto"
    assert max(chat_sizes) < window, "the real count never reached the window"
    meter = [e for e in seen[: kinds.index("compaction_start")] if e["type"] == "token_update"]
    assert meter[-1]["context"]["usedTokens"] >= threshold
    # one counter (issue 17 item 10): the compaction's figures are the token bar's (the
    # seed's estimate alone was still far under the threshold when it fired)
    assert done["tokensBefore"] >= meter[-1]["context"]["usedTokens"], done
    after_meter = [e for e in seen[kinds.index("compaction_done") :] if e["type"] == "token_update"]
    assert after_meter[0]["context"]["usedTokens"] == done["tokensAfter"], (after_meter[0], done)
    # the turn after the compaction is well under the threshold, in real tokens
    after = chat_sizes[-3:]
    assert all(size < threshold for size in after), (after, threshold)


async def test_the_meter_starts_from_the_reported_input_tokens(llm_server) -> None:
    """After a call the figure is the provider's count plus the estimate of what came since."""
    reported = 5_000  # far above anything chars/4 would give for this chat
    llm_server.responder = lambda body, wire: Reply(text="好", input_tokens=reported)
    user, session = await _world(llm_server, window=200_000)
    ws, _ = await connect(token=await token_for(user), origin=None)
    sid = str(session.pk)
    first = await _turn(ws, sid, "你好")
    meters = [e["context"] for e in first if e["type"] == "token_update"]
    assert meters[0]["estimated"] is True and meters[0]["usedTokens"] < 100, "before any call"
    assert reported <= meters[-1]["usedTokens"] <= reported + 20, meters[-1]
    second = await _turn(ws, sid, "继续")
    before_call = next(e for e in second if e["type"] == "token_update")["context"]
    assert before_call["estimated"] is True, "the new message is estimated until it is sent"
    assert reported < before_call["usedTokens"] <= reported + 40, before_call
    await ws.disconnect()


async def test_fewer_messages_than_the_protected_head_never_trigger(llm_server) -> None:
    llm_server.responder = lambda body, wire: (
        Reply(text=SUMMARY) if is_summary_request(body) else Reply(text="读完了。")
    )
    user, session = await _world(llm_server, window=1_000)
    ws, _ = await connect(token=await token_for(user), origin=None)
    events = await _turn(ws, str(session.pk), "请读这段：" + "x" * 3_000)  # ~760 of 700
    await ws.disconnect()
    assert "compaction_start" not in _kinds(events)
    assert "delta" in _kinds(events) and not [
        r for r in llm_server.requests if is_summary_request(r.body)
    ]


async def test_one_oversized_message_is_reported_once_and_not_looped_on(llm_server) -> None:
    llm_server.responder = lambda body, wire: (
        Reply(text=SUMMARY) if is_summary_request(body) else Reply(text="收到。")
    )
    history = [f"第 {i} 轮" for i in range(10)]
    user, session = await _world(llm_server, window=2_000, history=history)
    ws, _ = await connect(token=await token_for(user), origin=None)
    sid = str(session.pk)
    first = await _turn(ws, sid, "log: " + "y" * 6_000)  # one message over the 1,400 threshold
    failed = [e for e in first if e["type"] == "compaction_failed"]
    assert [e["reason"] for e in failed] == ["oversized_message"]
    assert "建议拆分" in failed[0]["error"]
    second = await _turn(ws, sid, "好的")
    await ws.disconnect()
    assert "compaction_start" not in _kinds(second), "paused, not retried every turn"
    meter = next(e for e in second if e["type"] == "token_update")
    assert meter["autoCompaction"]["paused"] is True
    assert "建议拆分" in meter["autoCompaction"]["reason"]
    assert not [r for r in llm_server.requests if is_summary_request(r.body)]
    paused = await database_sync_to_async(
        lambda: ChatSession.objects.get(pk=session.pk).auto_compaction_paused_reason
    )()
    assert "建议拆分" in paused


async def test_a_model_switch_that_shrinks_the_window_compacts_before_the_next_call(
    llm_server,
) -> None:
    llm_server.responder = lambda body, wire: (
        Reply(text=SUMMARY) if is_summary_request(body) else Reply(text="继续。")
    )
    history = [f"第 {i} 轮 src/parser.py " + "内容" * 200 for i in range(40)]
    user, session = await _world(llm_server, window=200_000, history=history)
    ws, _ = await connect(token=await token_for(user), origin=None)
    sid = str(session.pk)
    before = await _turn(ws, sid, "继续")
    assert "compaction_start" not in _kinds(before)

    @database_sync_to_async
    def switch() -> None:
        small = make_channel(
            name="small", base_url=llm_server.openai_base_url, context_window=6_000
        )
        Agent.objects.filter(pk=session.agent_id).update(model_channel=small)

    await switch()
    after = await _turn(ws, sid, "换了模型，继续")
    await ws.disconnect()
    kinds = _kinds(after)
    assert kinds.index("compaction_start") < kinds.index("compaction_done") < kinds.index("delta")
    last_chat = [r for r in llm_server.requests if not is_summary_request(r.body)][-1].body
    assert "[CONTEXT COMPACTION]" in json.dumps(last_chat, ensure_ascii=False)


async def test_two_sockets_on_one_session_see_the_events_of_one_compaction(llm_server) -> None:
    import time

    def slow_summary(body: dict[str, Any], wire: str) -> Any:
        if is_summary_request(body):
            time.sleep(0.8)
            return Reply(text=SUMMARY)
        return Reply(text="在。")

    llm_server.responder = slow_summary
    history = [f"第 {i} 轮 " + "内容" * 50 for i in range(20)]
    user, session = await _world(llm_server, window=200_000, history=history)
    token = await token_for(user)
    sid = str(session.pk)
    tab_a, _ = await connect(token=token, origin=None)
    tab_b, _ = await connect(token=token, origin=None)
    await _turn(tab_b, sid, "在吗")  # tab B joins the session's group
    await send(tab_a, {"type": "compact", "sessionId": sid})
    await send(tab_b, {"type": "compact", "sessionId": sid})
    seen_a, seen_b = await asyncio.gather(
        receive_until(tab_a, "compaction_done", timeout=20),
        receive_until(tab_b, "compaction_done", timeout=20),
    )
    await tab_a.disconnect()
    await tab_b.disconnect()
    summaries = [r for r in llm_server.requests if is_summary_request(r.body)]
    assert len(summaries) == 1, "one compaction"
    skipped = [e for e in seen_a + seen_b if e["type"] == "compaction_skipped"]
    assert len(skipped) == 1 and skipped[0]["reason"] == "in_progress"
    for seen in (seen_a, seen_b):
        assert _kinds(seen).count("compaction_start") == 1
        assert seen[-1]["summaryMessageId"] == seen_a[-1]["summaryMessageId"]
