"""Preview before applying (issue 17 item 6) in a real browser: ``/compact --preview``
opens the drawer with the summary; it is edited and accepted (the compaction bubble comes,
and the summary drawer shows the edited text), or discarded (nothing is applied).

The page is in zh-CN, but the preview's own strings may not be compiled into the Chinese
catalogue yet: the test finds them by role, id and data attributes, not by their words."""

from __future__ import annotations

import json
from typing import Any

from playwright.sync_api import Page, expect

from agents.models import CompactionPreview, CompactionRecord
from tests.e2e.support import AUX_MODEL, MAIN_MODEL, conversation
from tests.support.chat_page import open_chat, record_frames, without_headers

GOAL = "把 src/app/main.py 拆分成模块"
PATHS = ["src/app/main.py", "src/app/config.py"]
EDITED = "## 目标\n拆分 src/app/main.py（已人工确认）\n\n## 下一步\n先抽出 cli 模块。"


def _setup(data: Any):
    user = data.user("preview")
    agent = data.agent(
        model_channel=data.channel(context_window=4000),
        auxiliary_model_channel=data.aux_channel(),
    )
    rows = conversation(8, chars=300, goal=GOAL, paths=PATHS)
    return user, data.session(owner=user, agent=agent, title="预览压缩", rows=rows)


def _send(page: Page, text: str) -> None:
    box = page.get_by_label("输入消息")
    box.fill(text)
    box.press("Enter")


def _done_bubble(page: Page):
    return page.locator('#messages [data-event="compaction_done"]')


def test_preview_edit_and_accept(page: Page, data, daphne_url, llm, readme_shot) -> None:
    user, session = _setup(data)
    sid = str(session.pk)
    data.login(page.context, user, daphne_url)
    sent = record_frames(page)
    open_chat(page, session)
    _send(page, "/compact --preview 保留文件路径")

    dialog = page.locator("#summary-drawer [role=dialog]")
    expect(dialog).to_be_visible()
    expect(dialog.locator(".preview-summary")).to_contain_text(GOAL)
    expect(page.locator("#compaction-pending")).to_have_count(0)
    assert without_headers(sent[0]) == {
        "type": "compact",
        "sessionId": sid,
        "preview": True,
        "instructions": "保留文件路径",
    }
    assert "保留文件路径" in json.dumps(llm.requests_for(AUX_MODEL)[0].body, ensure_ascii=False)
    assert llm.requests_for(MAIN_MODEL) == []
    expect(_done_bubble(page)).to_have_count(0)  # nothing applied yet
    preview = CompactionPreview.objects.get(session=session)
    expect(page.locator("#summary-drawer")).to_have_attribute("data-preview-id", str(preview.pk))
    readme_shot(page, "compaction-preview", docs="compaction-preview")

    box = page.locator("#preview-summary-text")
    expect(box).to_be_focused()
    box.fill(EDITED)
    dialog.locator("[data-preview-accept]").click()
    expect(dialog).to_have_count(0)  # the drawer closed
    expect(_done_bubble(page)).to_have_count(1)
    accept = without_headers(sent[-1])
    assert accept == {
        "type": "preview_accept",
        "sessionId": sid,
        "previewId": str(preview.pk),
        "summary": EDITED,
    }
    assert len(llm.requests_for(AUX_MODEL)) == 1  # the accept called no model
    record = CompactionRecord.objects.get(session=session)
    assert (record.status, record.reason, len(record.edits)) == ("done", "previewed", 1)

    _done_bubble(page).locator("[data-open-summary]").click()
    summary = page.locator("#summary-drawer [role=dialog]")
    expect(summary).to_contain_text("已人工确认")
    # the summary the drawer shows is the edited one (the model's text is only in the edit
    # history's "text before")
    text = summary.locator("[data-summary-text]")
    expect(text).to_contain_text("已人工确认")
    expect(text).not_to_contain_text("保持公开 API 不变")


def test_preview_from_the_button_then_discard(page: Page, data, daphne_url, llm) -> None:
    user, session = _setup(data)
    data.login(page.context, user, daphne_url)
    sent = record_frames(page)
    open_chat(page, session)
    parse = "raw => window.NetaClaw.parseSlashCommand(raw).frame"
    assert page.evaluate(parse, "/compact --preview") == {"type": "compact", "preview": True}
    assert page.evaluate(parse, "/compact  --preview  路径 ") == {
        "type": "compact",
        "preview": True,
        "instructions": "路径",
    }
    assert page.evaluate(parse, "/compact --previews") == {
        "type": "compact",
        "instructions": "--previews",
    }
    page.locator("#compact-preview-button").click()
    dialog = page.locator("#summary-drawer [role=dialog]")
    expect(dialog).to_be_visible()
    assert without_headers(sent[0]) == {
        "type": "compact",
        "sessionId": str(session.pk),
        "preview": "true",
    }
    preview = CompactionPreview.objects.get(session=session)
    dialog.locator("[data-preview-discard]").click()
    expect(dialog).to_have_count(0)
    assert without_headers(sent[-1]) == {
        "type": "preview_discard",
        "sessionId": str(session.pk),
        "previewId": str(preview.pk),
    }
    expect(page.locator("#summary-drawer")).to_be_hidden()
    for _ in range(50):  # the socket handles the frame after the page sent it
        if not CompactionPreview.objects.filter(pk=preview.pk).exists():
            break
        page.wait_for_timeout(100)
    assert not CompactionPreview.objects.filter(pk=preview.pk).exists()
    expect(_done_bubble(page)).to_have_count(0)
    record = CompactionRecord.objects.get(session=session)
    assert (record.status, record.reason) == ("cancelled", "preview_discarded")
