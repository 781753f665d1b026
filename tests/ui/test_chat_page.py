"""The chat page: CONTRACT §6 hooks, the server-side meter, bubbles, views, pagination."""

from __future__ import annotations

import pytest
from django.conf import settings

from agents.history_pages import PAGE_SIZE
from agents.models import ChatSession, Message
from agents.services import (
    compaction_apply,
    message_append,
    messages_bulk_append,
    session_record_usage,
)
from tests.factories import make_agent, make_session
from tests.support.event_records import system_event_append
from tests.ui.html import parse

pytestmark = pytest.mark.django_db


def _compact(session: ChatSession, messages: list[Message], **payload) -> Message:
    applied = compaction_apply(
        session=session,
        compacted_ids=[m.pk for m in messages],
        pruned_ids=[],
        summary_content="## 目标\n拆分 src/app/main.py\n## 相关文件\n- src/app/main.py",
        pruned_token_estimate=0,
        event_content="上下文已压缩",
        event_payload={"status": "done", "removedCount": len(messages), **payload},
    )
    assert applied.summary_message is not None
    return applied.summary_message


def test_page_has_the_contract_hooks(zh_client, session) -> None:
    doc = parse(zh_client.get(f"/chat/{session.pk}/").content)
    bar = doc.by_id("token-bar")
    assert bar is not None and bar.get("role") == "progressbar"
    assert bar.get("aria-valuemin") == "0"
    assert int(bar.get("aria-valuemax")) == 8000  # the channel's context window
    assert int(bar.get("aria-valuenow")) >= 0
    assert bar.get("aria-label")
    tick = bar.has_class("token-threshold")
    assert tick and "自动压缩阈值 70%" in tick[0].text()
    assert tick[0].get("style") == "left: 70%"
    # the chat input and the /compact button, by their visible labels
    label = doc.find_all(lambda n: n.tag == "label" and n.get("for") == "chat-input")
    assert label and label[0].text().strip() == "输入消息"
    textarea = doc.by_id("chat-input")
    assert textarea.tag == "textarea" and textarea.get("name") == "content"
    button = doc.by_id("compact-button")
    assert button.tag == "button" and button.text().strip() == "/compact"
    # the ws extension and the frames the page sends
    chat = doc.by_id("chat")
    assert chat.get("hx-ext") == "ws"
    assert chat.get("ws-connect") == f"/ws/chat/html/?session={session.pk}"
    form = doc.by_id("chat-form")
    assert "ws-send" in form.attrs
    hidden = {n.get("name"): n.get("value") for n in form.select("input", type="hidden")}
    assert hidden == {"type": "chat", "sessionId": str(session.pk)}
    compact = doc.by_id("compact-form")
    assert {n.get("name"): n.get("value") for n in compact.select("input")} == {
        "type": "compact",
        "sessionId": str(session.pk),
    }
    # stable ids the HTML encoder swaps
    for element_id in (
        "messages",
        "stream-text",
        "meter-status",
        "compaction-flag",
        "compaction-status",
        "turn-status",
        "notices",
        "summary-drawer",
    ):
        assert doc.by_id(element_id) is not None, element_id
    html = zh_client.get(f"/chat/{session.pk}/").content.decode()
    assert "/static/django_htmx/htmx-2.min.js" in html
    assert "/static/django_htmx/ext/hx-ws-2.min.js" in html
    assert "/static/netaclaw/chat.js" in html
    assert "https://" not in html.split("<body")[0]  # no external assets in <head>


def test_meter_starts_from_the_server_figures(zh_client, session) -> None:
    message_append(session=session, role="user", content="x" * 400)
    reply = message_append(session=session, role="assistant", content="y" * 40)
    session_record_usage(
        session=session, input_tokens=5000, output_tokens=120, input_position=reply.position - 1
    )
    doc = parse(zh_client.get(f"/chat/{session.pk}/").content)
    bar = doc.by_id("token-bar")
    used = int(bar.get("aria-valuenow"))
    assert 5000 <= used < 5100
    assert "state-ok" in bar.classes  # 5000/8000 = 63% < 70%
    status = doc.by_id("meter-status").text()
    assert f"{used:,}/8,000 tokens · 阈值 70% · 已压缩 0 次" in " ".join(status.split())
    assert "输入 5,000 · 输出 120" in " ".join(status.split())
    assert doc.by_id("compaction-flag").get("data-compacting") == "false"


