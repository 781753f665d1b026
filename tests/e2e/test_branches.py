"""Issue 26 item 1 in Chromium, at 1280 and 390 px: Regenerate answers again and keeps the
first answer behind a switch, Edit sends a message again and keeps the earlier turn, and
the full history shows the versions set aside."""

from __future__ import annotations

import pytest

pytest.importorskip("agents.runtime", reason="the agent runtime has not landed yet")
from playwright.sync_api import Page, expect

from scripted_llm import Reply
from tests.e2e.support import MAIN_MODEL

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 820}
ROWS = [
    {"role": "user", "content": "第一个问题：怎么拆分 main.py？"},
    {"role": "assistant", "content": "先把命令行解析抽到 cli.py。"},
    {"role": "user", "content": "第二个问题：测试放哪里？"},
    {"role": "assistant", "content": "放在 tests/ 目录，按模块分文件。"},
]


def _open(page: Page, data, daphne_url, size) -> tuple[object, list[int]]:
    page.set_viewport_size(size)
    page.emulate_media(color_scheme="dark" if size is PHONE else "light")  # both themes
    user = data.user("brancher")
    agent = data.agent(name="分支助手", model_channel=data.channel())
    chat = data.session(owner=user, agent=agent, title="分支", rows=ROWS)
    ids = list(chat.messages.order_by("position").values_list("pk", flat=True))
    data.login(page.context, user, daphne_url)
    page.goto(f"/chat/{chat.pk}/")
    expect(page.locator("#chat")).to_have_attribute("data-ws", "open")
    return chat, ids


def _no_sideways_scroll(page: Page) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"], width


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop-light", "phone-dark"])
def test_regenerate_keeps_the_first_answer_behind_a_switch(
    page: Page, data, daphne_url, llm, size, readme_shot
) -> None:
    chat, (q1, a1, q2, a2) = _open(page, data, daphne_url, size)
    llm.queue_main(Reply(text="更好的回答：用 pytest 的 tests/unit 与 tests/e2e。", chunk_size=5))
    page.locator(f"#msg-{a2} [data-regenerate]").click()
    expect(page.locator(f"#msg-{a2}")).to_have_count(0)
    answers = page.locator("#messages .msg-assistant .bubble")
    expect(answers.last).to_contain_text("更好的回答", timeout=20_000)
    switch = page.locator(f"#msg-{q2} [data-branch-switch]")
    expect(switch.locator("[data-branch-count]")).to_have_text("回答 2 / 2")
    _no_sideways_scroll(page)
    if size is DESKTOP:
        readme_shot(page, "branches-regenerated", docs="chat-regenerate-versions")

    switch.locator("[data-branch-previous]").click()
    expect(page.locator(f"#msg-{a2}")).to_be_visible()
    expect(page.locator("#messages")).not_to_contain_text("更好的回答")
    switch = page.locator(f"#msg-{q2} [data-branch-switch]")
    expect(switch.locator("[data-branch-count]")).to_have_text("回答 1 / 2")
    expect(switch.locator("[data-branch-previous]")).to_be_disabled()

    # the full history shows the answer set aside under the question it answers
    switch.locator("[data-branch-next]").click()
    expect(page.locator("#messages")).to_contain_text("更好的回答")
    page.goto(f"/chat/{chat.pk}/?view=full")
    others = page.locator(f"#msg-{q2} [data-other-versions]")
    expect(others).to_have_count(1)
    others.locator("summary").click()
    expect(others.locator(f"#msg-{a2}")).to_contain_text("放在 tests/ 目录")
    _no_sideways_scroll(page)


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop-light", "phone-dark"])
def test_edit_sends_the_message_again_and_keeps_the_earlier_turn(
    page: Page, data, daphne_url, llm, size
) -> None:
    chat, (q1, a1, q2, a2) = _open(page, data, daphne_url, size)
    llm.queue_main(Reply(text="那就先拆出 config.py。"))
    page.locator(f"#msg-{q1} [data-edit]").click()
    box = page.locator(f"#msg-{q1} textarea[name=content]")
    expect(box).to_have_value(ROWS[0]["content"])
    _no_sideways_scroll(page)
    box.fill("第一个问题（改）：先拆配置？")
    page.locator(f"#msg-{q1} [data-edit-send]").click()
    for gone in (q1, a1, q2, a2):
        expect(page.locator(f"#msg-{gone}")).to_have_count(0)
    edited = page.locator("#messages .msg-user").last
    expect(edited).to_contain_text("第一个问题（改）：先拆配置？")
    expect(edited.locator("[data-branch-count]")).to_have_text("2 / 2")
    expect(page.locator("#messages .msg-assistant").last).to_contain_text(
        "那就先拆出 config.py", timeout=20_000
    )
    request = llm.requests_for(MAIN_MODEL)[-1].body["messages"]
    assert [m["content"] for m in request if m["role"] == "user"] == [
        "第一个问题（改）：先拆配置？"
    ]

    edited.locator("[data-branch-previous]").click()
    expect(page.locator(f"#msg-{a2}")).to_be_visible()
    expect(page.locator(f"#msg-{q1} [data-branch-count]")).to_have_text("1 / 2")
    # the reload keeps it: the switch is the stored state, not the page's
    page.reload()
    expect(page.locator(f"#msg-{q1} [data-branch-count]")).to_have_text("1 / 2")
    expect(page.locator("#messages")).not_to_contain_text("先拆配置")
