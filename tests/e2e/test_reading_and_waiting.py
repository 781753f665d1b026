"""Issue 16 items 6, 7 and 8 in Chromium: code blocks highlighted on the server with their
language and a copy button, a copy button on answers, Markdown while an answer streams;
elapsed time and what the page waits for; a warning, with the way out, when the context is
over the model's window."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.support.event_records import system_event_append

pytest.importorskip("agents.runtime", reason="the agent runtime has not landed yet")
from playwright.sync_api import Page, expect

from agents.models import ChatSession
from agents.services import (
    compaction_apply,
    message_append,
    session_record_usage,
)
from compaction.trigger import PAUSED_STILL_OVER
from scripted_llm import Reply
from tests.e2e.support import conversation
from tests.support.chat_page import open_chat, record_frames, without_headers

CODE = 'def greet(name: str) -> str:\n    return f"hello {name}"\n'
ANSWER = f"可以这样写：\n\n```python\n{CODE}```\n\n然后运行 `pytest -q`。"
KEYWORD_RED = "rgb(255, 123, 114)"  # github-dark's keyword colour, from app.css


def _send(page: Page, text: str) -> None:
    box = page.get_by_label("输入消息")
    box.fill(text)
    box.press("Enter")


def _clipboard(page: Page) -> str:
    return page.evaluate("() => navigator.clipboard.readText()")


def test_code_blocks_are_highlighted_labelled_and_copyable(
    page: Page, data, daphne_url, readme_shot
) -> None:
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=daphne_url)
    user = data.user("code")
    session = data.session(owner=user, agent=data.agent(model_channel=data.channel()))
    message_append(session=session, role="user", content="怎么写一个问候函数？")
    message_append(session=session, role="assistant", content=ANSWER)
    data.login(page.context, user, daphne_url)
    open_chat(page, session)

    answer = page.locator("#messages article[data-role=assistant]")
    block = answer.locator(".codeblock")
    expect(block.locator(".codeblock-lang")).to_have_text("Python")
    keyword = block.locator("pre code span.k").first
    expect(keyword).to_have_text("def")
    assert keyword.evaluate("e => getComputedStyle(e).color") == KEYWORD_RED
    expect(block.locator("pre code")).to_have_text(CODE)
    readme_shot(page, "code-block", docs="chat-code-block")

    copy_code = block.get_by_role("button", name="复制")
    copy_code.click()
    expect(copy_code).to_have_text("已复制")
    assert _clipboard(page) == CODE
    expect(copy_code).to_have_text("复制", timeout=4000)

    copy_answer = answer.locator(".msg-tools").get_by_role("button", name="复制")
    copy_answer.click()
    expect(copy_answer).to_have_text("已复制")
    assert _clipboard(page) == ANSWER  # the Markdown, as the model wrote it


def test_an_answer_is_markdown_while_it_streams(page: Page, data, daphne_url, llm) -> None:
    """No raw ``**`` or fences while streaming, then the stored answer in the same markup."""
    user = data.user("stream")
    session = data.session(owner=user, agent=data.agent(model_channel=data.channel()))
    data.login(page.context, user, daphne_url)
    open_chat(page, session)
    page.evaluate(
        """() => {
          window.__previews = [];
          new MutationObserver(() => {
            const s = document.getElementById("stream-text");
            if (s && s.innerHTML) window.__previews.push(s.innerHTML);
          }).observe(document.getElementById("stream-bubble"), {subtree: true, childList: true});
        }"""
    )
    text = "## 计划\n\n**第一步**：读代码。\n\n```python\nprint('hi')\n```\n\n" + "".join(
        f"- 第 {i} 项\n" for i in range(40)
    )
    llm.queue_main(Reply(text=text, chunk_size=6, delay_per_chunk=0.04))
    _send(page, "给个计划")
    stream = page.locator("#stream-text")
    expect(stream.locator("h2")).to_have_text("计划")
    expect(stream.locator("strong")).to_have_text("第一步")
    expect(stream.locator(".codeblock .codeblock-lang")).to_have_text("Python")
    assert "**" not in stream.inner_text() and "```" not in stream.inner_text()
    expect(page.locator("#messages article[data-role=assistant]")).to_have_count(1)
    expect(stream).to_be_empty()
    final = page.locator("#messages article[data-role=assistant] .bubble.md")
    expect(final.locator("li")).to_have_count(40)
    previews = page.evaluate("() => window.__previews")
    # re-rendered at a bounded rate, not once per delta, and never as raw Markdown
    deltas = len(text) // 6
    assert 3 <= len(previews) < deltas, (len(previews), deltas)
    assert all("**" not in p and "```" not in p for p in previews)
    final_html = final.inner_html()
    assert final_html.startswith(previews[-1][:200])  # the same markup: nothing jumps


def test_waiting_shows_elapsed_time_and_what_for(page: Page, data, daphne_url, llm) -> None:
    user = data.user("waiting")
    channel = data.channel(name="主通道")
    auxiliary = data.aux_channel()
    agent = data.agent(model_channel=channel, auxiliary_model_channel=auxiliary)
    session = data.session(owner=user, agent=agent, rows=conversation(8, chars=300))
    data.login(page.context, user, daphne_url)
    open_chat(page, session)
    page.evaluate("() => { document.getElementById('chat').dataset.slowSeconds = '2'; }")

    llm.queue_main(Reply(text="好的。", delay=3.5))
    _send(page, "慢慢想")
    status = page.locator("#turn-status")
    expect(status).to_be_visible()
    expect(status).to_contain_text("思考中…")
    expect(status).to_contain_text("等待 e2e-main-model (主通道) 回答")
    expect(status.locator("[data-elapsed-for=turn]")).to_have_text(re.compile(r"^[01] 秒$"))
    expect(status.locator("[data-wait-slow=turn]")).to_be_hidden()  # not slow yet
    expect(status.locator("[data-elapsed-for=turn]")).to_have_text(re.compile(r"^[2-9] 秒$"))
    expect(status.locator("[data-wait-slow=turn]")).to_be_visible()
    expect(status.locator("[data-wait-slow=turn]")).to_contain_text("点「停止」可结束等待")
    expect(status).to_have_attribute("data-busy", "false", timeout=15_000)

    # a reload during a turn keeps counting from when the message was sent
    llm.queue_main(Reply(text="好的。", delay=4))
    _send(page, "再想想")
    expect(status).to_have_attribute("data-busy", "true")
    page.wait_for_timeout(2200)
    open_chat(page, session)
    elapsed = page.locator("#turn-status [data-elapsed-for=turn]")
    expect(elapsed).to_have_text(re.compile(r"^[2-9] 秒$"))
    expect(page.locator("#turn-status")).to_have_attribute("data-busy", "false", timeout=15_000)

    llm.aux_delay = 3.0
    _send(page, "/compact")
    pending = page.locator("#compaction-pending")
    expect(pending).to_contain_text("正在压缩上下文...")
    expect(pending).to_contain_text("e2e-aux-model (E2E summarizer) 正在撰写摘要")
    expect(pending.locator("[data-elapsed-for=compaction]")).to_have_text(re.compile(r"^[1-9] 秒$"))
    expect(page.locator("#meter-status .status-compacting")).to_contain_text(re.compile(r"\d 秒"))
    expect(pending).to_have_count(0, timeout=15_000)


def _overflowing(data: Any, user: Any) -> ChatSession:
    agent = data.agent(model_channel=data.channel(context_window=4000))
    session = data.session(owner=user, agent=agent, title="超长", rows=conversation(2, chars=80))
    reply = message_append(session=session, role="assistant", content="好的。")
    session_record_usage(
        session=session, input_tokens=9440, output_tokens=1, input_position=reply.position
    )
    ChatSession.objects.filter(pk=session.pk).update(
        auto_compaction_paused_reason=PAUSED_STILL_OVER
    )
    return session


@pytest.mark.parametrize("width", [1280, 390], ids=["desktop", "phone"])
def test_over_the_window_says_the_next_request_will_fail(
    page: Page, data, daphne_url, readme_shot, width
) -> None:
    page.set_viewport_size({"width": width, "height": 820})
    user = data.user("overflow")
    session = _overflowing(data, user)
    data.login(page.context, user, daphne_url)
    frames = record_frames(page)
    open_chat(page, session)
    alert = page.get_by_test_id("over-window")
    expect(alert).to_be_visible()
    expect(alert).to_have_attribute("role", "alert")
    expect(alert).to_contain_text("上下文已达模型窗口的 236%：下一条消息很可能会被拒绝。")
    expect(alert).to_contain_text("自动压缩已暂停：请立即压缩，或与此 Agent 开始新对话。")
    new_chat = alert.get_by_role("link", name="新对话")
    expect(new_chat).to_have_attribute("href", f"/chat/new/?from_session={session.pk}")
    if width == 390:
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
        readme_shot(page, "phone-over-window")
    else:
        readme_shot(page, "over-window", docs="chat-over-window")
    alert.get_by_role("button", name="立即压缩").click()
    for _ in range(50):
        if frames:
            break
        page.wait_for_timeout(100)
    assert without_headers(frames[-1]) == {"type": "compact", "sessionId": str(session.pk)}
    # no auxiliary model here: the failure says where to fix it, and the chat goes on
    expect(page.locator('#messages [data-event="compaction_failed"]')).to_be_visible()


def test_bubble_actions_have_no_brackets_and_the_composer_is_one_tab_away(
    page: Page, data, daphne_url
) -> None:
    """Issue 16 item 9: "[View summary]" and "[start a new chat]" were drawn with literal
    brackets; the composer came after every message in tab order."""
    user = data.user("small")
    session = data.session(
        owner=user, agent=data.agent(model_channel=data.channel()), rows=conversation(3)
    )
    messages = list(session.messages.order_by("position"))
    compaction_apply(
        session=session,
        compacted_ids=[m.pk for m in messages[1:4]],
        pruned_ids=[],
        summary_content="## 目标\n拆分模块",
        pruned_token_estimate=0,
        event_content="上下文已压缩",
        event_payload={
            "status": "done",
            "removedCount": 3,
            "tokensBefore": 900,
            "tokensAfter": 300,
        },
    )
    system_event_append(
        session=session,
        system_type="compaction_event",
        content="压缩失败",
        payload={"status": "failed", "error": "辅助模型超时", "reason": "auxiliary_error"},
    )
    data.login(page.context, user, daphne_url)
    open_chat(page, session)
    for action in (
        page.locator('[data-event="compaction_done"]').get_by_role("link", name="查看摘要"),
        page.get_by_role("link", name="开新对话"),
    ):
        expect(action).to_be_visible()
        assert action.evaluate("e => getComputedStyle(e, '::before').content") == "none"
        assert action.evaluate("e => getComputedStyle(e, '::after').content") == "none"
        assert "[" not in action.inner_text()
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="跳到输入框")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.get_by_label("输入消息")).to_be_focused()
