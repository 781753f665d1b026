"""The seed's §11 end-to-end checklist, in a real browser against a real server.

The main model and the auxiliary (summary) model are the scripted LLM server; the
auxiliary one writes its summary from the conversation it is sent, so what the model
sees after a compaction is traceable to what the user typed before it.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

pytest.importorskip("compaction.run", reason="the compaction entry has not landed yet")
pytest.importorskip("agents.runtime", reason="the agent runtime has not landed yet")
from playwright.sync_api import Page, expect

from agents.models import ChatSession
from scripted_llm import Reply
from tests.e2e.support import AUX_MODEL, MAIN_MODEL, conversation, failing, long_answer
from tests.support.chat_page import open_chat, record_frames, without_headers

GOAL = "把 src/app/main.py 拆分成模块"
PATHS = ["src/app/main.py", "src/app/config.py", "tests/test_main.py"]


def _setup(data: Any, *, threshold: int = 70, aux: bool = True, window: int = 4000, **agent: Any):
    user = data.user("compact")
    channel = data.channel(context_window=window)
    auxiliary = data.aux_channel() if aux else None
    agent_row = data.agent(
        model_channel=channel,
        auxiliary_model_channel=auxiliary,
        compaction_threshold_percent=threshold,
        **agent,
    )
    return user, agent_row


def _seeded_session(data: Any, user: Any, agent: Any, *, turns: int = 4, chars: int = 1200):
    rows = conversation(turns, chars=chars, goal=GOAL, paths=PATHS)
    return data.session(owner=user, agent=agent, title="拆分 main.py", rows=rows)


def _send(page: Page, text: str) -> None:
    box = page.get_by_label("输入消息")
    box.fill(text)
    box.press("Enter")


def _decoded(body: dict[str, Any]) -> str:
    return json.dumps(body, ensure_ascii=False)


def _done_bubble(page: Page):
    return page.locator('#messages [data-event="compaction_done"]')


def _failed_bubble(page: Page):
    return page.locator('#messages [data-event="compaction_failed"]')


DONE_TEXT = re.compile(r"上下文已压缩 · 移除 \d+ 条消息 · 节省 \d+% token")


def test_auto_compaction_at_the_threshold(page: Page, data, daphne_url, llm, readme_shot) -> None:
    """Chat until the context passes the agent's threshold: the bar turns orange, the
    next message compacts automatically (blue bar, 「正在压缩上下文...」), then the done
    bubble and the answer."""
    user, agent = _setup(data)
    session = _seeded_session(data, user, agent, turns=4, chars=1000)  # ~50% of 4000 tokens
    data.login(page.context, user, daphne_url)
    open_chat(page, session)
    bar = page.get_by_role("progressbar")
    expect(bar).to_have_attribute("data-state", "ok")
    expect(page.locator(".token-threshold .tip")).to_have_text("自动压缩阈值 70%")

    llm.queue_main(Reply(text=long_answer(4600), chunk_size=400))  # ~1150 tokens
    _send(page, "先读一下 src/app/main.py，然后告诉我怎么拆。")
    expect(page.locator("#messages article[data-role=assistant]")).to_have_count(5)
    expect(page.locator("#turn-status")).to_have_attribute("data-busy", "false")
    expect(bar).to_have_attribute("data-state", "warn")
    assert int(bar.get_attribute("aria-valuenow")) > 2800
    assert llm.requests_for(AUX_MODEL) == []
    readme_shot(page, "token-bar-over-threshold")

    llm.aux_delay = 2.0  # long enough to watch the animation
    _send(page, "好，开始拆分吧。")
    expect(page.locator("#compaction-pending .event-text")).to_have_text("正在压缩上下文...")
    # for how long, and what for (issue 16 item 7)
    expect(page.locator("#compaction-pending")).to_contain_text(
        "e2e-aux-model (E2E summarizer) 正在撰写摘要"
    )
    expect(page.locator("#compaction-flag")).to_have_attribute("data-compacting", "true")
    expect(page.locator("#meter-status .status-compacting")).to_be_visible()
    expect(page.locator("#meter-status .status-numbers")).to_be_hidden()
    readme_shot(page, "compacting", docs="chat-compacting")

    done = _done_bubble(page)
    expect(done).to_have_text(DONE_TEXT)
    expect(done).to_have_count(1)
    expect(page.locator("#compaction-pending")).to_have_count(0)
    expect(page.locator("#compaction-flag")).to_have_attribute("data-compacting", "false")
    expect(page.locator("#meter-status .status-numbers")).to_contain_text("已压缩 1 次")
    last_answer = page.locator("#messages article[data-role=assistant]").last
    expect(last_answer).to_contain_text("好，开始拆分吧")
    expect(bar).to_have_attribute("data-state", "ok")
    expect(page.locator("#turn-status")).to_have_attribute("data-busy", "false")
    readme_shot(page, "compaction-done", docs="chat-compaction-done")
    aux = llm.requests_for(AUX_MODEL)
    assert len(aux) == 1 and GOAL in _decoded(aux[0].body)
    # the answer was asked for after the compaction, with the summary in its context
    assert "[CONTEXT COMPACTION]" in _decoded(llm.requests_for(MAIN_MODEL)[-1].body)


def test_goal_and_file_paths_reach_the_model_after_compaction(
    page: Page, data, daphne_url, llm
) -> None:
    user, agent = _setup(data)
    session = _seeded_session(data, user, agent, turns=5)
    data.login(page.context, user, daphne_url)
    open_chat(page, session)
    _send(page, "/compact")
    expect(_done_bubble(page)).to_have_text(DONE_TEXT)
    _send(page, "我们的目标是什么？改哪些文件？")
    expect(page.locator("#messages article[data-role=assistant]").last).to_contain_text(
        "我们的目标是什么"
    )
    after = llm.requests_for(MAIN_MODEL)[-1].body
    sent = _decoded(after)
    assert GOAL in sent
    for path in PATHS:
        assert path in sent, path
    goal_message = session.messages.get(content__startswith="目标：").content
    assert goal_message not in sent  # the turn itself was compacted away: only the summary
    assert "[CONTEXT COMPACTION]" in sent


def test_manual_compact_from_the_input_and_the_button(
    page: Page, data, daphne_url, llm, readme_shot
) -> None:
    user, agent = _setup(data)
    session = _seeded_session(data, user, agent, turns=8, chars=300)  # far below the threshold
    data.login(page.context, user, daphne_url)
    sent = record_frames(page)
    open_chat(page, session)
    llm.aux_delay = 0.8
    _send(page, "/compact 重点保留文件路径")
    expect(page.locator("#compaction-pending")).to_be_visible()
    expect(_done_bubble(page)).to_have_count(1)
    expect(_done_bubble(page)).to_have_text(DONE_TEXT)
    assert without_headers(sent[0]) == {
        "type": "compact",
        "sessionId": str(session.pk),
        "instructions": "重点保留文件路径",
    }
    assert "重点保留文件路径" in _decoded(llm.requests_for(AUX_MODEL)[0].body)
    assert llm.requests_for(MAIN_MODEL) == []  # never through the chat model

    _done_bubble(page).get_by_role("link", name="查看摘要").click()
    dialog = page.get_by_role("dialog", name="压缩摘要")
    expect(dialog).to_contain_text(GOAL)
    expect(dialog.locator("li", has_text="src/app/config.py")).to_be_visible()
    readme_shot(page, "summary-drawer-live", docs="summary-drawer")
    page.keyboard.press("Escape")

    for _ in range(3):  # enough new messages for a second compaction
        _send(page, "继续下一步，顺便说明理由，越详细越好。" * 8)
        expect(page.locator("#turn-status")).to_have_attribute("data-busy", "false")
    page.get_by_role("button", name="/compact").click()
    expect(_done_bubble(page)).to_have_count(2)
    expect(page.locator("#meter-status")).to_contain_text("已压缩 2 次")
    # the stored bubbles look the same after a reload
    live = [t.strip() for t in _done_bubble(page).all_inner_texts()]
    page.reload()
    expect(_done_bubble(page)).to_have_count(2)
    assert [t.strip() for t in _done_bubble(page).all_inner_texts()] == live


def test_views_after_a_live_compaction(page: Page, data, daphne_url, llm, readme_shot) -> None:
    user, agent = _setup(data)
    session = _seeded_session(data, user, agent, turns=8, chars=300)
    data.login(page.context, user, daphne_url)
    open_chat(page, session)
    _send(page, "/compact")
    expect(_done_bubble(page)).to_have_count(1)
    page.reload()
    compacted_count = page.locator("#messages article").count()
    page.get_by_role("group", name="历史视图").get_by_role("link", name="完整").click()
    expect(page.locator(".history-banner")).to_contain_text("当前显示完整历史（含已压缩消息）")
    expect(page.locator("#messages article.is-compacted").first).to_be_visible()
    assert page.locator("#messages article").count() > compacted_count
    readme_shot(page, "full-history-after-compaction", docs="full-history-view")
    page.get_by_role("link", name="切换回压缩视图").click()
    expect(page.locator(".history-banner")).to_have_count(0)
    expect(page.locator("#messages article")).to_have_count(compacted_count)


def test_invalid_auxiliary_channel_shows_the_failure_bubble(page: Page, data, daphne_url) -> None:
    user, agent = _setup(data, aux=False)
    broken = data.aux_channel(name="坏掉的辅助渠道", base_url="http://127.0.0.1:9/v1")
    agent.auxiliary_model_channel = broken
    agent.save()
    session = _seeded_session(data, user, agent, turns=8, chars=300)
    data.login(page.context, user, daphne_url)
    open_chat(page, session)
    _send(page, "/compact")
    failed = _failed_bubble(page)
    expect(failed).to_contain_text("压缩失败：")
    expect(failed).to_contain_text("可继续原对话或")
    expect(page.locator("#compaction-flag")).to_have_attribute("data-compacting", "false")
    failed.get_by_role("link", name="开新对话").click()
    # a new chat with the same agent, stored with its first message (issue 16)
    expect(page).to_have_url(re.compile(rf"/chat/new/\?from_session={session.pk}$"))
    expect(page.locator("#chat")).to_have_attribute("data-ws", "open")  # chat.js is bound
    _send(page, "重新开始")
    expect(page).to_have_url(re.compile(r"/chat/[0-9a-f-]{36}/$"))
    newest = ChatSession.objects.filter(owner=user).order_by("-created_at").first()
    assert newest.pk != session.pk and newest.agent_id == agent.pk
    expect(page).to_have_url(re.compile(rf"/chat/{newest.pk}/$"))
    # the new chat's turn ends before the test does (its writes raced the teardown's flush)
    expect(page.locator("#messages article[data-role=assistant]")).to_have_count(1)
    expect(page.locator("#turn-status")).to_have_attribute("data-busy", "false")


def test_no_auxiliary_model_configured(page: Page, data, daphne_url) -> None:
    user, agent = _setup(data, aux=False)
    session = _seeded_session(data, user, agent, turns=8, chars=300)
    data.login(page.context, user, daphne_url)
    open_chat(page, session)
    _send(page, "/compact")
    failed = _failed_bubble(page)
    expect(failed).to_contain_text("压缩失败：")
    expect(failed).to_contain_text("请在 Agent 页面选择辅助模型，或设置全局默认辅助模型。")


def test_auxiliary_out_of_credit_fails_and_the_chat_goes_on(
    page: Page, data, daphne_url, llm, readme_shot
) -> None:
    user, agent = _setup(data)
    session = _seeded_session(data, user, agent, turns=6, chars=1100)  # over the threshold
    data.login(page.context, user, daphne_url)
    open_chat(page, session)
    expect(page.get_by_role("progressbar")).not_to_have_attribute("data-state", "ok")
    llm.queue_aux(failing(402, "Insufficient balance: please top up"))
    _send(page, "还在吗？请继续。")
    # in the page's language, with the provider's own words kept
    expect(_failed_bubble(page)).to_contain_text(
        "压缩失败：模型服务商拒绝了请求（HTTP 402）：Insufficient balance: please top up 可继续原对话或"
    )
    # the turn goes on with the original context
    expect(page.locator("#messages article[data-role=assistant]").last).to_contain_text("还在吗")
    expect(page.locator("#turn-status")).to_have_attribute("data-busy", "false")
    readme_shot(page, "compaction-failed", docs="chat-compaction-failed")
    assert len(llm.requests_for(MAIN_MODEL)) >= 1


def test_a_message_typed_during_compaction_is_queued_and_answered(
    page: Page, data, daphne_url, llm
) -> None:
    user, agent = _setup(data)
    session = _seeded_session(data, user, agent, turns=8, chars=300)
    data.login(page.context, user, daphne_url)
    open_chat(page, session)
    llm.aux_delay = 2.5
    _send(page, "/compact")
    expect(page.locator("#compaction-pending")).to_be_visible()
    _send(page, "压缩期间发的消息")
    expect(page.get_by_label("输入消息")).to_have_value("")
    page.wait_for_timeout(500)
    assert llm.requests_for(MAIN_MODEL) == []  # waiting behind the compaction
    expect(_done_bubble(page)).to_have_count(1)
    answer = page.locator("#messages article[data-role=assistant]").last
    expect(answer).to_contain_text("压缩期间发的消息")
    order = page.evaluate(
        """() => [...document.querySelectorAll('#messages > *')].map(e =>
               e.dataset.event || e.dataset.role)"""
    )
    # the queued message may be stored on arrival or when its turn starts; either way it
    # is answered only after the compaction, in the compacted context
    assert sorted(order[-3:]) == ["assistant", "compaction_done", "user"]
    assert order[-1] == "assistant"
    answered = llm.requests_for(MAIN_MODEL)[0].body
    assert "[CONTEXT COMPACTION]" in _decoded(answered)
    assert "压缩期间发的消息" in _decoded(answered)


def test_the_live_chat_in_english(page: Page, data, daphne_url, llm, readme_shot) -> None:
    user, agent = _setup(data)
    session = _seeded_session(data, user, agent, turns=8, chars=300)
    data.login(page.context, user, daphne_url)
    page.context.add_cookies([{"name": "django_language", "value": "en", "url": daphne_url}])
    page.goto(f"/chat/{session.pk}/")
    expect(page.locator("#ws-status")).to_have_text("Connected")
    box = page.get_by_label("Message", exact=True)
    box.fill("/compact")
    box.press("Enter")
    expect(_done_bubble(page)).to_have_text(
        re.compile(r"Context compacted · removed \d+ messages? · saved \d+% tokens")
    )
    expect(page.locator("#meter-status")).to_contain_text("compacted 1 time")
    readme_shot(page, "english-compaction-done")
