"""channels_app.html_encoder: one frame per event, swapped out-of-band by id."""

from __future__ import annotations

import typing

import pytest
from django.utils import translation

from agents import events, reasons
from agents.events import (
    CompactionDone,
    CompactionFailed,
    CompactionSkipped,
    CompactionStart,
    Delta,
    ErrorEvent,
    MessageStored,
    TokenUpdate,
    TurnDone,
)
from agents.message_format import message_to_json
from agents.reasons import REASONS
from agents.services import compaction_apply, message_append
from channels_app.html_encoder import render_event_html
from tests.support.event_records import system_event_append
from tests.ui.html import Node, parse

SID = "7d3b3c8e-6a43-4a4b-9d0c-5b8f0f7f2d11"
HOSTILE = '<img src=x onerror="alert(1)"><script>alert(2)</script>'


def _meter(used: int, **figures: typing.Any) -> TokenUpdate:
    """A reading of ``used`` tokens of 8,000 (threshold 70%, estimated), as an event."""
    reading = {"max_tokens": 8000, "threshold_percent": 70, "estimated": True}
    reading |= {"input_tokens": 0, "output_tokens": 0, "api_calls": 0, **figures}
    return TokenUpdate(session_id=SID, used_tokens=used, **reading)


def _frame(event, language: str = "zh-hans") -> list[Node]:
    html = render_event_html(event, language=language)
    doc = parse(html)
    assert "".join(c for c in doc.children if isinstance(c, str)).strip() == ""
    return doc.elements


def _no_live_markup(nodes: list[Node]) -> None:
    for top in nodes:
        for node in [top, *top.iter()]:
            assert node.tag not in {"script", "img"}
            assert not any(name.startswith("on") for name in node.attrs)


def _tree(node: Node) -> tuple:
    attrs = tuple(sorted((k, v) for k, v in node.attrs.items() if k != "hx-swap-oob"))
    kids = tuple(
        _tree(c) if isinstance(c, Node) else " ".join(c.split())
        for c in node.children
        if isinstance(c, Node) or c.strip()
    )
    return (node.tag, attrs, kids)


def test_every_server_event_type_has_a_rendering() -> None:
    samples = {
        CompactionStart: CompactionStart(SID, "auto"),
        CompactionDone: CompactionDone(SID, 3, 9, 1000, 400),
        CompactionFailed: CompactionFailed(SID, "boom"),
        CompactionSkipped: CompactionSkipped(SID, "in_progress", "busy"),
        TokenUpdate: _meter(100, max_tokens=1000, input_tokens=10, output_tokens=5, api_calls=1),
        MessageStored: MessageStored(SID, {"id": 1, "role": "user", "content": "hi"}),
        Delta: Delta(SID, "x"),
        TurnDone: TurnDone(SID),
        ErrorEvent: ErrorEvent("bad"),
        events.SessionCreated: events.SessionCreated(SID, 3, "Plan", "Helper"),
        events.SessionUpdated: events.SessionUpdated(SID, "Plan"),
        events.SessionDeleted: events.SessionDeleted(SID),
        events.CompactionUndone: events.CompactionUndone(SID, 9, 3, 1),
        events.CompactionSuggested: events.CompactionSuggested(SID, {"usedTokens": 800}),
        events.CompactionProgress: events.CompactionProgress(SID, "## Goal", 1, 1),
        events.CompactionPreviewReady: events.CompactionPreviewReady(SID, 4, "## Goal", 3, 90, 40),
        events.MessageUpdated: events.MessageUpdated(
            SID, {"id": 1, "role": "user", "content": "hi", "pinned": True}
        ),
        events.BranchChanged: events.BranchChanged(SID, 2, "edit", 1, 2, turn=False),
    }
    assert set(typing.get_args(events.ServerEvent)) == set(samples)
    silent: set[type] = set()  # every event has an HTML rendering now (progress: issue 17)
    for cls, event in samples.items():
        if cls in silent:
            assert _frame(event) == [], cls
            continue
        nodes = _frame(event)
        assert nodes, cls
        assert all(n.id and n.get("hx-swap-oob") for n in nodes), cls


