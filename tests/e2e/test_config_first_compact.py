"""Issue 16 items 1, 4 and 5 in a real browser: a fresh install reaches a successful first
/compact by the README's path (add a channel, tick "usable as auxiliary model", test it, pick
it on the agent's page) and by the pages' own hints (the failure bubble's link, the agent
page, "make default auxiliary model"); agents are created, edited and deleted in the app."""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import Page, expect

from agents.models import Agent, ChatSession
from system.dictionary import DEFAULT_AUXILIARY_CHANNEL, NETACLAW_TYPE_KEY, dict_value
from tests.e2e.support import AUX_MODEL, conversation
from tests.support.chat_page import open_chat

DONE_TEXT = re.compile(r"上下文已压缩 · 移除 \d+ 条消息 · 节省 \d+% token")


def _send(page: Page, text: str) -> None:
    box = page.get_by_label("输入消息")
    box.fill(text)
    box.press("Enter")


def _chat(data: Any, owner: Any, agent: Agent) -> ChatSession:
    rows = conversation(8, chars=300, goal="把 main.py 拆成模块", paths=["src/app/main.py"])
    return data.session(owner=owner, agent=agent, title="拆分 main.py", rows=rows)


def test_first_compact_by_the_readme_path(page: Page, data, daphne_url, llm, readme_shot) -> None:
    """Like `make run` with no key: a demo agent without a channel. Add the channel on the
    channel page with "usable as auxiliary model" ticked, test it, choose it on the agent
    page (which names the model compaction will use), and /compact works at once."""
    staff = data.user("first", staff=True)
    agent = data.agent(name="演示助手")
    session = _chat(data, staff, agent)
    llm.server.models = (AUX_MODEL, "another-model")
    data.login(page.context, staff, daphne_url)

    page.goto("/channels/")
    page.get_by_role("link", name="添加模型渠道").click()
    page.get_by_label("名称").fill("本地模型")
    page.get_by_label("提供商").select_option("openai_compatible")
    page.get_by_label("Base URL").fill(llm.base_url)
    page.get_by_label("模型", exact=True).fill(AUX_MODEL)
    page.get_by_label("上下文窗口（tokens）").fill("4000")
    page.get_by_label("可作为辅助模型").check()
    page.get_by_role("button", name="保存").click()
    expect(page.get_by_text("模型渠道已创建。")).to_be_visible()
    expect(page.get_by_text("「本地模型」现在是默认辅助模型")).to_be_visible()
    expect(page.locator('[data-window-source="channel"]')).to_contain_text("4,000 tokens")

    page.get_by_role("button", name="测试连接").click()
    result = page.locator("#channel-test-result")
    expect(result).to_have_attribute("data-test-outcome", "ok")
    expect(result).to_contain_text("服务器列出了 2 个模型。")
    expect(result).to_contain_text(f"其中包括「{AUX_MODEL}」。")
    assert [r.path for r in llm.server.requests] == ["/v1/models"]
    result.scroll_into_view_if_needed()
    readme_shot(page, "channel-test-connection", docs="channel-test-connection")

    page.goto("/agents/")
    page.get_by_role("link", name="编辑").click()
    compaction = page.locator("#compaction-model")
    expect(compaction).to_have_attribute("data-compaction-model", "default")
    expect(compaction).to_contain_text(f"压缩使用「本地模型」（{AUX_MODEL}）生成摘要")
    page.get_by_label("模型渠道").select_option(label=f"本地模型 (openai_compatible:{AUX_MODEL})")
    readme_shot(page, "agent-compaction-model", whole=True)
    page.get_by_role("button", name="保存").click()
    expect(page.get_by_text("Agent 已保存。")).to_be_visible()

    open_chat(page, session)
    _send(page, "/compact")
    expect(page.locator('#messages [data-event="compaction_done"]')).to_have_text(DONE_TEXT)
    assert llm.requests_for(AUX_MODEL)  # the summary came from the channel added above


