"""Issue 26 item 3 in Chromium, at 1280 and 390 px: the chat header's model picker switches
this chat's model (not its agent's), the token bar follows its window, and a window the
history no longer fits asks to compact first."""

from __future__ import annotations

import pytest

pytest.importorskip("agents.runtime", reason="the agent runtime has not landed yet")
from playwright.sync_api import Page, expect

from agents.models import ChatSession
from tests.e2e.support import conversation
from tests.support.chat_page import open_chat_menu

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 820}


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop-light", "phone-dark"])
def test_the_picker_switches_the_chats_model_and_compacts_first_when_needed(
    page: Page, data, daphne_url, llm, size, readme_shot
) -> None:
    page.set_viewport_size(size)
    page.emulate_media(color_scheme="dark" if size is PHONE else "light")  # both themes
    user = data.user("switcher")
    aux = data.aux_channel()
    big = data.channel(name="大窗口", context_window=64_000)
    small = data.channel(name="小窗口", context_window=2_000)
    agent = data.agent(name="换模型助手", model_channel=big, auxiliary_model_channel=aux)
    chat = data.session(owner=user, agent=agent, title="换模型", rows=conversation(12))
    data.login(page.context, user, daphne_url)
    page.goto(f"/chat/{chat.pk}/")
    expect(page.locator("#chat")).to_have_attribute("data-ws", "open")
    status = page.locator("#meter-status")
    expect(status).to_contain_text("/64,000")
    open_chat_menu(page)
    picker = page.locator("[data-model-select]")
    expect(picker).to_be_visible()

    picker.select_option(value=str(small.pk))
    ask = page.locator("[data-model-too-large]")
    expect(ask).to_be_visible()
    expect(ask).to_contain_text("2,000")
    box = ask.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= size["width"] + 0.5
    if size is DESKTOP:
        readme_shot(page, "model-switch-ask", docs="chat-model-switch")
    assert ChatSession.objects.get(pk=chat.pk).model_channel_id is None  # asked, not switched

    page.locator("[data-model-cancel]").click()
    expect(page.locator("[data-model-too-large]")).to_have_count(0)
    expect(status).to_contain_text("/64,000")
    # htmx listens to the new picker once it has settled (a person cannot be faster)
    expect(page.locator("#model-switch.htmx-added, #model-switch.htmx-settling")).to_have_count(0)

    picker = page.locator("[data-model-select]")
    picker.select_option(value=str(small.pk))
    page.locator("[data-model-compact]").click()
    expect(status).to_contain_text("/2,000", timeout=20_000)
    expect(page.locator("#messages")).to_contain_text("上下文已压缩")
    assert ChatSession.objects.get(pk=chat.pk).model_channel_id == small.pk
    agent.refresh_from_db()
    assert agent.model_channel_id == big.pk  # the agent keeps its model
    # the page after a reload shows the chat's own model
    page.reload()
    open_chat_menu(page)
    expect(page.locator("[data-model-select] option:checked")).to_contain_text("小窗口")
    expect(page.locator("#meter-status")).to_contain_text("/2,000")
    assert page.evaluate("document.documentElement.scrollWidth") <= size["width"]
