"""Issue 16 on the pages (Django test client): rename and delete chats (dialog forms, and
pages without script), New chat without a stored chat, the top bar and chat list for
phones, skip links, the composer of an agent that cannot answer, what the page waits for,
and the over-the-window warning; their socket encodings."""

from __future__ import annotations

import pytest
from django.utils import timezone

from agents.events import SessionCreated, SessionDeleted, SessionUpdated, TokenUpdate
from agents.leases import TURN, new_holder
from agents.models import ChatSession, Message
from agents.services import message_append, session_record_usage
from agents.tools.workspace import session_workspace_root
from channels_app.html_encoder import render_event_html
from tests.factories import make_agent, make_channel, make_session
from tests.ui.html import parse

pytestmark = pytest.mark.django_db


# --- rename -----------------------------------------------------------------------------


def test_rename_from_the_dialog_goes_back_to_the_page(zh_client, session) -> None:
    page = f"/chat/{session.pk}/?view=full"
    response = zh_client.post(
        f"/chat/{session.pk}/rename/", {"title": "  数据库迁移  ", "next": page}
    )
    assert response.status_code == 302 and response["Location"] == page
    session.refresh_from_db()
    assert session.title == "数据库迁移"


def test_rename_never_sends_the_browser_elsewhere(zh_client, session) -> None:
    for next_url in ("https://evil.example/", "//evil.example/x", ""):
        response = zh_client.post(
            f"/chat/{session.pk}/rename/", {"title": "新名字", "next": next_url}
        )
        assert response.status_code == 302 and response["Location"] == f"/chat/{session.pk}/"


def test_rename_without_script_is_a_form_page(zh_client, session) -> None:
    doc = parse(zh_client.get(f"/chat/{session.pk}/rename/").content)
    field = doc.by_id("id_title")
    assert field.get("value") == "First chat" and field.get("maxlength") == "200"
    blank = zh_client.post(f"/chat/{session.pk}/rename/", {"title": "   "})
    assert blank.status_code == 400
    errors = parse(blank.content).has_class("field-error")
    assert [e.text() for e in errors] == ["请输入标题。"]
    session.refresh_from_db()
    assert session.title == "First chat"


def test_rename_and_delete_of_someone_elses_chat_are_404(client, other_user, session) -> None:
    client.force_login(other_user)
    for url in (f"/chat/{session.pk}/rename/", f"/chat/{session.pk}/delete/"):
        assert client.get(url).status_code == 404
        assert client.post(url, {"title": "taken"}).status_code == 404
    assert ChatSession.objects.filter(pk=session.pk, title="First chat").exists()


# --- delete -----------------------------------------------------------------------------


def test_delete_takes_the_messages_and_the_workspace(
    zh_client, user, session, django_capture_on_commit_callbacks
) -> None:
    message_append(session=session, role="user", content="hello")
    workspace = session_workspace_root(session.pk)
    workspace.mkdir(parents=True)
    (workspace / "a.txt").write_text("x")
    with django_capture_on_commit_callbacks(execute=True):
        response = zh_client.post(
            f"/chat/{session.pk}/delete/", {"next": f"/chat/{session.pk}/"}, follow=True
        )
    assert response.redirect_chain == [("/chat/", 302)]  # not back to the deleted chat
    assert "已删除对话「First chat」。" in response.content.decode()
    assert not ChatSession.objects.filter(pk=session.pk).exists()
    assert not Message.objects.filter(session_id=session.pk).exists()
    assert not workspace.exists()


def test_delete_from_another_chat_stays_on_it(zh_client, user, agent, session) -> None:
    other = make_session(owner=user, agent=agent, title="另一个")
    response = zh_client.post(f"/chat/{session.pk}/delete/", {"next": f"/chat/{other.pk}/"})
    assert response.status_code == 302 and response["Location"] == f"/chat/{other.pk}/"


def test_delete_without_script_asks_on_a_page(zh_client, session) -> None:
    doc = parse(zh_client.get(f"/chat/{session.pk}/delete/").content)
    assert "「First chat」将被永久删除，包括它的全部消息和工作区中的文件。" in doc.text()
    assert doc.select("form", method="post")[-1].select("button", type="submit")[0].text() == "删除"
    assert ChatSession.objects.filter(pk=session.pk).exists()


# --- the chat list, the top bar, skip links --------------------------------------------------