@pytest.mark.django_db
def test_user_message_is_appended_escaped(session) -> None:
    stored = message_append(session=session, role="user", content=HOSTILE)
    messages, status = _frame(MessageStored(str(session.pk), message_to_json(stored)))
    assert (messages.id, messages.get("hx-swap-oob")) == ("messages", "beforeend")
    assert (status.id, status.get("data-busy")) == ("turn-status", "true"), "its turn starts"
    (article,) = messages.elements
    assert article.id == f"msg-{stored.pk}" and article.get("data-role") == "user"
    assert HOSTILE in article.text()  # shown as text
    _no_live_markup([messages])


@pytest.mark.django_db
def test_assistant_message_is_markdown_and_clears_the_stream(session) -> None:
    stored = message_append(
        session=session,
        role="assistant",
        content=f"**done** {HOSTILE} [x](javascript:alert(1))",
        tool_calls=[{"id": "c1", "name": "write_file", "arguments": '{"path": "a.py"}'}],
    )
    messages, stream = _frame(MessageStored(str(session.pk), message_to_json(stored)))
    assert messages.id == "messages"
    article = messages.elements[0]
    assert article.select("strong")[0].text() == "done"
    assert article.select("details")[0].select("code")[0].text() == "write_file"
    assert not article.select("a", href="javascript:alert(1)")
    _no_live_markup([messages])
    assert (stream.id, stream.get("hx-swap-oob"), stream.text()) == ("stream-text", "true", "")


@pytest.mark.django_db
def test_tool_result_is_collapsible(session) -> None:
    stored = message_append(
        session=session,
        role="tool",
        content=HOSTILE,
        tool_call_id="c1",
        metadata={"toolName": "read_file", "isError": True},
    )
    (messages,) = _frame(MessageStored(str(session.pk), message_to_json(stored)))
    details = messages.select("details")[0]
    assert "is-error" in details.classes and HOSTILE in details.text()


def test_delta_appends_escaped_text() -> None:
    (node,) = _frame(Delta(SID, HOSTILE + "\n第二行 & more"))
    assert (node.id, node.get("hx-swap-oob")) == ("stream-text", "beforeend")
    assert node.elements == [] and node.text() == HOSTILE + "\n第二行 & more"
    raw = render_event_html(Delta(SID, "<b>"), language="en")
    assert raw == '<div id="stream-text" hx-swap-oob="beforeend">&lt;b&gt;</div>'


def test_token_update_replaces_bar_and_status() -> None:
    event = TokenUpdate(
        session_id=SID,
        input_tokens=1200,
        output_tokens=300,
        api_calls=4,
        used_tokens=5800,
        max_tokens=8000,
        threshold_percent=70,
        estimated=False,
        compaction_count=2,
        tool_tokens=90,
    )
    bar, status, alert, toggle, item_toggle, pending, flag = _frame(event)
    assert (alert.id, alert.elements) == ("meter-alert", [])  # within the window
    # compacted twice: the header's Compacted / Full and the list item's toggle, live
    assert (toggle.id, toggle.get("hx-swap-oob")) == ("chat-view-toggle", "true")
    assert [a.text().strip() for a in toggle.select("a")] == ["压缩", "完整"]
    assert item_toggle.id == f"session-toggle-{SID}"
    assert item_toggle.select("a")[0].get("href") == f"/chat/{SID}/?view=full"
    never = _frame(_meter(10, compaction_count=0))
    assert [n.select("a") for n in never if n.id.startswith(("chat-view", "session-toggle"))] == [
        [],
        [],
    ]
    assert (pending.id, pending.elements, flag.get("data-compacting")) == (
        "compaction-status",
        [],
        "false",
    )
    assert (bar.id, bar.get("hx-swap-oob"), bar.get("role")) == ("token-bar", "true", "progressbar")
    assert (bar.get("aria-valuenow"), bar.get("aria-valuemax"), bar.get("aria-valuemin")) == (
        "5800",
        "8000",
        "0",
    )
    assert bar.get("data-state") == "warn"  # 72.5%: past the threshold, under 90%
    assert bar.has_class("token-fill")[0].get("style") == "width: 72.50%"
    assert "自动压缩阈值 70%" in bar.text()
    assert (status.id, status.get("hx-swap-oob")) == ("meter-status", "true")
    text = " ".join(status.text().split())
    assert "5,800/8,000 tokens · 阈值 70% · 已压缩 2 次" in text
    assert "输入 1,200 · 输出 300 · 工具 90 tokens · 4 次 API 调用" in text
    en = " ".join(_frame(event, "en")[1].text().split())
    # a reading taken while the lease is held keeps the page in the compacting state
    compacting = _meter(10, compacting=True)
    *_, pending, flag = _frame(compacting)
    assert pending.by_id("compaction-pending") is not None
    assert flag.get("data-compacting") == "true"
    assert "5,800/8,000 tokens · threshold 70% · compacted 2 times" in en


