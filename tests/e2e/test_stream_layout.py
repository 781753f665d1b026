"""Issue 26 item 8, at 1280 and 390 px: a finished streaming answer stays where it streamed —
the stored message that replaces the live bubble has the same left edge and width (it
jumped 70 px sideways)."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("agents.runtime", reason="the agent runtime has not landed yet")
from playwright.sync_api import Page, expect

from scripted_llm import Reply

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 820}
ANSWER = (
    "第一段：先把命令行解析抽成 cli.py，再把配置加载放进 config.py，最后让 main.py 只负责组装。" * 3
)

BOX = """(selector) => {
  const el = document.querySelector(selector);
  if (!el) return null;
  const r = el.getBoundingClientRect();
  return {left: Math.round(r.left), width: Math.round(r.width), top: Math.round(r.top)};
}"""


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop-light", "phone-dark"])
def test_a_finished_answer_does_not_jump(page: Page, data, daphne_url, llm, size) -> None:
    page.set_viewport_size(size)
    page.emulate_media(color_scheme="dark" if size is PHONE else "light")  # both themes
    user = data.user("steady")
    chat = data.session(owner=user, agent=data.agent(model_channel=data.channel()), title="稳")
    data.login(page.context, user, daphne_url)
    page.goto(f"/chat/{chat.pk}/")
    expect(page.locator("#chat")).to_have_attribute("data-ws", "open")
    llm.queue_main(Reply(text=ANSWER, chunk_size=12, delay_per_chunk=0.15))
    box = page.get_by_label("输入消息")
    box.fill("怎么拆分 main.py？")
    box.press("Enter")
    expect(page.locator("#stream-text")).to_contain_text("第一段")
    expect(page.locator("#stream-text")).to_have_text(re.compile(r"^[\s\S]{60,}$"))
    streaming = {
        "avatar": page.evaluate(BOX, "#stream-bubble .avatar"),
        "text": page.evaluate(BOX, "#stream-bubble .bubble"),
    }
    stored = page.locator("#messages article[data-role=assistant]")
    expect(stored).to_have_count(1, timeout=20_000)
    expect(page.locator("#stream-text")).to_be_empty()
    after = {
        "avatar": page.evaluate(BOX, "#messages article[data-role=assistant] .avatar"),
        "text": page.evaluate(BOX, "#messages article[data-role=assistant] .bubble"),
    }
    for part in ("avatar", "text"):
        assert abs(after[part]["left"] - streaming[part]["left"]) <= 1, (part, streaming, after)
        assert abs(after[part]["width"] - streaming[part]["width"]) <= 1, (part, streaming, after)
