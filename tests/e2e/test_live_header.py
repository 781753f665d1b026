"""Issue 26 item 8, at 1280 and 390 px: a chat started on the page gets its header's rename,
delete and export at once, and the Compacted / Full switch appears with its first
compaction — none of them waits for a reload any more."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("agents.runtime", reason="the agent runtime has not landed yet")
from playwright.sync_api import Page, expect

from tests.e2e.support import conversation
from tests.support.chat_page import open_chat_menu

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 820}
CHAT_URL = re.compile(r"/chat/([0-9a-f-]{36})/$")


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop-light", "phone-dark"])
def test_a_new_chat_gets_its_header_actions_without_a_reload(
    page: Page, data, daphne_url, size
) -> None:
    page.set_viewport_size(size)
    page.emulate_media(color_scheme="dark" if size is PHONE else "light")  # both themes
    user = data.user("newcomer")
    agent = data.agent(name="新助手", model_channel=data.channel())
    data.login(page.context, user, daphne_url)
    page.goto(f"/chat/new/?agent={agent.pk}")
    expect(page.locator("#chat")).to_have_attribute("data-ws", "open")
    actions = page.locator("#chat-header-actions")
    expect(actions.locator("a")).to_have_count(0)
    box = page.get_by_label("输入消息")
    box.fill("第一条消息")
    box.press("Enter")
    expect(page).to_have_url(CHAT_URL)
    sid = CHAT_URL.search(page.url).group(1)
    open_chat_menu(page)
    expect(actions.get_by_label("重命名对话")).to_be_visible()
    expect(actions.get_by_label("删除对话")).to_have_attribute(
        "data-delete-url", f"/chat/{sid}/delete/"
    )
    expect(actions.get_by_text("导出", exact=True)).to_be_visible()


def test_the_history_switch_appears_with_the_first_compaction(page: Page, data, daphne_url) -> None:
    user = data.user("compactor")
    aux = data.aux_channel()
    agent = data.agent(name="压缩助手", model_channel=data.channel(), auxiliary_model_channel=aux)
    chat = data.session(owner=user, agent=agent, title="待压缩", rows=conversation(8))
    data.login(page.context, user, daphne_url)
    page.goto(f"/chat/{chat.pk}/")
    expect(page.locator("#chat")).to_have_attribute("data-ws", "open")
    switch = page.locator("#chat-view-toggle")
    expect(switch.locator("a")).to_have_count(0)
    expect(page.locator(f"#session-toggle-{chat.pk} a")).to_have_count(0)
    page.locator("#compact-button").click()
    expect(switch.get_by_role("link", name="完整")).to_be_visible(timeout=20_000)
    expect(page.locator(f"#session-toggle-{chat.pk} a")).to_have_count(1)
