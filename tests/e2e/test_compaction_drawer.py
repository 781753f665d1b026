"""The compaction bubble and the summary drawer in a real browser (issue 17 items 1, 3, 6,
7, 12): Undo from the bubble, the drawer's instructions and "what this compaction
dropped" with a pin, editing a summary, and the summary streaming into the pending bubble.

The page is in English (the language cookie): these strings are new, and the Chinese
catalogue is compiled once for everyone later.
"""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import Page, expect

from agents.models import ChatSession, CompactionRecord, CompactionStatus, Message
from condense.prompts import SUMMARY_PREFIX
from scripted_llm import Reply
from tests.e2e.support import AUX_MODEL, conversation
from tests.support.chat_page import record_frames, without_headers

GOAL = "把 src/app/main.py 拆分成模块"
PATHS = ["src/app/main.py", "src/app/config.py", "tests/test_main.py"]
# enough turns that a summary gains (a shorter middle ends with no_gain: issue 25)
TURNS = 8
PORT_NOTE = "注意：代理监听端口 8443 ，构建号 build_7731 ，别忘了。"  # facts no summary keeps

# A structured summary, long enough to stream for a few seconds in small pieces.
STREAMED_SUMMARY = "\n".join(
    [
        "## 目标",
        GOAL,
        "## 约束与偏好",
        "保持公开 API 不变；每一步都先写测试。",
        "## 进度",
        "### 已完成",
        "阅读了现有代码并确定了拆分方案。" * 4,
        "### 进行中",
        "拆分模块。",
        "## 相关文件",
        *[f"- {p}" for p in PATHS],
        "## 下一步",
        "继续拆分并补齐测试。" * 6,
        "## 关键上下文",
        "这是端到端测试写的流式摘要，用来检查摘要在写出的同时就显示在等待气泡里。" * 3,
    ]
)


def _english(page: Page, daphne_url: str) -> None:
    page.context.add_cookies([{"name": "django_language", "value": "en", "url": daphne_url}])


def _setup(data: Any, **agent: Any) -> tuple[Any, ChatSession]:
    user = data.user("drawer")
    agent_row = data.agent(
        model_channel=data.channel(context_window=4000),
        auxiliary_model_channel=data.aux_channel(),
        **agent,
    )
    rows = conversation(TURNS, chars=300, goal=GOAL, paths=PATHS)
    rows[3]["content"] += PORT_NOTE  # turn 1's answer: past the protected head, summarized
    session = data.session(owner=user, agent=agent_row, title="拆分 main.py", rows=rows)
    return user, session


def _open(page: Page, data: Any, daphne_url: str, user: Any, session: ChatSession) -> None:
    data.login(page.context, user, daphne_url)
    _english(page, daphne_url)
    page.goto(f"/chat/{session.pk}/")
    expect(page.locator("#chat")).to_have_attribute("data-ws", "open")


def _compact(page: Page, command: str = "/compact") -> None:
    box = page.get_by_label("Message", exact=True)
    box.fill(command)
    box.press("Enter")
    expect(_done_bubble(page)).to_have_count(1)


def _done_bubble(page: Page):
    return page.locator('#messages [data-event="compaction_done"]')


def _articles(page: Page, role: str):
    return page.locator(f"#messages article[data-role={role}]")


def _open_drawer(page: Page):
    _done_bubble(page).get_by_role("link", name="View summary").click()
    dialog = page.get_by_role("dialog", name="Compaction summary")
    expect(dialog).to_be_visible()
    return dialog


