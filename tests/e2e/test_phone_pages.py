"""Issue 26 item 7 in Chromium at 390 px, light and dark: every page fits — nothing scrolls
sideways, and every visible button and link is on the screen (the Agents page was 544 px
wide and Model channels 929 px, their Edit and Delete off-screen); tables are cards there."""

from __future__ import annotations

import pytest

pytest.importorskip("agents.runtime", reason="the agent runtime has not landed yet")
from playwright.sync_api import Page, expect

from tests.e2e.support import conversation

PHONE = {"width": 390, "height": 844}

OFF_SCREEN = """(width) => {
  const out = [];
  for (const el of document.querySelectorAll("a, button, select, input:not([type=hidden]), textarea")) {
    const r = el.getBoundingClientRect();
    const style = getComputedStyle(el);
    if (r.width === 0 || r.height === 0 || style.visibility === "hidden") continue;
    if (el.closest("[hidden], .sr-only, .skip-links, dialog:not([open]), details:not([open]) > :not(summary)")) continue;
    if (el.classList.contains("sr-only")) continue;
    if (r.left < -0.5 || r.right > width + 0.5) out.push(`${el.tagName} ${el.id || el.className} ${(el.textContent || "").trim().slice(0, 30)} [${Math.round(r.left)}, ${Math.round(r.right)}]`);
  }
  return out;
}"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_page_fits_a_phone(page: Page, data, daphne_url, scheme) -> None:
    page.set_viewport_size(PHONE)
    page.emulate_media(color_scheme=scheme)
    user = data.user(f"phone-{scheme}", staff=True)
    channel = data.channel(name="一个名字相当长的模型渠道 · 用来测试窄屏", context_window=4000)
    aux = data.aux_channel(name=f"摘要模型 {scheme}")
    agent = data.agent(
        name="窄屏助手", model_channel=channel, auxiliary_model_channel=aux, owner=user
    )
    chat = data.session(
        owner=user, agent=agent, title="一个标题很长很长的对话" * 3, rows=conversation(4)
    )
    data.login(page.context, user, daphne_url)
    pages = [
        "/chat/",
        f"/chat/{chat.pk}/",
        f"/chat/{chat.pk}/?view=full",
        f"/chat/new/?agent={agent.pk}",
        "/chat/search/?q=main",
        "/agents/",
        "/agents/new/",
        f"/agents/{agent.pk}/",
        "/channels/",
        "/channels/new/",
        f"/channels/{channel.pk}/",
        "/accounts/password_change/",
    ]
    problems = {}
    for url in pages:
        page.goto(url)
        expect(page.locator("body")).to_be_visible()
        width = page.evaluate("document.documentElement.scrollWidth")
        off = page.evaluate(OFF_SCREEN, PHONE["width"])
        if width > PHONE["width"] or off:
            problems[url] = (width, off)
    page.context.clear_cookies()
    page.goto("/accounts/login/")
    if page.evaluate("document.documentElement.scrollWidth") > PHONE["width"]:
        problems["/accounts/login/"] = page.evaluate("document.documentElement.scrollWidth")
    assert problems == {}


def test_the_chat_header_is_one_line_with_a_menu(page: Page, data, daphne_url, readme_shot) -> None:
    """At 390 px the header took 133 of 844 px and left the title 71 px."""
    page.set_viewport_size(PHONE)
    user = data.user("oneline")
    agent = data.agent(name="一行助手", model_channel=data.channel())
    chat = data.session(
        owner=user,
        agent=agent,
        title="一个相当长的对话标题，用来看它能占多宽",
        rows=conversation(2),
    )
    data.login(page.context, user, daphne_url)
    page.goto(f"/chat/{chat.pk}/")
    expect(page.locator("#chat")).to_have_attribute("data-ws", "open")
    head = page.locator(".chat-header").bounding_box()
    title = page.locator("#chat-title").bounding_box()
    assert head is not None and head["height"] <= 56, head
    assert title is not None and title["width"] >= 200, title
    tools = page.locator("#chat-tools")
    expect(tools).to_be_hidden()
    page.locator("[data-chat-menu-toggle]").click()
    expect(tools).to_be_visible()
    for inside in ("[data-model-select]", "#chat-header-actions", "#ws-status"):
        expect(tools.locator(inside)).to_be_visible()
    readme_shot(page, "phone-chat-menu", docs="phone-chat-menu")
    box = tools.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
    page.keyboard.press("Escape")
    expect(tools).to_be_hidden()
