"""The chat page in a browser (Playwright): open it, and read what it sends on its socket."""

from __future__ import annotations

import json
from typing import Any

from playwright.sync_api import Page, WebSocket, expect


def record_frames(page: Page) -> list[dict[str, Any]]:
    """Every JSON frame the page sends on its chat socket, in order."""
    sent: list[dict[str, Any]] = []

    def on_socket(ws: WebSocket) -> None:
        if "/ws/chat/html/" in ws.url:
            ws.on("framesent", lambda payload: sent.append(json.loads(payload)))

    page.on("websocket", on_socket)
    return sent


def open_chat(page: Page, session: Any) -> None:
    page.goto(f"/chat/{session.pk}/")
    expect(page.locator("#chat")).to_have_attribute("data-ws", "open")
    expect(page.locator("#ws-status")).to_have_text("已连接")


def without_headers(frame: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in frame.items() if k != "HEADERS"}


def open_chat_menu(page: Page) -> None:
    """On a phone the chat header's tools are behind its ⋯ (issue 26 item 7): open it when
    it is shown (a wide page has them in the header already). A page just loaded may take
    the first click before its modules listen: the click is repeated until it opens."""
    toggle = page.locator("[data-chat-menu-toggle]")
    tools = page.locator("#chat-tools")
    if not toggle.is_visible():
        return
    for _ in range(5):
        if tools.is_visible():
            return
        toggle.click()
        page.wait_for_timeout(200)
    expect(tools).to_be_visible()