def test_first_compact_by_the_pages_hints(page: Page, data, daphne_url, llm, readme_shot) -> None:
    """A channel that nobody marked auxiliary: the first /compact fails, its bubble links to
    the agent's compaction settings, which lead to the channel list, where "make default
    auxiliary model" fixes it; the second /compact works."""
    staff = data.user("hints", staff=True)
    channel = data.channel(name="本地模型", model=AUX_MODEL)
    agent = data.agent(name="演示助手", model_channel=channel)
    session = _chat(data, staff, agent)
    data.login(page.context, staff, daphne_url)
    open_chat(page, session)

    _send(page, "/compact")
    failed = page.locator('#messages [data-event="compaction_failed"]')
    expect(failed).to_contain_text("压缩失败：")
    failed.locator('[data-fix="auxiliary"]').click()
    expect(page).to_have_url(re.compile(rf"/agents/{agent.pk}/#compaction-settings$"))
    compaction = page.locator("#compaction-model")
    expect(compaction).to_have_attribute("data-compaction-model", "none")
    expect(compaction).to_contain_text("没有可用的辅助模型")
    readme_shot(page, "agent-no-auxiliary-model", docs="agent-no-auxiliary-model")
    compaction.get_by_role("link", name="选择默认辅助模型").click()

    expect(page).to_have_url(re.compile(r"/channels/$"))
    expect(page.locator('[data-help="no-default-auxiliary"]')).to_be_visible()
    readme_shot(page, "channel-list-no-default", whole=True)
    page.get_by_role("button", name="设为默认辅助模型：本地模型").click()
    expect(page.get_by_text("「本地模型」现在是默认辅助模型")).to_be_visible()
    expect(page.locator(f'tr[data-channel="{channel.pk}"]')).to_contain_text("全局默认辅助模型")
    assert dict_value(type_key=NETACLAW_TYPE_KEY, name=DEFAULT_AUXILIARY_CHANNEL) == str(channel.pk)

    open_chat(page, session)
    _send(page, "/compact")
    expect(page.locator('#messages [data-event="compaction_done"]')).to_have_text(DONE_TEXT)


def test_a_failing_connection_test_says_why(page: Page, data, daphne_url) -> None:
    staff = data.user("probe", staff=True)
    channel = data.channel(name="坏渠道", base_url="http://127.0.0.1:9/v1")
    data.login(page.context, staff, daphne_url)
    page.goto(f"/channels/{channel.pk}/")
    page.get_by_role("button", name="测试连接").click()
    result = page.locator("#channel-test-result")
    expect(result).to_have_attribute("data-test-outcome", "failed")
    expect(result).to_have_text(re.compile(r"^\s*失败\s+无法连接模型服务商\s*$"))


def test_agents_are_created_edited_and_deleted_in_the_app(page: Page, data, daphne_url) -> None:
    user = data.user("owner")
    data.login(page.context, user, daphne_url)
    page.goto("/agents/")
    page.get_by_role("link", name="新建 Agent").click()
    expect(page.get_by_role("heading", name="新建 Agent")).to_be_visible()
    page.get_by_label("名称").fill("写作助手")
    page.get_by_label("系统提示").fill("You help with writing.")
    page.get_by_role("button", name="保存").click()
    expect(page.get_by_text("Agent 已创建。")).to_be_visible()
    agent = Agent.objects.get(name="写作助手")
    assert agent.owner_id == user.pk
    expect(page).to_have_url(re.compile(rf"/agents/{agent.pk}/$"))

    page.get_by_label("名称").fill("写作助手 2")
    page.get_by_role("button", name="保存").click()
    expect(page.get_by_text("Agent 已保存。")).to_be_visible()
    expect(page).to_have_url(re.compile(rf"/agents/{agent.pk}/$"))  # never the admin

    data.session(owner=user, agent=agent, title="草稿")
    page.get_by_role("link", name="删除 Agent").click()
    expect(page.get_by_role("heading", name="删除 Agent「写作助手 2」？")).to_be_visible()
    expect(page.get_by_text("你有 1 个使用该 Agent 的对话")).to_be_visible()
    page.get_by_role("button", name="删除 Agent").click()  # the box is required: stays
    expect(page).to_have_url(re.compile(rf"/agents/{agent.pk}/delete/$"))
    assert Agent.objects.filter(pk=agent.pk).exists()
    page.get_by_label("同时删除我的 1 个相关对话及其消息和工作区文件").check()
    page.get_by_role("button", name="删除 Agent").click()
    expect(page.get_by_text("已删除 Agent「写作助手 2」及其 1 个对话。")).to_be_visible()
    expect(page).to_have_url(re.compile(r"/agents/$"))
    assert not Agent.objects.filter(pk=agent.pk).exists()
    assert not ChatSession.objects.filter(owner=user).exists()
