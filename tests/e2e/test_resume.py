"""Issue 24 in Chromium: a page reloaded mid-answer shows the answer from its first
sentence (its socket resumes by itself on every connect), then the rest as it streams."""

from __future__ import annotations

import pytest

pytest.importorskip("runs.runner", reason="durable runs have not landed yet")
from playwright.sync_api import Page, expect

from scripted_llm import Reply
from tests.support.chat_page import open_chat

ANSWER = "".join(f"第{i}句，写得很慢。" for i in range(1, 121))


def test_a_reload_mid_answer_shows_the_answer_from_its_first_sentence(
    page: Page, data, daphne_url, llm
) -> None:
    user = data.user("reload")
    session = data.session(owner=user, agent=data.agent(model_channel=data.channel()))
    data.login(page.context, user, daphne_url)
    open_chat(page, session)
    llm.queue_main(Reply(text=ANSWER, chunk_size=6, delay_per_chunk=0.08))
    box = page.get_by_label("输入消息")
    box.fill("慢慢讲")
    box.press("Enter")
    stream = page.locator("#stream-text")
    expect(stream).to_contain_text("第5句")  # a good part of it has streamed
    page.reload()
    expect(page.locator("#stream-text")).to_contain_text("第1句，写得很慢。")
    expect(page.locator("#stream-text")).to_contain_text("第2句")
    answer = page.locator("#messages article[data-role=assistant]")
    expect(answer).to_have_count(1, timeout=30_000)  # stored once, whole
    expect(answer).to_contain_text("第1句，写得很慢。")
    expect(answer).to_contain_text("第120句")
