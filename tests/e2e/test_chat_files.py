"""Issue 26 item 5 in Chromium, at 1280 and 390 px: the chat header's Export downloads the
chat as the product's own JSON, and the chat list's Import opens it as a new chat with the
same bubbles — the compaction summary's among them."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("agents.runtime", reason="the agent runtime has not landed yet")
from playwright.sync_api import Page, expect

from agents.models import ChatSession
from tests.e2e.support import conversation
from tests.support.chat_page import open_chat_menu
from tests.support.history import apply_compaction

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 820}


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop-light", "phone-dark"])
def test_export_then_import_gives_the_same_chat(
    page: Page, data, daphne_url, readme_shot, tmp_path, size
) -> None:
    page.set_viewport_size(size)
    page.emulate_media(color_scheme="dark" if size is PHONE else "light")  # both themes
    user = data.user("porter")
    agent = data.agent(name="搬运助手", model_channel=data.channel())
    chat = data.session(
        owner=user, agent=agent, title="要导出的对话", rows=conversation(6, chars=60)
    )
    apply_compaction(chat, list(chat.messages.order_by("position")[:6]), summary="## 目标\n搬家")
    data.login(page.context, user, daphne_url)

    page.goto(f"/chat/{chat.pk}/")
    bubbles = page.locator("#messages .msg")
    count = bubbles.count()
    open_chat_menu(page)
    page.get_by_text("导出", exact=True).click()
    readme_shot(page, f"chat-export-menu-{'phone' if size == PHONE else 'desktop'}")
    with page.expect_download() as waiting:
        page.get_by_role("menuitem", name=re.compile("NetaClaw JSON")).click()
    saved = tmp_path / "chat.json"
    waiting.value.save_as(saved)
    document = json.loads(saved.read_text(encoding="utf-8"))
    assert document["format"] == "netaclaw.chat"
    assert sum(m["summary"] for m in document["messages"]) == 1

    page.goto("/chat/")
    page.get_by_text("导入对话").click()
    page.locator("#import-file").set_input_files(str(saved))
    page.get_by_role("button", name="导入", exact=True).click()
    expect(page).to_have_url(re.compile(r"/chat/[0-9a-f-]{36}/$"))
    assert f"/chat/{chat.pk}/" not in page.url
    expect(page.locator("#messages .msg")).to_have_count(count)
    expect(page.locator("#messages .msg-summary")).to_have_count(1)
    assert ChatSession.objects.filter(owner=user).count() == 2
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= size["width"]


def test_a_bad_file_is_refused_on_the_list(page: Page, data, daphne_url, tmp_path) -> None:
    user = data.user("badfile")
    data.agent(name="助手", model_channel=data.channel())
    data.login(page.context, user, daphne_url)
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "netaclaw.chat", "version": 9, "messages": []}', encoding="utf-8")
    page.goto("/chat/")
    page.get_by_text("导入对话").click()
    page.locator("#import-file").set_input_files(str(bad))
    page.get_by_role("button", name="导入", exact=True).click()
    expect(page.locator(".flash")).to_contain_text("version 9")
    assert ChatSession.objects.filter(owner=user).count() == 0
