"""The chat page's socket: what the page sends, and what it shows of the server's answer."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.support.chat_page import open_chat, record_frames, without_headers


def test_chat_without_a_model_channel_says_how_to_add_one(
    page: Page, data, daphne_url, shots
) -> None:
    user = data.user("nochannel")
    session = data.session(owner=user, agent=data.agent(name="未配置的助手"))
    data.login(page.context, user, daphne_url)
    sent = record_frames(page)
    open_chat(page, session)
    expect(page.locator('[data-help="no-model-channel"]')).to_contain_text(
        "http://127.0.0.1:11434/v1"
    )
    # nothing can be sent that the agent could not answer (issue 16 item 9): a message
    # stored now would go to the model later beside the next one, as a second user turn
    expect(page.get_by_label("输入消息")).to_be_disabled()
    expect(page.get_by_role("button", name="发送")).to_be_disabled()
    expect(page.locator("#composer-disabled")).to_contain_text("暂时不能发送消息")
    page.wait_for_timeout(200)
    assert sent == []
    page.screenshot(path=shots / "no-model-channel.png", animations="disabled")


def test_unknown_slash_command_shows_a_hint_and_sends_nothing(page: Page, data, daphne_url) -> None:
    user = data.user("slash")
    session = data.session(owner=user, agent=data.agent(model_channel=data.channel()))
    data.login(page.context, user, daphne_url)
    sent = record_frames(page)
    open_chat(page, session)
    box = page.get_by_label("输入消息")
    box.fill("/frobnicate now")
    box.press("Enter")
    hint = page.locator("#slash-hint")
    expect(hint).to_be_visible()
    expect(hint).to_have_text("未知命令 /frobnicate。可用命令：/compact [重点]")
    expect(box).to_have_value("/frobnicate now")
    page.wait_for_timeout(300)
    assert sent == []
    expect(page.locator("#messages article")).to_have_count(0)
    box.fill("/frobnicate")  # typing hides the hint
    expect(hint).to_be_hidden()


def test_compact_frames_from_the_input_and_the_button(page: Page, data, daphne_url) -> None:
    user = data.user("frames")
    session = data.session(owner=user, agent=data.agent(model_channel=data.channel()))
    data.login(page.context, user, daphne_url)
    sent = record_frames(page)
    open_chat(page, session)
    box = page.get_by_label("输入消息")
    box.fill("/compact 保留所有文件路径")
    box.press("Enter")
    expect(box).to_have_value("")
    page.get_by_role("button", name="/compact").click()
    page.wait_for_timeout(300)
    sid = str(session.pk)
    assert [without_headers(f) for f in sent] == [
        {"type": "compact", "sessionId": sid, "instructions": "保留所有文件路径"},
        {"type": "compact", "sessionId": sid},
    ]
    expect(page.locator("#messages article")).to_have_count(0)  # nothing sent as chat


def test_shift_enter_makes_a_new_line(page: Page, data, daphne_url, llm) -> None:
    user = data.user("newline")
    session = data.session(owner=user, agent=data.agent(model_channel=data.channel()))
    data.login(page.context, user, daphne_url)
    sent = record_frames(page)
    open_chat(page, session)
    box = page.get_by_label("输入消息")
    box.fill("第一行")
    box.press("Shift+Enter")
    box.press_sequentially("第二行")
    expect(box).to_have_value("第一行\n第二行")
    page.get_by_role("button", name="发送").click()
    expect(page.locator("#messages article[data-role=user]")).to_contain_text("第二行")
    assert without_headers(sent[0])["content"] == "第一行\n第二行"