@pytest.mark.parametrize(("used", "state"), [(100, "ok"), (7000, "warn"), (7201, "danger")])
def test_token_bar_states(used: int, state: str) -> None:
    bar, *_ = _frame(_meter(used))
    assert bar.get("data-state") == state and f"state-{state}" in bar.classes


def test_token_bar_never_overflows() -> None:
    bar, *_ = _frame(_meter(12000))
    assert bar.has_class("token-fill")[0].get("style") == "width: 100.00%"
    assert bar.get("aria-valuenow") == "12000"


def test_compaction_start_shows_the_pending_bubble_and_compacting_state() -> None:
    status, flag = _frame(CompactionStart(SID, "auto"))
    assert (status.id, status.get("hx-swap-oob")) == ("compaction-status", "true")
    pending = status.by_id("compaction-pending")
    assert pending is not None and pending.get("role") == "status"
    assert pending.text().strip() == "正在压缩上下文..."
    assert (flag.id, flag.get("data-compacting"), flag.get("hx-swap-oob")) == (
        "compaction-flag",
        "true",
        "true",
    )
    assert _frame(CompactionStart(SID, "manual"), "en")[0].text().strip() == "Compacting context..."


@pytest.mark.django_db
def test_compaction_done_replaces_pending_with_the_stored_bubble(zh_client, session) -> None:
    messages = [message_append(session=session, role="user", content=f"m{i}") for i in range(5)]
    applied = compaction_apply(
        session=session,
        compacted_ids=[m.pk for m in messages[1:4]],
        pruned_ids=[],
        summary_content="## 目标\nx",
        pruned_token_estimate=0,
        event_content="上下文已压缩",
        event_payload={
            "status": "done",
            "removedCount": 3,
            "tokensBefore": 4000,
            "tokensAfter": 1000,
        },
    )
    event = CompactionDone(
        session_id=str(session.pk),
        removed_count=3,
        summary_message_id=applied.summary_message.pk,
        tokens_before=4000,
        tokens_after=1000,
        event_message=message_to_json(applied.event_message),
    )
    status, flag, appended = _frame(event)
    assert status.id == "compaction-status" and status.elements == []
    assert flag.get("data-compacting") == "false"
    assert (appended.id, appended.get("hx-swap-oob")) == ("messages", "beforeend")
    (bubble,) = appended.elements
    assert bubble.id == f"msg-{applied.event_message.pk}"
    assert (
        " ".join(bubble.text().split())
        == "✓ 上下文已压缩 · 移除 3 条消息 · 节省 75% token 查看摘要"
    )
    link = bubble.select("a")[0]
    assert link.get("hx-get") == f"/chat/{session.pk}/summary/{applied.summary_message.pk}/"
    # the stored record renders exactly as the live one
    page = parse(zh_client.get(f"/chat/{session.pk}/").content)
    assert _tree(page.by_id(bubble.id)) == _tree(bubble)


