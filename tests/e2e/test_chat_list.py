"""Issue 16 items 2 and 3 in Chromium, on a desktop and on a 390 px phone: a top bar that
fits (its menu holds Log out), the chat list in a drawer, and starting, switching, renaming
and deleting chats — a new chat is stored with its first message, never before, and its
title reaches the page without a reload."""

from __future__ import annotations

import json
import re
import urllib.request
from typing import Any

import pytest

pytest.importorskip("agents.runtime", reason="the agent runtime has not landed yet")
from playwright.sync_api import Page, expect
from rest_framework.authtoken.models import Token

from agents.models import ChatSession, Message
from tests.e2e.support import conversation
from tests.support.chat_page import open_chat_menu

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 820}
CHAT_URL = re.compile(r"/chat/([0-9a-f-]{36})/$")


def _fits(page: Page) -> None:
    """Nothing wider than the viewport: no sideways scrolling."""
    width = page.viewport_size["width"]
    widths = page.evaluate(
        "() => [document.documentElement.scrollWidth, document.querySelector('.topbar').scrollWidth]"
    )
    assert max(widths) <= width, widths


def _chat_list(page: Page, phone: bool) -> Any:
    """The chat list, opened (on a phone it is a drawer behind the "Chats" button)."""
    sidebar = page.locator("#sidebar")
    if phone:
        expect(sidebar).to_be_hidden()
        page.locator(".chat-header, .home-head").get_by_role(
            "button", name="对话", exact=True
        ).click()
    expect(sidebar).to_be_visible()
    expect(sidebar).to_be_in_viewport()
    return sidebar


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_start_switch_rename_and_delete_chats(
    page: Page, data, daphne_url, llm, readme_shot, server_log, size
) -> None:
    phone = size == PHONE
    page.set_viewport_size(size)
    user = data.user("chats")
    agent = data.agent(name="规划助手", model_channel=data.channel())
    old = data.session(owner=user, agent=agent, title="旧对话", rows=conversation(1, chars=40))
    data.login(page.context, user, daphne_url)

    page.goto("/chat/")
    _fits(page)
    logout = page.get_by_role("button", name="退出登录")
    if phone:  # the top bar collapses: its menu holds the links, the language and Log out
        expect(logout).to_be_hidden()
        page.get_by_role("button", name="菜单").click()
        expect(page.get_by_role("button", name="菜单")).to_have_attribute("aria-expanded", "true")
    expect(logout).to_be_visible()
    expect(logout).to_be_in_viewport()
    if phone:
        page.get_by_role("button", name="菜单").click()
        expect(logout).to_be_hidden()

    # New chat opens a page for a chat that is not stored yet
    before = ChatSession.objects.filter(owner=user).count()
    _chat_list(page, phone).get_by_role("button", name="新对话").click()
    expect(page).to_have_url(re.compile(rf"/chat/new/\?agent={agent.pk}$"))
    expect(page.locator("#chat")).to_have_attribute("data-ws", "open")
    expect(page.get_by_role("heading", level=1)).to_have_text("新对话")
    _fits(page)
    assert ChatSession.objects.filter(owner=user).count() == before
    if phone:
        readme_shot(page, "phone-new-chat")

    # its first message stores it, titled by the message; the page takes its address
    box = page.get_by_label("输入消息")
    box.fill("帮我规划一次重构")
    box.press("Enter")
    expect(page).to_have_url(CHAT_URL)
    sid = CHAT_URL.search(page.url).group(1)
    expect(page.locator("#messages article[data-role=assistant]")).to_have_count(1)
    expect(page.locator("#turn-status")).to_have_attribute("data-busy", "false")
    created = ChatSession.objects.get(pk=sid)
    assert created.owner == user and created.agent == agent
    assert created.title == "帮我规划一次重构"
    assert ChatSession.objects.filter(owner=user).count() == before + 1
    expect(page.get_by_role("heading", level=1)).to_have_text("帮我规划一次重构")
    expect(page).to_have_title("帮我规划一次重构 · NetaClaw")
    sidebar = _chat_list(page, phone)
    first = sidebar.locator(".session-item").first
    expect(first.locator(".session-title")).to_have_text("帮我规划一次重构")
    expect(first.locator("a.session-link")).to_have_attribute("aria-current", "page")
    if phone:
        readme_shot(page, "phone-chat-list", docs="phone-chat-list")
    # a second message goes to the same chat (the forms took its id)
    if phone:
        page.keyboard.press("Escape")
        expect(page.locator("#sidebar")).to_be_hidden()
    box.fill("第二条")
    box.press("Enter")
    expect(page.locator("#messages article[data-role=assistant]")).to_have_count(2)
    assert Message.objects.filter(session_id=sid, role="user").count() == 2
    assert ChatSession.objects.filter(owner=user).count() == before + 1

    # switch to the older chat
    _chat_list(page, phone).get_by_role("link", name=re.compile("^旧对话")).click()
    expect(page).to_have_url(f"/chat/{old.pk}/")
    expect(page.locator("#messages article[data-role=user]")).to_have_count(1)

    # rename it in its dialog
    sidebar = _chat_list(page, phone)
    sidebar.get_by_role("link", name="重命名「旧对话」").click()
    dialog = page.get_by_role("dialog", name="重命名对话")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_label("标题")).to_have_value("旧对话")
    dialog.get_by_label("标题").fill("数据库迁移计划")
    dialog.get_by_role("button", name="保存").click()
    expect(page).to_have_url(f"/chat/{old.pk}/")
    expect(page.get_by_role("heading", level=1)).to_have_text("数据库迁移计划")
    old.refresh_from_db()
    assert old.title == "数据库迁移计划"

    # delete it: the dialog asks first; Cancel keeps it
    workspace = server_log.parent / "workspaces" / str(old.pk)  # the server's
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "notes.md").write_text("草稿")
    open_chat_menu(page)
    delete = page.locator(".chat-header").get_by_role("link", name="删除对话")
    delete.click()
    dialog = page.get_by_role("dialog", name="删除此对话？")
    expect(dialog).to_contain_text("「数据库迁移计划」将被永久删除")
    if phone:
        readme_shot(page, "phone-delete-dialog")
    else:
        readme_shot(page, "delete-dialog", docs="chat-delete-dialog")
    dialog.get_by_role("button", name="取消").click()
    expect(dialog).to_be_hidden()
    assert ChatSession.objects.filter(pk=old.pk).exists()
    open_chat_menu(page)  # the dialog's click closed the phone's header menu
    delete.click()
    dialog.get_by_role("button", name="删除").click()
    expect(page).to_have_url(re.compile(r"/chat/$"))
    expect(page.get_by_role("status")).to_contain_text("已删除对话「数据库迁移计划」")
    assert not ChatSession.objects.filter(pk=old.pk).exists()
    assert not Message.objects.filter(session_id=old.pk).exists()
    assert not workspace.exists()
    sidebar = _chat_list(page, phone)
    expect(sidebar.locator(".session-item")).to_have_count(1)
    expect(sidebar.get_by_text("数据库迁移计划")).to_have_count(0)
    _fits(page)


