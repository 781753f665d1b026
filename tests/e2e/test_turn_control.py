"""Issue 14 in Chromium: the Stop button (and Esc) while the agent works, a message sent
meanwhile as a queued chip under the running turn, and Retry on a failed turn."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("agents.runtime", reason="the agent runtime has not landed yet")
from playwright.sync_api import Page, expect

from agents.models import Message
from agents.selectors import history_load
from scripted_llm import Fail, Reply
from tests.e2e.support import conversation
from tests.support.chat_page import open_chat, record_frames, without_headers

LONG = "".join(f"第{i}句，慢慢地写出来。" for i in range(200))


def _send(page: Page, text: str) -> None:
    box = page.get_by_label("输入消息")
    box.fill(text)
    box.press("Enter")


def _history(session: Any) -> list[tuple[str, str]]:
    return [
        (m.role, m.content)
        for m in history_load(session=session, view="full")
        if not m.is_system_event
    ]


def test_stop_button_ends_a_streaming_answer_and_keeps_it(
    page: Page, data, daphne_url, llm, readme_shot
) -> None:
    user = data.user("stop")
    session = data.session(owner=user, agent=data.agent(model_channel=data.channel()))
    data.login(page.context, user, daphne_url)
    frames = record_frames(page)
    open_chat(page, session)
    stop = page.get_by_role("button", name="停止", exact=True)
    expect(stop).to_be_hidden()  # nothing runs
    llm.queue_main(Reply(text=LONG, chunk_size=4, delay_per_chunk=0.1))
    _send(page, "写一篇长文")
    expect(page.locator("#stream-text")).to_contain_text("第1句")
    expect(stop).to_be_visible()
    readme_shot(page, "chat-stop-button")
    stop.click()
    expect(page.locator("#turn-status")).to_have_attribute("data-busy", "false")
    expect(stop).to_be_hidden()
    answer = page.locator("#messages article[data-role=assistant]")
    expect(answer).to_have_count(1)
    expect(answer.locator("[data-stopped]")).to_have_text("已停止")
    expect(page.locator('#messages [data-event="turn_stopped"]')).to_be_visible()
    assert without_headers(frames[-1]) == {"type": "stop", "sessionId": str(session.pk)}
    (role, content), *_ = _history(session)[1:]
    assert role == "assistant" and content and LONG.startswith(content) and content != LONG

    # Esc stops too (the composer keeps the focus while the agent works)
    llm.queue_main(Reply(text=LONG, chunk_size=4, delay_per_chunk=0.1))
    _send(page, "再写一篇")
    expect(page.locator("#stream-text")).to_contain_text("第1句")
    page.get_by_label("输入消息").press("Escape")
    expect(page.locator('#messages [data-event="turn_stopped"]')).to_have_count(2)
    expect(stop).to_be_hidden()


def test_a_message_sent_while_the_agent_works_waits_as_a_chip(
    page: Page, data, daphne_url, llm, readme_shot
) -> None:
    user = data.user("queued")
    session = data.session(owner=user, agent=data.agent(model_channel=data.channel()))
    data.login(page.context, user, daphne_url)
    open_chat(page, session)
    llm.queue_main(
        Reply(text=LONG[:400], chunk_size=4, delay_per_chunk=0.08), Reply(text="第二个回答。")
    )
    _send(page, "第一个问题")
    expect(page.locator("#stream-text")).to_contain_text("第1句")
    box = page.get_by_label("输入消息")
    expect(box).to_be_editable()  # the composer stays usable
    _send(page, "顺便再问一句")
    chip = page.locator("#queued .queued-chip")
    expect(chip).to_have_count(1)
    expect(chip).to_contain_text("排队中")
    expect(chip).to_contain_text("顺便再问一句")
    assert page.locator("#messages").inner_text().count("顺便再问一句") == 0
    readme_shot(page, "chat-queued-chip", docs="chat-queued-chip")
    # the first answer ends, the queued message moves into the history and is answered
    expect(page.locator("#messages article[data-role=assistant]")).to_have_count(2)
    expect(chip).to_have_count(0)
    users = page.locator("#messages article[data-role=user]")
    expect(users).to_have_count(2)
    expect(users.last).to_contain_text("顺便再问一句")
    assert [r for r, _ in _history(session)] == ["user", "assistant", "user", "assistant"]
    assert _history(session)[2] == ("user", "顺便再问一句")

    # after a reload the history is in that order, and no chip is left
    page.reload()
    expect(page.locator("#messages article")).to_have_count(4)
    expect(page.locator("#queued .queued-chip")).to_have_count(0)


def test_a_failed_turn_stays_on_the_page_and_retry_answers(
    page: Page, data, daphne_url, llm, readme_shot
) -> None:
    user = data.user("retry")
    channel = data.channel(name="E2E 主模型")
    session = data.session(
        owner=user, agent=data.agent(model_channel=channel), rows=conversation(1, chars=40)
    )
    data.login(page.context, user, daphne_url)
    frames = record_frames(page)
    open_chat(page, session)
    llm.queue_main(Fail(status=503, body={"error": {"message": "overloaded"}}, should_retry=False))
    _send(page, "你好")
    bubble = page.locator('#messages [data-event="turn_failed"]')
    expect(bubble).to_contain_text("Agent 未能回答")
    expect(bubble).to_contain_text("HTTP 503")
    expect(bubble).to_contain_text("请检查模型渠道“E2E 主模型”")
    expect(page.locator("#turn-status")).to_have_attribute("data-busy", "false")
    readme_shot(page, "chat-turn-failed", docs="chat-turn-failed")

    # a reload keeps it, with its Retry
    page.reload()
    expect(page.locator("#ws-status")).to_have_text("已连接")
    retry = bubble.get_by_role("button", name="重试")
    expect(retry).to_be_visible()
    llm.queue_main(Reply(text="这次成功了。"))
    retry.click()
    answer = page.locator("#messages article[data-role=assistant] .bubble").last
    expect(answer).to_have_text("这次成功了。")
    expect(retry).to_be_hidden()  # the failed turn has been answered
    assert without_headers(frames[-1]) == {"type": "retry", "sessionId": str(session.pk)}
    assert Message.objects.filter(session=session, metadata__systemType="turn_event").count() == 1
    assert _history(session)[-2:] == [("user", "你好"), ("assistant", "这次成功了。")]