@pytest.mark.parametrize(
    ("used", "state"), [(1000, "ok"), (5600, "warn"), (7200, "warn"), (7300, "danger")]
)
def test_meter_colour_follows_threshold_and_90_percent(zh_client, session, used, state) -> None:
    reply = message_append(session=session, role="assistant", content="a")
    session_record_usage(
        session=session, input_tokens=used, output_tokens=1, input_position=reply.position
    )
    bar = parse(zh_client.get(f"/chat/{session.pk}/").content).by_id("token-bar")
    assert bar.get("data-state") == state


@pytest.mark.parametrize(("used", "state"), [(7200, "ok"), (7201, "danger"), (7600, "danger")])
def test_above_90_percent_is_red_even_below_a_95_percent_threshold(
    zh_client, user, channel, used, state
) -> None:
    agent = make_agent(model_channel=channel, compaction_threshold_percent=95)
    session = make_session(owner=user, agent=agent)
    reply = message_append(session=session, role="assistant", content="a")
    session_record_usage(
        session=session, input_tokens=used, output_tokens=1, input_position=reply.position
    )
    bar = parse(zh_client.get(f"/chat/{session.pk}/").content).by_id("token-bar")
    assert bar.get("data-state") == state


def test_threshold_marker_uses_the_agents_threshold(zh_client, user) -> None:
    session = make_session(owner=user, agent=make_agent(compaction_threshold_percent=85))
    bar = parse(zh_client.get(f"/chat/{session.pk}/").content).by_id("token-bar")
    tick = bar.has_class("token-threshold")[0]
    assert tick.get("style") == "left: 85%" and "自动压缩阈值 85%" in tick.text()


def test_messages_render_server_side(zh_client, session) -> None:
    message_append(session=session, role="user", content="<b>hi</b> there")
    message_append(
        session=session,
        role="assistant",
        content="**bold** <script>alert(1)</script>",
        tool_calls=[{"id": "c1", "name": "read_file", "arguments": '{"path": "a.py"}'}],
    )
    message_append(
        session=session,
        role="tool",
        content="print('<x>')",
        tool_call_id="c1",
        metadata={"toolName": "read_file"},
    )
    html = zh_client.get(f"/chat/{session.pk}/").content.decode()
    doc = parse(html)
    articles = doc.by_id("messages").select("article")
    assert [a.get("data-role") for a in articles] == ["user", "assistant", "tool"]
    assert "&lt;b&gt;hi&lt;/b&gt; there" in html
    assert "<strong>bold</strong>" in html and "<script>alert(1)" not in html
    details = doc.has_class("tool-block")  # (each message's "⋯" menu is a <details> too)
    assert len(details) == 2  # the tool call and the tool result are collapsible
    assert '"path": "a.py"' in details[0].text()
    assert "print('<x>')" in details[1].text()


def test_stored_compaction_bubbles_render(zh_client, session) -> None:
    messages = [message_append(session=session, role="user", content=f"m{i}") for i in range(5)]
    summary = _compact(session, messages[1:3], tokensBefore=1000, tokensAfter=250)
    system_event_append(
        session=session,
        system_type="compaction_event",
        content="压缩失败",
        payload={"status": "failed", "error": "辅助模型超时", "reason": "auxiliary_error"},
    )
    doc = parse(zh_client.get(f"/chat/{session.pk}/").content)
    done = doc.select(data_event="compaction_done")[0]
    assert " ".join(done.text().split()).startswith(
        "✓ 上下文已压缩 · 移除 2 条消息 · 节省 75% token"
    )
    link = done.select("a")[0]
    assert link.text() == "查看摘要"
    assert link.get("hx-get") == f"/chat/{session.pk}/summary/{summary.pk}/"
    assert link.get("hx-target") == "#summary-drawer"
    failed = doc.select(data_event="compaction_failed")[0]
    assert "压缩失败：辅助模型超时 可继续原对话或" in " ".join(failed.text().split())
    new_chat = failed.select("a")[0]
    assert new_chat.text() == "开新对话"
    assert new_chat.get("href") == f"/chat/new/?from_session={session.pk}"