def test_compaction_done_without_a_stored_bubble_still_says_what_happened() -> None:
    *_, appended = _frame(CompactionDone(SID, 2, None, 1000, 600), "en")
    text = " ".join(appended.text().split())
    assert "Context compacted · removed 2 messages · saved 40% tokens" in text
    assert not appended.select("a")  # no summary to show


@pytest.mark.django_db
def test_compaction_failed_is_escaped_and_offers_a_new_chat(zh_client, session) -> None:
    stored = system_event_append(
        session=session,
        system_type="compaction_event",
        content="failed",
        payload={"status": "failed", "error": HOSTILE, "reason": "auxiliary_error"},
    )
    event = CompactionFailed(
        str(session.pk), HOSTILE, "auxiliary_error", event_message=message_to_json(stored)
    )
    status, flag, appended = _frame(event)
    assert status.elements == [] and flag.get("data-compacting") == "false"
    (bubble,) = appended.elements
    assert bubble.get("role") == "alert" and bubble.id == f"msg-{stored.pk}"
    assert f"压缩失败：{HOSTILE} 可继续原对话或" in " ".join(bubble.text().split())
    link = bubble.select("a")[0]  # a link, not a bracketed button (issue 16 item 9)
    assert link.text() == "开新对话"
    assert link.get("href") == f"/chat/new/?from_session={session.pk}"
    _no_live_markup([appended])
    page = parse(zh_client.get(f"/chat/{session.pk}/").content)
    assert _tree(page.by_id(bubble.id)) == _tree(bubble)


def test_compaction_failed_without_a_record() -> None:
    *_, appended = _frame(CompactionFailed(SID, "未配置辅助模型", "no_auxiliary_model"))
    bubble = appended.elements[0]
    assert bubble.get("data-event") == "compaction_failed" and bubble.id is None
    assert "压缩失败：未配置辅助模型" in bubble.text()


def test_skipped_and_error_are_visible_alerts() -> None:
    (notices,) = _frame(CompactionSkipped(SID, "in_progress", "已有压缩在进行"))
    assert (notices.id, notices.get("hx-swap-oob")) == ("notices", "beforeend")
    assert notices.elements[0].get("role") == "status"
    notices, turn = _frame(ErrorEvent(HOSTILE, "a_reason_of_a_newer_server", SID))
    alert = notices.elements[0]
    assert alert.get("role") == "alert" and alert.get("data-reason") == "a_reason_of_a_newer_server"
    assert HOSTILE in alert.text()  # an unknown reason shows the event's text, escaped
    _no_live_markup([notices])
    assert (turn.id, turn.get("data-busy")) == ("turn-status", "false")


def test_turn_done_clears_the_thinking_state() -> None:
    (turn,) = _frame(TurnDone(SID))
    assert (turn.id, turn.get("hx-swap-oob"), turn.get("data-busy")) == (
        "turn-status",
        "true",
        "false",
    )


def test_language_is_per_call_and_restored() -> None:
    from django.utils import translation

    with translation.override("zh-hans"):
        assert "Compacting context..." in render_event_html(
            CompactionStart(SID, "auto"), language="en"
        )
        assert translation.get_language() == "zh-hans"


@pytest.mark.parametrize(
    ("reason", "zh", "en"),
    [
        ("no_model_channel", "此 Agent 还没有配置模型渠道", "This agent has no model channel yet"),
        ("system_prompt_too_long", "系统提示过长", "The system prompt is too long"),
        ("step_limit", "步数上限", "step limit"),
        ("auth_error", "模型服务商拒绝了 API Key", "The model provider refused the API key"),
        ("timeout", "模型未能及时响应", "The model did not answer in time"),
    ],
)
def test_known_error_reasons_are_shown_in_the_pages_language(reason, zh, en) -> None:
    event = ErrorEvent("whatever the gateway wrote", reason, SID)
    assert zh in _frame(event, "zh-hans")[0].text()
    assert en in _frame(event, "en")[0].text()


