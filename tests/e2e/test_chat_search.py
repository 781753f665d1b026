"""Issue 26 item 2 in Chromium, at 1280 and 390 px: the chat list grouped by date, and the
sidebar's search — typed words find a message deep in a long chat (never another user's),
and its result opens the chat at that message, marked."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

pytest.importorskip("agents.runtime", reason="the agent runtime has not landed yet")
from django.utils import timezone
from playwright.sync_api import Page, expect

from agents.models import ChatSession

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 820}


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop-light", "phone-dark"])
def test_search_finds_a_deep_message_and_opens_the_chat_there(
    page: Page, data, daphne_url, readme_shot, size
) -> None:
    phone = size == PHONE
    page.set_viewport_size(size)
    page.emulate_media(color_scheme="dark" if size is PHONE else "light")  # both themes
    user = data.user("finder")
    agent = data.agent(name="检索助手", model_channel=data.channel())
    rows = [{"role": "user", "content": f"第{i}条普通消息"} for i in range(160)]
    rows[5] = {"role": "user", "content": "我们把 Redis 的端口改成 6380 了"}
    deep = data.session(owner=user, agent=agent, title="端口变更", rows=rows)
    old = data.session(owner=user, agent=agent, title="上个月的对话")
    ChatSession.objects.filter(pk=old.pk).update(updated_at=timezone.now() - timedelta(days=20))
    stranger = data.user("stranger")
    data.session(owner=stranger, agent=agent, title="别人的端口", rows=[rows[5]])
    data.login(page.context, user, daphne_url)

    page.goto("/chat/")
    sidebar = page.locator("#sidebar")
    if phone:
        page.locator(".home-head").get_by_role("button", name="对话", exact=True).click()
    expect(sidebar.locator(".session-group[data-group='today'] .session-group-label")).to_have_text(
        "今天"
    )
    expect(sidebar.locator(".session-group[data-group='month'] .session-item")).to_contain_text(
        "上个月的对话"
    )
    box = sidebar.get_by_placeholder("搜索对话")
    box.fill("6380")
    results = page.locator("#chat-search-results")
    expect(results).to_be_visible()
    hits = results.locator("[data-search-hit]")
    expect(hits).to_have_count(1)  # the stranger's chat is never found
    expect(hits.first.locator("mark")).to_have_text("6380")
    expect(page.locator("[data-session-nav]")).to_be_hidden()
    readme_shot(page, f"chat-search-{'phone' if phone else 'desktop'}")
    hits.first.click()

    expect(page).to_have_url(re.compile(rf"/chat/{deep.pk}/\?view=full&message=\d+"))
    found = page.locator(".msg.is-found")
    expect(found).to_contain_text("6380")
    expect(found).to_be_in_viewport()
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= size["width"]


def test_escape_brings_the_chat_list_back(page: Page, data, daphne_url) -> None:
    user = data.user("escaper")
    agent = data.agent(name="助手", model_channel=data.channel())
    data.session(owner=user, agent=agent, title="唯一的对话")
    data.login(page.context, user, daphne_url)
    page.goto("/chat/")
    box = page.get_by_placeholder("搜索对话")
    box.fill("没有这个词")
    expect(page.locator("[data-search-empty]")).to_be_visible()
    box.press("Escape")
    expect(page.locator("[data-session-nav]")).to_be_visible()
    expect(page.locator("#chat-search-results")).to_be_hidden()