def test_full_view_marks_compacted_messages_and_shows_the_banner(zh_client, session) -> None:
    messages = [message_append(session=session, role="user", content=f"m{i}") for i in range(5)]
    _compact(session, messages[1:3])
    compacted = parse(zh_client.get(f"/chat/{session.pk}/").content)
    assert len(compacted.by_id("messages").select("article")) == 4  # m0, summary, m3, m4
    assert not compacted.has_class("history-banner")
    full = parse(zh_client.get(f"/chat/{session.pk}/?view=full").content)
    articles = full.by_id("messages").select("article")
    assert len(articles) == 6
    marked = [a for a in articles if "is-compacted" in a.classes]
    assert len(marked) == 2
    banner = full.has_class("history-banner")[0]
    assert "当前显示完整历史（含已压缩消息）" in banner.text()
    back = banner.select("a")[0]
    assert back.text() == "切换回压缩视图" and back.get("href") == f"/chat/{session.pk}/"


def test_sidebar_toggle_icon_only_on_compacted_sessions(zh_client, user, session) -> None:
    plain = make_session(owner=user, agent=session.agent, title="plain")
    messages = [message_append(session=session, role="user", content=f"m{i}") for i in range(4)]
    _compact(session, messages[1:3])
    doc = parse(zh_client.get("/chat/").content)
    toggles = doc.has_class("view-toggle")
    hrefs = {t.get("href") for t in toggles}
    assert f"/chat/{session.pk}/?view=full" in hrefs
    assert not any(str(plain.pk) in (h or "") for h in hrefs)
    assert all(t.get("aria-label") for t in toggles)
    # on the chat page in full view the toggle leads back to the compacted view
    full = parse(zh_client.get(f"/chat/{session.pk}/?view=full").content)
    sidebar_toggle = full.select("a", data_view_toggle="compacted")
    assert sidebar_toggle and sidebar_toggle[0].get("href") == f"/chat/{session.pk}/"


def test_summary_drawer_fragment_is_a_dialog_with_sanitized_markdown(zh_client, session) -> None:
    messages = [message_append(session=session, role="user", content=f"m{i}") for i in range(4)]
    summary = _compact(session, messages[1:3])
    Message.objects.filter(pk=summary.pk).update(
        content=summary.content + "\n\n<img src=x onerror=alert(1)> [x](javascript:alert(1))"
    )
    url = f"/chat/{session.pk}/summary/{summary.pk}/"
    response = zh_client.get(url, headers={"HX-Request": "true"})
    html = response.content.decode()
    doc = parse(html)
    root = doc.elements[0] if doc.elements else None
    assert root is not None and root.id == "summary-drawer"
    dialog = doc.select(role="dialog")[0]
    assert dialog.get("aria-modal") == "true"
    assert doc.by_id(dialog.get("aria-labelledby")).text() == "压缩摘要"
    assert "<h2>目标</h2>" in html and "<li>src/app/main.py</li>" in html
    assert "onerror" not in html.replace("&lt;img src=x onerror=alert(1)&gt;", "")
    assert 'href="javascript' not in html
    assert "<html" not in html  # a fragment
    page = zh_client.get(url)  # without htmx: a whole page
    assert b"<html" in page.content and "拆分 src/app/main.py" in page.content.decode()


