"""Issue 17 items 2, 4, 8 and 11 in Chromium, on a desktop and on a 390 px phone: the "⋯"
menu of a message (pin, compact up to here), the context panel beside the token bar, and
mode ``ask``'s callout.

The new strings of these controls are not compiled into the zh-hans catalogue yet when these
tests are written, so they find the controls by their ``data-`` hooks, not their words.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

pytest.importorskip("agents.runtime", reason="the agent runtime has not landed yet")
from playwright.sync_api import Locator, Page, expect

from agents.models import ChatSession, Message
from tests.e2e.support import AUX_MODEL, MAIN_MODEL, conversation
from tests.support.chat_page import open_chat, record_frames, without_headers

SIZES = pytest.mark.parametrize("width", [1280, 390], ids=["desktop", "phone"])
PARTS = ["systemPrompt", "toolDefinitions", "pins", "summary", "messages", "free"]


def _setup(data: Any, user_name: str, **agent: Any) -> tuple[Any, Any]:
    user = data.user(user_name)
    channel = data.channel(context_window=4000)
    agent_row = data.agent(
        model_channel=channel,
        auxiliary_model_channel=data.aux_channel(),
        compaction_threshold_percent=70,
        **agent,
    )
    return user, agent_row


def _rows(session: ChatSession) -> list[Message]:
    return list(session.messages.order_by("position", "id"))


def _send(page: Page, text: str) -> None:
    box = page.locator("#chat-input")
    box.fill(text)
    box.press("Enter")


def _open_menu(page: Page, message: Message) -> Locator:
    article = page.locator(f"#msg-{message.pk}")
    article.scroll_into_view_if_needed()
    toggle = article.locator("summary.msg-menu-toggle")
    expect(toggle).to_be_visible()
    if article.locator("details[data-msg-menu]").get_attribute("open") is None:
        toggle.click()
    items = article.locator(".msg-menu-items")
    expect(items).to_be_visible()
    return items


def _inside_viewport(page: Page, locator: Locator) -> None:
    box = locator.bounding_box()
    width = page.viewport_size["width"]
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width + 0.5, box
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width


def _done(page: Page) -> Locator:
    return page.locator('#messages [data-event="compaction_done"]')


def _summary_request(llm: Any) -> str:
    (request,) = llm.requests_for(AUX_MODEL)
    return json.dumps(request.body, ensure_ascii=False)


@SIZES
def test_pin_from_the_menu_survives_reload_and_the_next_compaction(
    page: Page, data, daphne_url, llm, width, readme_shot
) -> None:
    page.set_viewport_size({"width": width, "height": 820})
    user, agent = _setup(data, "pin")
    session = data.session(owner=user, agent=agent, rows=conversation(8, chars=300))
    rows = _rows(session)
    pinned = rows[5]  # an answer in the middle: what a compaction would summarize
    data.login(page.context, user, daphne_url)
    open_chat(page, session)
    bar = page.locator("#token-bar")
    expect(bar).to_have_attribute("data-pins", "0")

    items = _open_menu(page, pinned)
    _inside_viewport(page, items)
    readme_shot(page, f"message-menu-{width}", docs="message-menu" if width == 1280 else None)
    items.locator('[data-pin-toggle="pin"]').click()
    article = page.locator(f"#msg-{pinned.pk}")
    expect(article.locator("[data-pinned]")).to_be_visible()
    expect(article).to_have_class(re.compile(r"\bis-pinned\b"))
    expect(article.locator('[data-pin-toggle="unpin"]')).to_have_count(1)
    expect(bar).not_to_have_attribute("data-pins", "0")  # the tooltip now counts the pin
    assert Message.objects.get(pk=pinned.pk).pinned

    page.reload()
    expect(page.locator("#chat")).to_have_attribute("data-ws", "open")
    expect(article.locator("[data-pinned]")).to_be_visible()

    page.locator("#compact-button").click()
    expect(_done(page)).to_have_count(1)
    page.reload()  # the compacted view
    expect(page.locator("#chat")).to_have_attribute("data-ws", "open")
    expect(article).to_be_visible()
    expect(article).not_to_have_class(re.compile(r"\bis-compacted\b"))
    expect(article.locator("[data-pinned]")).to_be_visible()
    assert " ".join(article.locator(".bubble").inner_text().split()) == " ".join(
        pinned.content.split()
    )
    stored = {m.pk: m for m in _rows(session)}
    assert stored[pinned.pk].compacted_at is None and stored[pinned.pk].content == pinned.content
    summarized = [m for m in rows if stored[m.pk].compacted_at is not None]
    assert summarized, "the compaction summarized the messages around the pin"
    for message in summarized:  # gone from the compacted view, the pin kept
        expect(page.locator(f"#msg-{message.pk}")).to_have_count(0)
    # the full view marks the pin too
    page.goto(f"/chat/{session.pk}/?view=full")
    expect(page.locator(f"#msg-{pinned.pk} [data-pinned]")).to_be_visible()


@SIZES
def test_compact_up_to_here_compacts_only_what_comes_before(
    page: Page, data, daphne_url, llm, width
) -> None:
    page.set_viewport_size({"width": width, "height": 820})
    user, agent = _setup(data, "upto")
    session = data.session(owner=user, agent=agent, rows=conversation(7, chars=300))
    rows = _rows(session)
    here = rows[10]
    data.login(page.context, user, daphne_url)
    frames = record_frames(page)
    open_chat(page, session)

    page.once("dialog", lambda dialog: dialog.dismiss())
    _open_menu(page, here).locator("[data-compact-up-to] button").click()
    page.wait_for_timeout(300)
    assert frames == [], "a dismissed confirmation sends nothing"

    page.once("dialog", lambda dialog: dialog.accept())
    items = _open_menu(page, here)
    _inside_viewport(page, items)
    items.locator("[data-compact-up-to] button").click()
    expect(_done(page)).to_have_count(1)
    assert [without_headers(f) for f in frames] == [
        {"type": "compact", "sessionId": str(session.pk), "upTo": str(here.pk)}
    ]
    stored = {m.pk: m for m in _rows(session)}
    summarized = [m for m in rows if stored[m.pk].compacted_at is not None]
    assert summarized, "something before the message was compacted"
    assert all(m.position < here.position for m in summarized)
    assert all(stored[m.pk].compacted_at is None for m in rows if m.position >= here.position)
    assert llm.requests_for(MAIN_MODEL) == []
    assert len(llm.requests_for(AUX_MODEL)) == 1


@SIZES
def test_the_context_panel_lists_six_parts_that_add_up_to_the_window(
    page: Page, data, daphne_url, llm, width, readme_shot
) -> None:
    page.set_viewport_size({"width": width, "height": 820})
    user, agent = _setup(data, "panel")
    session = data.session(owner=user, agent=agent, rows=conversation(3, chars=400))
    # pinned as message_pin stores it (its event goes to no page yet)
    Message.objects.filter(pk=_rows(session)[1].pk).update(pinned=True)
    data.login(page.context, user, daphne_url)
    open_chat(page, session)
    bar = page.locator("#token-bar")
    window = int(bar.get_attribute("aria-valuemax"))
    assert window == 4000
    pins = int(bar.get_attribute("data-pins"))
    assert pins > 0 and f"{pins:,} tokens" in bar.get_attribute("aria-valuetext")

    toggle = page.locator("#context-toggle")
    panel = page.locator("#context-panel")
    expect(panel).to_be_hidden()
    toggle.click()
    expect(panel).to_be_visible()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    _inside_viewport(page, panel)
    readme_shot(page, f"context-panel-{width}", docs="context-panel" if width == 1280 else None)

    def parts() -> dict[str, int]:
        rows = panel.locator("tr[data-part]")
        return {
            rows.nth(i).get_attribute("data-part"): int(
                rows.nth(i).locator("[data-tokens]").get_attribute("data-tokens")
            )
            for i in range(rows.count())
        }

    before = parts()
    assert list(before) == PARTS
    assert sum(before.values()) == window
    assert before["pins"] == pins
    assert sum(v for k, v in before.items() if k != "free") == int(
        bar.get_attribute("aria-valuenow")
    )

    # a turn: the socket's token_update refreshes the figures, the panel stays open
    used = panel.locator("#context-breakdown").get_attribute("data-used")
    llm.main_input_tokens = 2500  # what the provider reports for the next request
    _send(page, "再详细解释一下配置优先级，并给出每一层的测试用例。")
    expect(page.locator("#turn-status")).to_have_attribute("data-busy", "false")
    expect(panel.locator("#context-breakdown")).not_to_have_attribute("data-used", used)
    expect(panel).to_be_visible()
    after = parts()
    assert list(after) == PARTS and sum(after.values()) == window
    assert after["messages"] > before["messages"]
    assert after["pins"] > 0 and int(bar.get_attribute("data-pins")) == after["pins"]
    assert sum(v for k, v in after.items() if k != "free") == int(
        bar.get_attribute("aria-valuenow")
    )

    page.keyboard.press("Escape")
    expect(panel).to_be_hidden()
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(toggle).to_be_focused()


def test_ask_mode_asks_and_compacts_with_the_instructions_given(
    page: Page, data, daphne_url, llm, readme_shot
) -> None:
    user, agent = _setup(data, "ask", compaction_mode="ask")
    session = data.session(owner=user, agent=agent, rows=conversation(6, chars=1100))
    data.login(page.context, user, daphne_url)
    frames = record_frames(page)
    open_chat(page, session)
    callout = page.locator('#compaction-suggestion [data-testid="compaction-suggested"]')
    expect(callout).to_have_count(0)
    expect(page.locator("#token-bar")).not_to_have_attribute("data-state", "ok")

    _send(page, "还在吗？请继续。")
    expect(callout).to_be_visible()
    expect(callout).to_have_attribute("role", "alert")
    expect(page.locator("#turn-status")).to_have_attribute("data-busy", "false")
    assert llm.requests_for(AUX_MODEL) == []  # ask: nothing compacts on its own
    readme_shot(page, "ask-mode-callout", docs="ask-mode-callout")

    page.reload()  # asked again on load while the context stays at the threshold
    expect(page.locator("#chat")).to_have_attribute("data-ws", "open")
    expect(callout).to_be_visible()
    callout.locator("[data-suggest-dismiss]").click()  # Not now
    expect(callout).to_have_count(0)
    page.reload()
    expect(page.locator("#chat")).to_have_attribute("data-ws", "open")
    expect(callout).to_be_visible()

    reveal = callout.locator("[data-suggest-instructions]")
    field = callout.locator("textarea[name=instructions]")
    expect(field).to_be_hidden()
    reveal.click()
    expect(reveal).to_have_attribute("aria-expanded", "true")
    expect(field).to_be_visible()
    expect(field).to_be_focused()
    instructions = "务必保留端口号 8123 和文件 src/app/config.py 的名字"
    field.fill(instructions)
    callout.locator("[data-suggest-send]").click()
    expect(callout).to_have_count(0)
    expect(_done(page)).to_have_count(1)
    compact = [without_headers(f) for f in frames if f.get("type") == "compact"]
    assert compact == [
        {"type": "compact", "sessionId": str(session.pk), "instructions": instructions}
    ]
    assert instructions in _summary_request(llm)
    page.reload()  # compacted: no longer asked
    expect(page.locator("#chat")).to_have_attribute("data-ws", "open")
    expect(callout).to_have_count(0)


def test_ask_mode_compact_now_on_a_phone(page: Page, data, daphne_url, llm) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    user, agent = _setup(data, "askphone", compaction_mode="ask")
    session = data.session(owner=user, agent=agent, rows=conversation(6, chars=1100))
    data.login(page.context, user, daphne_url)
    frames = record_frames(page)
    open_chat(page, session)
    _send(page, "还在吗？")
    callout = page.locator('#compaction-suggestion [data-testid="compaction-suggested"]')
    expect(callout).to_be_visible()
    _inside_viewport(page, callout)
    callout.locator("[data-suggest-compact]").click()
    expect(callout).to_have_count(0)
    expect(_done(page)).to_have_count(1)
    compact = [without_headers(f) for f in frames if f.get("type") == "compact"]
    assert compact == [{"type": "compact", "sessionId": str(session.pk)}]