def test_every_chat_of_the_list_can_be_renamed_and_deleted(zh_client, user, agent, session) -> None:
    doc = parse(zh_client.get(f"/chat/{session.pk}/").content)
    item = doc.by_id(f"session-item-{session.pk}")
    rename, delete = item.has_class("item-action")
    assert rename.get("aria-label") == "重命名「First chat」"
    assert rename.get("href") == rename.get("data-rename-url") == f"/chat/{session.pk}/rename/"
    assert delete.get("aria-label") == "删除「First chat」"
    assert delete.get("data-delete-url") == f"/chat/{session.pk}/delete/"
    for dialog_id, action in (("rename-dialog", "rename"), ("delete-dialog", "delete")):
        dialog = doc.by_id(dialog_id)
        assert dialog.tag == "dialog"
        form = dialog.select("form")[0]
        assert form.get("method") == "post" and f"data-{action}-form" in form.attrs
        assert form.select("input", name="csrfmiddlewaretoken")
        assert form.select("input", name="next")[0].get("value") == f"/chat/{session.pk}/"
    header = doc.has_class("chat-actions")[0]
    icons = [a for a in header.select("a") if a.get("aria-label")]  # the Export menu's are text
    assert [a.get("aria-label") for a in icons] == ["重命名对话", "删除对话"]


def test_phones_get_a_menu_and_a_chat_list_button(zh_client, session) -> None:
    doc = parse(zh_client.get(f"/chat/{session.pk}/").content)
    menu = doc.by_id("menu-toggle")
    assert menu.get("aria-controls") == "topbar-menu" and menu.get("aria-expanded") == "false"
    assert menu.text().strip() == "菜单"
    panel = doc.by_id("topbar-menu")
    assert panel.select("button", type="submit")[-1].text() == "退出登录"
    toggle = doc.has_class("sidebar-toggle")[0]
    assert toggle.get("aria-controls") == "sidebar" and toggle.text().strip() == "对话"
    assert doc.by_id("sidebar").select("form", method="get")[0].get("action") == "/chat/new/"


def test_skip_links_lead_to_the_message_box_first(zh_client, session) -> None:
    doc = parse(zh_client.get(f"/chat/{session.pk}/").content)
    first_link = doc.select("a")[0]
    assert first_link.get("href") == "#chat-input" and first_link.text() == "跳到输入框"
    assert doc.by_id("chat-input").tag == "textarea"
    listing = parse(zh_client.get("/chat/").content)
    assert listing.select("a")[0].get("href") == "#main" and listing.by_id("main").tag == "main"


# --- New chat: nothing stored before the first message -------------------------------------


def test_new_chat_without_a_choice_takes_an_agent_that_can_answer(zh_client, user, agent) -> None:
    make_agent(name="Bare")  # no model channel: listed after the ones that can answer
    doc = parse(zh_client.get("/chat/new/").content)
    assert doc.by_id("chat-form").select("input", name="agent")[0].get("value") == str(agent.pk)
    assert "disabled" in doc.by_id("compact-button").attrs
    assert "发送第一条消息后才会保存" in doc.by_id("empty-chat").text()
    assert not ChatSession.objects.filter(owner=user).exists()


def test_new_chat_with_an_agent_one_cannot_see_goes_back_to_the_list(
    zh_client, other_user, user
) -> None:
    hidden = make_agent(name="Private", owner=other_user)
    response = zh_client.get(f"/chat/new/?agent={hidden.pk}", follow=True)
    assert response.redirect_chain == [("/chat/", 302)]
    assert "请选择一个可用的 Agent 来开始对话。" in response.content.decode()


def test_the_composer_of_an_agent_without_a_model_is_disabled(zh_client, user) -> None:
    bare = make_agent(name="Bare")
    session = make_session(owner=user, agent=bare)
    for url in (f"/chat/{session.pk}/", f"/chat/new/?agent={bare.pk}"):
        doc = parse(zh_client.get(url).content)
        box = doc.by_id("chat-input")
        assert "disabled" in box.attrs and box.get("aria-describedby") == "composer-disabled"
        assert "disabled" in doc.by_id("send-button").attrs
        assert "暂时不能发送消息" in doc.by_id("composer-disabled").text()


# --- waiting --------------------------------------------------------------------------------


def test_the_page_says_what_it_waits_for(zh_client, user, channel) -> None:
    auxiliary = make_channel(name="Summarizer", model="aux-model", is_auxiliary=True)
    agent = make_agent(model_channel=channel, auxiliary_model_channel=auxiliary)
    chat = parse(zh_client.get(f"/chat/new/?agent={agent.pk}").content).by_id("chat")
    assert chat.get("data-waiting-model") == "scripted-model (Main)"
    assert chat.get("data-waiting-auxiliary") == "aux-model (Summarizer)"
    assert chat.get("data-label-waiting-model") == "等待 __MODEL__ 回答"
    assert chat.get("data-label-seconds") == "__N__ 秒"
    plain = make_agent(model_channel=channel)  # no auxiliary model anywhere
    chat = parse(zh_client.get(f"/chat/new/?agent={plain.pk}").content).by_id("chat")
    assert chat.get("data-waiting-auxiliary") == ""
    assert chat.get("data-label-waiting-no-auxiliary") == "等待辅助模型"