def test_undo_from_the_bubble_restores_the_messages_in_place(
    page: Page, data, daphne_url, llm, readme_shot
) -> None:
    user, session = _setup(data)
    _open(page, data, daphne_url, user, session)
    sent = record_frames(page)
    page.reload()  # the socket is recorded from its start
    expect(page.locator("#chat")).to_have_attribute("data-ws", "open")
    originals = [m.pk for m in session.messages.order_by("position")]
    expect(_articles(page, "user")).to_have_count(TURNS)
    _compact(page)
    page.reload()  # the compacted view: the summary in place of the messages it replaced
    expect(page.locator("#chat")).to_have_attribute("data-ws", "open")
    expect(_articles(page, "summary")).to_have_count(1)
    kept = _articles(page, "user").count() + _articles(page, "assistant").count()
    assert kept < len(originals)
    record = CompactionRecord.objects.get(session=session, status=CompactionStatus.DONE)
    page.evaluate("window.__notReloaded = true")

    undo = _done_bubble(page).get_by_role("button", name="Undo")
    expect(undo).to_be_visible()
    readme_shot(page, "compaction-bubble-undo", docs="chat-compaction-undo")
    undo.click()

    expect(page.locator("#notices")).to_contain_text(
        f"Compaction undone: {len(originals) - kept} messages are back in the context."
    )
    expect(_articles(page, "summary")).to_have_count(0)
    expect(_articles(page, "user")).to_have_count(TURNS)
    expect(_articles(page, "assistant")).to_have_count(TURNS)
    shown = page.locator(
        "#messages article[data-role=user], #messages article[data-role=assistant]"
    )
    assert [int(i.removeprefix("msg-")) for i in shown.evaluate_all("l => l.map(e => e.id)")] == (
        originals
    )  # each in its place
    bubble = _done_bubble(page)
    expect(bubble.locator("[data-undone]")).to_have_text("undone")
    expect(bubble.get_by_role("button", name="Undo")).to_have_count(0)
    assert page.evaluate("window.__notReloaded") is True  # no page load: the list was swapped
    undo_frames = [without_headers(f) for f in sent if f.get("type") == "undo"]
    assert undo_frames == [
        {"type": "undo", "sessionId": str(session.pk), "compactionId": str(record.pk)}
    ]
    record.refresh_from_db()
    assert record.status == CompactionStatus.UNDONE
    assert (
        not Message.objects.filter(session=session, pk__in=originals)
        .exclude(compacted_at=None)
        .exists()
    )


def test_only_the_newest_bubble_offers_undo_and_an_older_one_is_refused(
    page: Page, data, daphne_url, llm
) -> None:
    user, session = _setup(data)
    _open(page, data, daphne_url, user, session)
    _compact(page)
    for _ in range(3):  # enough new messages for a second compaction
        box = page.get_by_label("Message", exact=True)
        box.fill("继续下一步，顺便说明理由，越详细越好。" * 8)
        box.press("Enter")
        expect(page.locator("#turn-status")).to_have_attribute("data-busy", "false")
    page.get_by_role("button", name="/compact").click()
    expect(_done_bubble(page)).to_have_count(2)
    expect(_done_bubble(page).first.get_by_role("button", name="Undo")).to_be_hidden()
    expect(_done_bubble(page).last.get_by_role("button", name="Undo")).to_be_visible()
    # an older bubble's frame (a stale page) is refused with a notice
    first = _done_bubble(page).first
    first.locator("[data-undo-form]").evaluate("f => { f.hidden = false; }")
    first.get_by_role("button", name="Undo").click()
    expect(page.locator('#notices [data-reason="not_latest"]')).to_contain_text(
        "Only the latest compaction that is still in effect can be undone"
    )
    assert CompactionRecord.objects.filter(session=session, status="undone").count() == 0


def test_the_drawer_shows_the_instructions_and_what_was_dropped_and_pins_it_back(
    page: Page, data, daphne_url, llm, readme_shot
) -> None:
    user, session = _setup(data, compaction_instructions="Keep every port number.")
    _open(page, data, daphne_url, user, session)
    _compact(page, "/compact focus on the deployment")
    page.reload()  # the compacted view, without the summarized originals
    expect(page.locator("#chat")).to_have_attribute("data-ws", "open")
    record = CompactionRecord.objects.get(session=session, status=CompactionStatus.DONE)
    port = next(f for f in record.dropped if f["value"] == "8443")
    original = port["messageId"]
    assert Message.objects.get(pk=original).content.endswith(PORT_NOTE)

    dialog = _open_drawer(page)
    instructions = dialog.locator("[data-drawer-instructions]")
    expect(instructions).to_contain_text("Instructions this summary was written with")
    expect(instructions).to_contain_text("Keep every port number.")
    expect(instructions).to_contain_text("focus on the deployment")
    dropped = dialog.locator("[data-drawer-dropped]")
    expect(dropped).to_contain_text("What this compaction dropped")
    item = dropped.locator(f"#drawer-dropped-{original}")
    expect(item.locator("code", has_text="8443")).to_be_visible()
    expect(item.locator("code", has_text="build_7731")).to_be_visible()
    values = [f["value"] for f in record.dropped]
    expect(dropped.locator("code")).to_have_count(len(values))
    # the link to the original shows it inline
    item.get_by_role("link", name=f"Message #{original}").click()
    expect(item.locator(f"#drawer-original-{original}")).to_contain_text("8443")
    readme_shot(page, "summary-drawer-dropped", docs="summary-drawer-dropped")
    expect(page.locator(f"#msg-{original}")).to_have_count(0)  # compacted away

    item.get_by_role("button", name="Pin").click()
    expect(item.locator("[data-pinned]")).to_have_text("pinned")
    expect(item.get_by_role("button", name="Pin")).to_have_count(0)
    back = Message.objects.get(pk=original)
    assert back.pinned and back.compacted_at is None
    # the page's list shows it again, in its place, without a reload
    expect(page.locator(f"#messages #msg-{original}")).to_have_count(1)
    page.keyboard.press("Escape")
    expect(page.get_by_role("dialog")).to_have_count(0)


