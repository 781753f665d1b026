"""Issue 26 item 4 in Chromium, at 1280 and 390 px: the paperclip, a drop and a paste put
files into the chat's workspace; they wait as chips, the message shows them, the agent is
told; a file over the limit is refused with a clear message and nothing is attached."""

from __future__ import annotations

import pytest

pytest.importorskip("agents.runtime", reason="the agent runtime has not landed yet")
from playwright.sync_api import Page, expect

from tests.e2e.support import MAIN_MODEL, conversation, request_text

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 820}

DROP = """([name, text]) => {
  const data = new DataTransfer();
  data.items.add(new File([text], name, {type: "text/plain"}));
  const target = document.querySelector("#messages");
  for (const type of ["dragover", "drop"]) {
    target.dispatchEvent(new DragEvent(type, {dataTransfer: data, bubbles: true, cancelable: true}));
  }
}"""

PASTE = """([name, text]) => {
  const data = new DataTransfer();
  data.items.add(new File([text], name, {type: "text/plain"}));
  const box = document.querySelector("#chat-input");
  box.dispatchEvent(new ClipboardEvent("paste", {clipboardData: data, bubbles: true, cancelable: true}));
}"""


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop-light", "phone-dark"])
def test_files_attach_by_paperclip_drop_and_paste(
    page: Page, data, daphne_url, llm, size, readme_shot
) -> None:
    page.set_viewport_size(size)
    page.emulate_media(color_scheme="dark" if size is PHONE else "light")  # both themes
    user = data.user("attacher")
    chat = data.session(
        owner=user,
        agent=data.agent(model_channel=data.channel()),
        title="附件",
        rows=conversation(2),
    )
    data.login(page.context, user, daphne_url)
    page.goto(f"/chat/{chat.pk}/")
    expect(page.locator("#chat")).to_have_attribute("data-ws", "open")

    page.locator("#attach-input").set_input_files(
        [{"name": "data.csv", "mimeType": "text/csv", "buffer": b"a,b\n1,2\n"}]
    )
    pending = page.locator("#attachments-pending [data-pending-attachment]")
    expect(pending).to_have_count(1)
    page.evaluate(DROP, ["dropped.txt", "dropped file"])
    expect(pending).to_have_count(2)
    page.evaluate(PASTE, ["pasted.txt", "pasted file"])
    expect(pending).to_have_count(3)
    # × drops one from the message (it stays in the workspace)
    pending.filter(has_text="pasted.txt").locator("[data-remove-attachment]").click()
    expect(pending).to_have_count(2)
    assert page.evaluate("document.documentElement.scrollWidth") <= size["width"]
    if size is DESKTOP:
        readme_shot(page, "attachments-pending", docs="chat-attachments")

    box = page.get_by_label("输入消息")
    box.fill("看看这些文件")
    box.press("Enter")
    expect(pending).to_have_count(0)
    sent = page.locator("#messages article[data-role=user]").last
    expect(sent.locator("[data-attachment]")).to_have_count(2)
    expect(sent).to_contain_text("data.csv")
    expect(page.locator("#messages article[data-role=assistant]").last).to_contain_text("收到")
    told = request_text(llm.requests_for(MAIN_MODEL)[-1].body)
    assert "attachments/data.csv" in told and "attachments/dropped.txt" in told
    assert "attachments/pasted.txt" not in told
    # after a reload the message still shows its files
    page.reload()
    expect(
        page.locator("#messages article[data-role=user]").last.locator("[data-attachment]")
    ).to_have_count(2)


def test_a_file_over_the_limit_is_refused_with_a_clear_message(
    page: Page, data, daphne_url, browser_problems
) -> None:
    user = data.user("toobig")
    chat = data.session(owner=user, agent=data.agent(model_channel=data.channel()), title="大文件")
    data.login(page.context, user, daphne_url)
    page.goto(f"/chat/{chat.pk}/")
    expect(page.locator("#chat")).to_have_attribute("data-ws", "open")
    page.locator("#attach-input").set_input_files(
        [{"name": "huge.bin", "mimeType": "application/octet-stream", "buffer": b"x" * 10_000_001}]
    )
    expect(page.locator("#slash-hint")).to_contain_text("huge.bin")
    expect(page.locator("#attachments-pending [data-pending-attachment]")).to_have_count(0)
    # the 413 the browser logs is this test's own doing
    browser_problems[:] = [p for p in browser_problems if "413" not in p]