def test_a_running_turn_counts_from_the_message_it_answers(zh_client, session) -> None:
    message = message_append(session=session, role="user", content="慢慢想")
    Message.objects.filter(pk=message.pk).update(
        created_at=timezone.now() - timezone.timedelta(seconds=42)
    )
    ChatSession.objects.filter(pk=session.pk).update(
        lease_holder=new_holder(TURN),
        lease_expires_at=timezone.now() + timezone.timedelta(seconds=30),
    )
    status = parse(zh_client.get(f"/chat/{session.pk}/").content).by_id("turn-status")
    assert status.get("data-busy") == "true" and 42 <= int(status.get("data-elapsed")) <= 45
    assert status.select("span", data_elapsed_for="turn")
    assert status.select("span", data_wait_on="turn")


# --- over the window ------------------------------------------------------------------------


def _used(session: ChatSession, tokens: int) -> None:
    reply = message_append(session=session, role="assistant", content="好的。")
    session_record_usage(
        session=session, input_tokens=tokens, output_tokens=1, input_position=reply.position
    )


def test_over_the_window_the_page_says_the_next_message_will_fail(zh_client, session) -> None:
    _used(session, 8000)  # exactly the window: not over it
    assert parse(zh_client.get(f"/chat/{session.pk}/").content).by_id("meter-alert").elements == []
    _used(session, 18_880)
    alert = parse(zh_client.get(f"/chat/{session.pk}/").content).by_id("meter-alert")
    (box,) = alert.elements
    assert box.get("role") == "alert"
    assert "上下文已达模型窗口的 236%：下一条消息很可能会被拒绝。" in box.text()
    assert "请立即压缩，或与此 Agent 开始新对话。" in box.text()
    button = box.select("button")[0]
    assert button.get("form") == "compact-form" and button.text() == "立即压缩"
    assert box.select("a")[0].get("href") == f"/chat/new/?from_session={session.pk}"


def test_a_token_update_over_the_window_brings_the_warning() -> None:
    sid = "5f0e6a2c-1111-4c1e-9a56-0c1d2e3f4a5b"
    event = TokenUpdate(
        session_id=sid,
        used_tokens=9440,
        max_tokens=4000,
        threshold_percent=70,
        estimated=False,
        input_tokens=9440,
        output_tokens=1,
        api_calls=3,
        paused_reason="自动压缩已暂停：压缩后仍超过阈值",
    )
    doc = parse(render_event_html(event, language="en"))
    alert = doc.by_id("meter-alert")
    assert alert.get("hx-swap-oob") == "true"
    text = " ".join(alert.text().split())
    assert (
        "The context is 236% of the model's window: the next message will most likely be refused."
        in text
    )
    assert (
        "Automatic compaction is paused: compact now, or start a new chat with this agent." in text
    )


# --- the chat list over the socket ------------------------------------------------------------


def test_a_chat_started_on_the_page_joins_the_list() -> None:
    sid = "5f0e6a2c-2222-4c1e-9a56-0c1d2e3f4a5b"
    doc = parse(
        render_event_html(SessionCreated(sid, 3, "<b>计划</b>", "Helper"), language="zh-hans")
    )
    items, actions, signal = doc.elements
    assert (items.id, items.get("hx-swap-oob")) == ("session-items", "afterbegin")
    # the header's rename, delete and export arrive with it (issue 26 item 8: not after a reload)
    assert (actions.id, actions.get("hx-swap-oob")) == ("chat-header-actions", "true")
    rename, delete = (a for a in actions.select("a") if a.get("aria-label"))
    assert rename.get("data-rename-url") == f"/chat/{sid}/rename/"
    assert delete.get("data-delete-url") == f"/chat/{sid}/delete/"
    assert delete.get("data-title") == "<b>计划</b>"
    assert f"/api/sessions/{sid}/export/?as=netaclaw" in [
        a.get("href") for a in actions.select("a")
    ]
    (item,) = items.select("li")
    assert item.id == f"session-item-{sid}" and "is-current" in item.classes
    assert item.has_class("session-title")[0].text() == "<b>计划</b>"  # text, not markup
    assert (signal.id, signal.get("data-kind"), signal.get("data-url")) == (
        "session-signal",
        "created",
        f"/chat/{sid}/",
    )


def test_renamed_and_deleted_chats_are_signals() -> None:
    sid = "5f0e6a2c-3333-4c1e-9a56-0c1d2e3f4a5b"
    (updated,) = parse(
        render_event_html(SessionUpdated(sid, "新名字"), language="zh-hans")
    ).elements
    assert (updated.id, updated.get("data-kind"), updated.get("data-title")) == (
        "session-signal",
        "updated",
        "新名字",
    )
    (deleted,) = parse(render_event_html(SessionDeleted(sid), language="zh-hans")).elements
    assert (deleted.get("data-kind"), deleted.get("data-session-id")) == ("deleted", sid)