def test_long_history_renders_one_page_and_loads_earlier(zh_client, session) -> None:
    total = PAGE_SIZE * 2 + 37
    messages_bulk_append(
        session=session, rows=[{"role": "user", "content": f"msg {i}"} for i in range(total)]
    )
    doc = parse(zh_client.get(f"/chat/{session.pk}/").content)
    first_page = doc.by_id("messages").select("article")
    assert len(first_page) == PAGE_SIZE
    assert first_page[-1].text().strip().startswith(f"msg {total - 1}")
    button = doc.by_id("load-earlier").select("button")[0]
    seen = [a.id for a in first_page]
    url = button.get("hx-get")
    pages = 1
    while url:
        fragment = parse(zh_client.get(url, headers={"HX-Request": "true"}).content)
        articles = fragment.select("article")
        assert 0 < len(articles) <= PAGE_SIZE
        seen = [a.id for a in articles] + seen
        more = fragment.by_id("load-earlier")
        url = more.select("button")[0].get("hx-get") if more else None
        pages += 1
    assert pages == 3
    expected = [
        f"msg-{pk}" for pk in session.messages.order_by("position").values_list("pk", flat=True)
    ]
    assert seen == expected  # every message exactly once, in order


def test_load_earlier_keeps_a_summary_with_its_position(zh_client, session) -> None:
    """A summary shares the position of the first message it replaced (DESIGN 1)."""
    messages = [message_append(session=session, role="user", content=f"m{i}") for i in range(8)]
    summary = _compact(session, messages[2:5])
    from agents.history_pages import history_page

    expected = [m.pk for m in history_page(session=session, view="full", size=100).messages]
    for size in range(1, 10):
        collected: list[int] = []
        page = history_page(session=session, view="full", size=size)
        collected = [m.pk for m in page.messages]
        while page.has_earlier:
            page = history_page(session=session, view="full", size=size, before_id=collected[0])
            collected = [m.pk for m in page.messages] + collected
        assert collected == expected, size
    assert expected.index(summary.pk) == expected.index(messages[2].pk) - 1


def test_no_model_channel_is_explained(client, user, staff) -> None:
    bare = make_agent(name="Bare")
    session = make_session(owner=user, agent=bare)
    client.force_login(user)
    for url in ["/chat/", f"/chat/{session.pk}/"]:
        doc = parse(client.get(url).content)
        help_box = doc.select(data_help="no-model-channel")
        assert help_box, url
        text = help_box[0].text()
        assert "http://127.0.0.1:11434/v1" in text and "vLLM" in text and "DeepSeek" in text
        assert not help_box[0].select("a", href="/channels/new/")  # not for non-staff
    staff_session = make_session(owner=staff, agent=bare)
    client.force_login(staff)
    doc = parse(client.get(f"/chat/{staff_session.pk}/").content)
    assert doc.select(data_help="no-model-channel")[0].select("a", href="/channels/new/")


def test_new_chat_opens_a_page_and_stores_nothing(zh_client, user, agent) -> None:
    """Issue 16 item 3: New chat stores no chat; its first message does (socket)."""
    response = zh_client.post("/chat/new/", {"agent": agent.pk})
    assert response.status_code == 302 and response["Location"] == f"/chat/new/?agent={agent.pk}"
    session = make_session(owner=user, agent=agent)
    again = zh_client.post(
        "/chat/new/", {"from_session": str(session.pk)}, headers={"HX-Request": "true"}
    )
    assert again.status_code == 200 and again["HX-Redirect"] == f"/chat/new/?agent={agent.pk}"
    for url in (f"/chat/new/?agent={agent.pk}", f"/chat/new/?from_session={session.pk}"):
        doc = parse(zh_client.get(url).content)
        chat = doc.by_id("chat")
        assert chat.get("data-session-id") == "" and chat.get("ws-connect") == "/ws/chat/html/"
        form = doc.by_id("chat-form")
        assert form.select("input", name="agent")[0].get("value") == str(agent.pk)
        assert not form.select("input", name="sessionId")
    assert list(ChatSession.objects.filter(owner=user)) == [session]