def _rename_over_the_api(base_url: str, user: Any, session: Any, title: str) -> dict[str, Any]:
    token = Token.objects.get_or_create(user=user)[0].key
    request = urllib.request.Request(
        f"{base_url}/api/sessions/{session.pk}/",
        data=json.dumps({"title": title}).encode(),
        method="PATCH",
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def test_titles_follow_on_every_open_page_without_a_reload(
    page: Page, data, daphne_url, llm
) -> None:
    """A rename (here ``PATCH /api/sessions/<id>/``) and a chat titled by its first message
    reach the chat list and header of every open page of the owner."""
    user = data.user("titles")
    agent = data.agent(model_channel=data.channel())
    untitled = data.session(owner=user, agent=agent)  # e.g. made by POST /api/sessions/
    other = data.session(owner=user, agent=agent, title="另一个", rows=conversation(1, chars=20))
    data.login(page.context, user, daphne_url)
    watcher = page.context.new_page()
    watcher.goto(f"/chat/{other.pk}/")
    expect(watcher.locator("#chat")).to_have_attribute("data-ws", "open")
    page.goto(f"/chat/{untitled.pk}/")
    expect(page.locator("#chat")).to_have_attribute("data-ws", "open")
    expect(page.get_by_role("heading", level=1)).to_have_text("新对话")

    box = page.get_by_label("输入消息")
    box.fill("整理发布清单")
    box.press("Enter")
    expect(page.get_by_role("heading", level=1)).to_have_text("整理发布清单")
    watcher_item = watcher.locator(f"#session-item-{untitled.pk} .session-title")
    expect(watcher_item).to_have_text("整理发布清单")

    body = _rename_over_the_api(daphne_url, user, untitled, "发布清单 v2")
    assert body["title"] == "发布清单 v2"
    expect(page.get_by_role("heading", level=1)).to_have_text("发布清单 v2")
    expect(page).to_have_title("发布清单 v2 · NetaClaw")
    expect(watcher_item).to_have_text("发布清单 v2")
    expect(watcher.get_by_role("heading", level=1)).to_have_text("另一个")
    watcher.close()
