"""Pages in the browser: log-in, language switch, history views, drawer, paging."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from agents.services import compaction_apply, message_append
from tests.e2e.support import conversation


def _compacted_session(data, owner, agent):
    session = data.session(
        owner=owner,
        agent=agent,
        title="重构 src/app/main.py",
        rows=conversation(4, chars=120, goal="拆分 src/app/main.py", paths=["src/app/main.py"]),
    )
    messages = list(session.messages.order_by("position"))
    applied = compaction_apply(
        session=session,
        compacted_ids=[m.pk for m in messages[1:5]],
        pruned_ids=[],
        summary_content="## 目标\n拆分 src/app/main.py\n## 相关文件\n- src/app/main.py\n- tests/test_main.py",
        pruned_token_estimate=0,
        event_content="上下文已压缩",
        event_payload={
            "status": "done",
            "removedCount": 4,
            "tokensBefore": 900,
            "tokensAfter": 300,
        },
    )
    message_append(
        session=session, role="assistant", content="继续：我已经写好了 `tests/test_main.py`。"
    )
    return session, applied


def test_login_form_and_language_switch(page: Page, data, daphne_url, shots) -> None:
    user = data.user("alice")
    user.set_password("a-long-test-password-1")
    user.save()
    page.goto("/chat/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/chat/"))
    page.get_by_label("用户名").fill(user.username)
    page.get_by_label("密码").fill("a-long-test-password-1")
    page.get_by_role("button", name="登录").click()
    expect(page).to_have_url(re.compile(r"/chat/$"))
    expect(page.get_by_role("heading", name="对话")).to_be_visible()
    page.get_by_label("语言").select_option("en")
    expect(page.get_by_role("heading", name="Chats")).to_be_visible()
    expect(page.get_by_role("button", name="New chat")).to_be_visible()
    page.get_by_label("Language").select_option("zh-hans")
    expect(page.get_by_role("button", name="新对话")).to_be_visible()


def test_full_and_compacted_views(page: Page, data, daphne_url, shots) -> None:
    user = data.user("views")
    agent = data.agent(model_channel=data.channel())
    session, _ = _compacted_session(data, user, agent)
    data.login(page.context, user, daphne_url)
    page.goto(f"/chat/{session.pk}/")
    messages = page.locator("#messages")
    expect(messages.locator("article.is-compacted")).to_have_count(0)
    expect(page.locator(".history-banner")).to_have_count(0)
    # the sidebar's full/compacted toggle of this compacted session
    page.locator(f'.session-item a.view-toggle[href="/chat/{session.pk}/?view=full"]').click()
    expect(page).to_have_url(re.compile(r"\?view=full$"))
    banner = page.get_by_role("status").filter(has_text="当前显示完整历史（含已压缩消息）")
    expect(banner).to_be_visible()
    expect(messages.locator("article.is-compacted")).to_have_count(4)
    page.screenshot(path=shots / "full-history-view.png", animations="disabled")
    banner.get_by_role("link", name="切换回压缩视图").click()
    expect(page).to_have_url(re.compile(rf"/chat/{session.pk}/$"))
    expect(messages.locator("article.is-compacted")).to_have_count(0)
    expect(page.locator(".history-banner")).to_have_count(0)


def test_summary_drawer_opens_and_closes(page: Page, data, daphne_url, shots) -> None:
    user = data.user("drawer")
    agent = data.agent(model_channel=data.channel())
    session, applied = _compacted_session(data, user, agent)
    data.login(page.context, user, daphne_url)
    page.goto(f"/chat/{session.pk}/")
    bubble = page.locator('[data-event="compaction_done"]')
    expect(bubble).to_contain_text("上下文已压缩 · 移除 4 条消息 · 节省 67% token")
    bubble.get_by_role("link", name="查看摘要").click()
    dialog = page.get_by_role("dialog", name="压缩摘要")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_role("heading", name="相关文件")).to_be_visible()
    expect(dialog.locator("li", has_text="tests/test_main.py")).to_be_visible()
    expect(dialog).to_be_focused()
    page.screenshot(path=shots / "summary-drawer.png", animations="disabled")
    page.keyboard.press("Escape")
    expect(page.get_by_role("dialog")).to_have_count(0)
    page.get_by_role("link", name="查看摘要").first.click()
    expect(page.get_by_role("dialog")).to_be_visible()
    page.get_by_role("dialog").get_by_role("button", name="关闭").click()
    expect(page.get_by_role("dialog")).to_have_count(0)


def test_long_history_loads_earlier_pages(page: Page, data, daphne_url) -> None:
    user = data.user("paging")
    agent = data.agent(model_channel=data.channel())
    rows = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"消息 {i}"} for i in range(260)
    ]
    session = data.session(owner=user, agent=agent, title="长对话", rows=rows)
    data.login(page.context, user, daphne_url)
    page.goto(f"/chat/{session.pk}/")
    articles = page.locator("#messages article")
    expect(articles).to_have_count(100)
    expect(articles.last).to_contain_text("消息 259")
    page.get_by_role("button", name="加载更早的消息").click()
    expect(articles).to_have_count(200)
    page.get_by_role("button", name="加载更早的消息").click()
    expect(articles).to_have_count(260)
    expect(articles.first).to_contain_text("消息 0")
    expect(page.get_by_role("button", name="加载更早的消息")).to_have_count(0)


def test_agent_page_compaction_settings(page: Page, data, daphne_url, shots) -> None:
    staff = data.user("staff", staff=True)
    aux = data.aux_channel(name="摘要模型")
    agent = data.agent(name="配置测试", model_channel=data.channel())
    data.login(page.context, staff, daphne_url)
    page.goto(f"/agents/{agent.pk}/")
    section = page.get_by_role("group", name="上下文压缩")
    expect(section).to_be_visible()
    expect(section.get_by_text("更多策略开发中")).to_be_visible()
    slider = section.get_by_label("触发阈值")
    expect(slider).to_have_value("70")
    slider.fill("85")
    expect(section.locator("output")).to_have_text("85%")
    section.get_by_label("辅助模型").select_option(label=str(aux))
    section.get_by_label("保护头部").fill("5")
    page.screenshot(
        path=shots / "agent-compaction-settings.png", full_page=True, animations="disabled"
    )
    page.get_by_role("button", name="保存").click()
    expect(page.get_by_text("Agent 已保存。")).to_be_visible()
    agent.refresh_from_db()
    assert (agent.compaction_threshold_percent, agent.compaction_protect_first_n) == (85, 5)
    assert agent.auxiliary_model_channel == aux


def test_channel_page_write_only_key(page: Page, data, daphne_url) -> None:
    staff = data.user("keys", staff=True)
    data.login(page.context, staff, daphne_url)
    page.goto("/channels/new/")
    page.get_by_label("名称").fill("本地 Ollama")
    page.get_by_label("提供商").select_option("openai_compatible")
    page.get_by_label("模型", exact=True).fill("qwen2.5:7b")
    page.get_by_role("button", name="保存").click()
    expect(page.get_by_text("OpenAI 兼容渠道必须填写 Base URL")).to_be_visible()
    page.get_by_label("Base URL").fill("http://127.0.0.1:11434/v1")
    page.get_by_label("API Key", exact=True).fill("sk-secret-e2e-value")
    page.get_by_label("可作为辅助模型").check()
    page.get_by_role("button", name="保存").click()
    expect(page.get_by_text("模型渠道已创建。")).to_be_visible()
    expect(page.locator('[data-key-state="set"]')).to_be_visible()
    assert "sk-secret-e2e-value" not in page.content()
    expect(page.get_by_label("API Key", exact=True)).to_have_value("")


def test_slash_command_parser(page: Page, data, daphne_url) -> None:
    user = data.user("parser")
    session = data.session(owner=user, agent=data.agent(model_channel=data.channel()))
    data.login(page.context, user, daphne_url)
    page.goto(f"/chat/{session.pk}/")
    parse = "raw => window.NetaClaw.parseSlashCommand(raw)"
    assert page.evaluate(parse, "/compact") == {
        "kind": "command",
        "name": "compact",
        "frame": {"type": "compact"},
    }
    assert page.evaluate(parse, "  /compact 保留文件路径  ")["frame"] == {
        "type": "compact",
        "instructions": "保留文件路径",
    }
    assert page.evaluate(parse, "/COMPACT")["name"] == "compact"
    assert page.evaluate(parse, "/help") == {"kind": "unknown", "name": "/help"}
    assert page.evaluate(parse, "/usr/bin/python 报错了")["kind"] == "text"
    assert page.evaluate(parse, "hello /compact")["kind"] == "text"