def test_new_chat_refuses_an_agent_the_user_cannot_see(zh_client, other_user, user) -> None:
    hidden = make_agent(name="Private", owner=other_user)
    response = zh_client.post("/chat/new/", {"agent": hidden.pk}, follow=True)
    assert not ChatSession.objects.filter(owner=user).exists()
    assert "请选择一个可用的 Agent 来开始对话。" in response.content.decode()


def test_csrf_token_reaches_htmx_requests(zh_client, session) -> None:
    html = zh_client.get(f"/chat/{session.pk}/").content.decode()
    body = parse(html).select("body")[0]
    assert "X-CSRFToken" in body.get("hx-headers")
    assert settings.CSRF_HEADER_NAME == "HTTP_X_CSRFTOKEN"


@pytest.mark.parametrize(
    ("language", "text"),
    [
        ("zh-hans", "「Helper」的模型渠道「Main」已停用，暂时无法回答。"),
        ("en", "The model channel “Main” of “Helper” is disabled, so it cannot answer."),
    ],
)
def test_a_disabled_model_channel_is_named(client, user, session, channel, language, text):
    channel.enabled = False
    channel.save()
    client.force_login(user)
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = language
    for url in ["/chat/", f"/chat/{session.pk}/"]:
        help_box = parse(client.get(url).content).select(data_help="no-model-channel")
        assert help_box, url
        assert text in " ".join(help_box[0].text().split())
        assert "Ollama" in help_box[0].text()


def test_a_reload_during_a_compaction_shows_it(zh_client, session) -> None:
    """The compaction's lease is held: blue bar, status text and the pending bubble."""
    from datetime import timedelta

    from django.utils import timezone

    ChatSession.objects.filter(pk=session.pk).update(
        lease_holder="c/another-process",
        compacting_holder="c/another-process",
        lease_expires_at=timezone.now() + timedelta(minutes=5),
    )
    doc = parse(zh_client.get(f"/chat/{session.pk}/").content)
    assert doc.by_id("compaction-flag").get("data-compacting") == "true"
    pending = doc.by_id("compaction-pending")
    assert pending is not None and pending.text().strip() == "正在压缩上下文..."


@pytest.mark.parametrize(
    ("language", "label", "manual"),
    [
        ("zh-hans", "自动压缩已暂停：单条消息过长，建议拆分。", "/compact 仍可使用。"),
        ("en", "Automatic compaction is paused: one message is too large; split it.", ""),
    ],
)
def test_a_paused_automatic_compaction_is_shown_with_its_reason(
    client, user, session, language, label, manual
) -> None:
    from compaction.trigger import PAUSED_OVERSIZED

    client.force_login(user)
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = language
    page = parse(client.get(f"/chat/{session.pk}/").content)
    assert not page.find_all(lambda n: n.get("data-testid") == "auto-compaction-paused")
    ChatSession.objects.filter(pk=session.pk).update(auto_compaction_paused_reason=PAUSED_OVERSIZED)
    page = parse(client.get(f"/chat/{session.pk}/").content)
    (paused,) = page.find_all(lambda n: n.get("data-testid") == "auto-compaction-paused")
    assert label in paused.text() and (manual or "/compact still works.") in paused.text()


@pytest.mark.parametrize(("used", "state"), [(1400, "ok"), (1733, "warn")])
def test_a_token_cap_moves_the_marker_and_the_colour(zh_client, user, channel, used, state):
    """Issue 26 item 8: with a 1,500-token cap compaction fired at 1,733 while the bar sat
    green under its percentage marker. The marker stands at the cap, the colour follows it."""
    agent = make_agent(model_channel=channel, compaction_token_cap=1500)
    session = make_session(owner=user, agent=agent)
    reply = message_append(session=session, role="assistant", content="a")
    session_record_usage(
        session=session, input_tokens=used, output_tokens=1, input_position=reply.position
    )
    bar = parse(zh_client.get(f"/chat/{session.pk}/").content).by_id("token-bar")
    assert bar.get("data-state") == state
    cap_at = f"{round(100 * 1500 / channel.context_window, 2):g}%"
    assert bar.has_class("token-threshold")[0].get("style") == f"left: {cap_at}"