def test_editing_the_summary_in_the_drawer_persists_and_lists_the_edit(
    page: Page, data, daphne_url, llm
) -> None:
    user, session = _setup(data)
    _open(page, data, daphne_url, user, session)
    _compact(page)
    dialog = _open_drawer(page)
    expect(dialog.locator("[data-drawer-edits]")).to_have_count(0)
    dialog.locator("[data-edit-summary]").click()
    editor = dialog.get_by_label("Summary text (Markdown)")
    expect(editor).to_have_value(re.compile(r"^## 目标"))
    editor.fill("## 目标\n按模块拆分 main.py，端口 8443 保持不变。\n## 下一步\n先写测试。")
    dialog.get_by_role("button", name="Save summary").click()

    dialog = page.get_by_role("dialog", name="Compaction summary")
    expect(dialog.locator("[data-edit-saved]")).to_be_visible()
    expect(dialog.locator("[data-summary-text]")).to_contain_text("端口 8443 保持不变")
    history = dialog.locator("[data-drawer-edits]")
    expect(history).to_contain_text("Edit history")
    expect(history.locator("[data-edit]")).to_have_count(1)
    expect(history.locator("[data-edit]")).to_contain_text(f"Edited by {user.username}")
    summary = Message.objects.get(session=session, is_compaction_summary=True)
    assert summary.content.startswith(SUMMARY_PREFIX)
    assert "端口 8443 保持不变" in summary.content
    record = CompactionRecord.objects.get(summary_message=summary)
    assert [e["by"] for e in record.edits] == [user.username]

    page.keyboard.press("Escape")  # it persists: a fresh page shows the edited text
    page.reload()
    dialog = _open_drawer(page)
    expect(dialog.locator("[data-summary-text]")).to_contain_text("端口 8443 保持不变")
    expect(dialog.locator("[data-drawer-edits] [data-edit]")).to_have_count(1)


def test_the_summary_streams_into_the_pending_bubble(
    page: Page, data, daphne_url, llm, readme_shot
) -> None:
    user, session = _setup(data)
    llm.queue_aux(Reply(text=STREAMED_SUMMARY, chunk_size=12, delay_per_chunk=0.08))
    _open(page, data, daphne_url, user, session)
    box = page.get_by_label("Message", exact=True)
    box.fill("/compact")
    box.press("Enter")
    progress = page.locator("#compaction-pending #compaction-progress")
    expect(progress).to_be_visible()
    expect(progress).to_contain_text("Summary so far")
    expect(progress.locator("[data-progress-text]")).to_contain_text("## 目标")
    assert _done_bubble(page).count() == 0  # before compaction_done
    first = progress.locator("[data-progress-text]").inner_text()
    assert len(first) < len(STREAMED_SUMMARY)  # part of it: it is still being written
    readme_shot(page, "compaction-streaming", docs="chat-compaction-streaming")
    expect(progress).not_to_contain_text("part")  # one request: no "part i of n"
    expect(_done_bubble(page)).to_have_count(1)
    expect(page.locator("#compaction-pending")).to_have_count(0)
    assert len(llm.requests_for(AUX_MODEL)) == 1