def test_a_failed_model_call_keeps_the_providers_detail() -> None:
    event = ErrorEvent(
        "The model provider refused the API key (HTTP 401): Incorrect API key provided",
        "auth_error",
        SID,
    )
    zh = " ".join(_frame(event, "zh-hans")[0].text().split())
    assert "模型服务商拒绝了 API Key（HTTP 401）：Incorrect API key provided" in zh
    en = " ".join(_frame(event, "en")[0].text().split())
    assert "The model provider refused the API key (HTTP 401): Incorrect API key provided" in en


def test_unknown_error_reason_shows_the_event_text() -> None:
    assert "frame too large" in _frame(ErrorEvent("frame too large", "new_reason"))[0].text()


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_every_reason_is_shown_in_the_pages_language(language: str) -> None:
    """Every reason of the one table (agents.reasons), whatever the event's text."""
    for reason in REASONS:
        with translation.override(language):
            expected = reasons.message(reason)
        (notices, _turn) = _frame(ErrorEvent("the wire's text", reason, SID), language)
        assert expected in notices.text(), reason


def test_missing_auxiliary_model_says_what_to_do() -> None:
    *_, appended = _frame(CompactionFailed(SID, "未配置辅助模型", "no_auxiliary_model"))
    assert "请在 Agent 页面选择辅助模型，或设置全局默认辅助模型。" in appended.text()


def test_a_live_token_update_shows_and_clears_the_pause() -> None:
    from compaction.trigger import PAUSED_FAILURES

    paused = _meter(100, paused_reason=PAUSED_FAILURES)
    _, status, *_ = _frame(paused)
    assert "自动压缩已暂停：连续两次失败。" in status.text()
    _, status_en, *_ = _frame(paused, "en")
    assert "Automatic compaction is paused: it failed twice in a row." in status_en.text()
    _, cleared, *_ = _frame(_meter(100))
    assert "暂停" not in cleared.text()


def test_a_regenerate_drops_what_it_set_aside_and_marks_the_question() -> None:
    """Issue 26 item 1: the page drops the bubbles set aside (a signal with the first id and
    the highest) and the question gets its switch in place, "回答 2 / 2"."""
    question = {
        "id": 7,
        "role": "user",
        "content": "问题",
        "answers": {"forkId": 3, "kind": "regenerate", "version": 2, "versions": 2},
    }
    changed = events.BranchChanged(
        "s1",
        3,
        "regenerate",
        2,
        2,
        set_aside_from=8,
        set_aside_through=12,
        marked=question,
        turn=True,
    )
    nodes = _frame(changed)
    _no_live_markup(nodes)
    cut = next(n for top in nodes for n in [top, *top.iter()] if n.get("data-branch-cut"))
    assert (cut.get("data-branch-cut"), cut.get("data-branch-cut-through")) == ("8", "12")
    marked = next(n for n in nodes if n.id == "msg-7")
    assert marked.get("hx-swap-oob") == "true"
    switch = next(n for n in marked.iter() if n.get("data-branch-switch") == "3")
    assert " ".join(switch.text().split()) == "‹ 回答 2 / 2 ›"
    assert (
        next(n for n in switch.iter() if "data-branch-previous" in n.attrs).get("disabled") is None
    )
    assert any(n.id == "turn-status" and n.get("data-busy") == "true" for n in nodes)


def test_a_version_switch_reloads_the_list() -> None:
    switched = events.BranchChanged("s1", 3, "edit", 1, 2, set_aside_from=20, turn=False)
    nodes = _frame(switched)
    assert any(n.get("data-history-refresh") == "s1" for top in nodes for n in [top, *top.iter()])
    assert not any(n.get("data-branch-cut") for top in nodes for n in [top, *top.iter()])
