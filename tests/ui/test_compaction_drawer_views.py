"""The chat page's compaction controls (issue 17 items 1, 3, 6, 7, 12), page side: the
bubble's Undo, the summary drawer (instructions, what the compaction dropped with a pin for
each original, the summary editor and its history) and the live summary's HTML frames.

Browser behaviour is in tests/e2e/test_compaction_drawer.py; these check the views'
rules (CSRF, own session only, refusals) and the fragments they and the socket render."""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone

from agents.events import CompactionDone, CompactionProgress, CompactionUndone
from agents.message_format import message_to_json
from agents.models import ChatSession, CompactionRecord, CompactionStatus, Message
from agents.services import compaction_apply, event_record_mark, message_append
from channels_app.html_encoder import PROGRESS_TAIL_CHARS, render_event_html
from condense import with_summary_body
from condense.prompts import RECALL_HINT, SUMMARY_PREFIX, summary_content
from tests.factories import make_user
from tests.ui.html import Node, parse
from web.compaction_views import HISTORY_CHANGED

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}
BODY = "## Goal\nShip the parser fix\n## Files\n- src/parser.py"
INSTRUCTIONS = "Keep every port number.\n\nFocus on the deployment."


def _compacted(session: ChatSession) -> dict[str, Any]:
    """Six messages, the middle four summarized; a record that names its instructions and
    two originals it dropped facts of (as the service writes it)."""
    rows = [
        ("user", "Start: fix the parser"),
        ("user", "The proxy listens on port 8443 in deploy/nginx.conf"),
        ("assistant", "Noted: deploy/nginx.conf, port 8443, build id ERR42x"),
        ("user", "Also see https://example.com/runbook"),
        ("assistant", "Will do."),
        ("user", "Latest question"),
    ]
    messages = [message_append(session=session, role=r, content=c) for r, c in rows]
    applied = compaction_apply(
        session=session,
        compacted_ids=[m.pk for m in messages[1:5]],
        pruned_ids=[],
        summary_content=summary_content(BODY, "en", recall_hint=True),
        pruned_token_estimate=0,
        event_content="compacted",
        event_payload={
            "status": "done",
            "removedCount": 4,
            "tokensBefore": 900,
            "tokensAfter": 300,
        },
    )
    assert applied.summary_message is not None and applied.event_message is not None
    record = CompactionRecord.objects.create(
        session=session,
        summary_message=applied.summary_message,
        event_message=applied.event_message,
        trigger="manual",
        status=CompactionStatus.DONE,
        started_at=timezone.now(),
        instructions=INSTRUCTIONS,
        dropped=[
            {"value": "8443", "kind": "number", "messageId": messages[1].pk},
            {"value": "deploy/nginx.conf", "kind": "path", "messageId": messages[1].pk},
            {"value": "ERR42x", "kind": "identifier", "messageId": messages[2].pk},
        ],
    )
    event_record_mark(message=applied.event_message, compaction_id=record.pk)
    return {
        "messages": messages,
        "summary": applied.summary_message,
        "event": applied.event_message,
        "record": record,
    }


@pytest.fixture
def compacted(session) -> dict[str, Any]:
    return _compacted(session)


def _url(session: ChatSession, summary: Message, tail: str = "") -> str:
    return f"/chat/{session.pk}/summary/{summary.pk}/{tail}"


def _marked(node: Node, name: str, tag: str | None = None) -> list[Node]:
    """The elements under ``node`` that carry the attribute ``name`` (a marker)."""
    return node.find_all(lambda n: name in n.attrs and (tag is None or n.tag == tag))


def _only(nodes: list[Node]) -> Node:
    assert len(nodes) == 1, nodes
    return nodes[0]


# --- the bubble's Undo ----------------------------------------------------------------


def test_the_done_bubble_carries_an_undo_frame_for_its_record(en_client, session, compacted):
    doc = parse(en_client.get(f"/chat/{session.pk}/").content)
    bubble = doc.by_id(f"msg-{compacted['event'].pk}")
    assert bubble.get("data-compaction-id") == str(compacted["record"].pk)
    form = _only(_marked(bubble, "data-undo-form", "form"))
    assert "ws-send" in form.attrs and "hidden" in form.attrs  # chat.js shows the newest
    fields = {i.get("name"): i.get("value") for i in form.select("input")}
    assert fields == {
        "type": "undo",
        "sessionId": str(session.pk),
        "compactionId": str(compacted["record"].pk),
    }
    assert _only(form.select("button")).text().strip() == "Undo"


def test_an_undone_bubble_says_so_and_offers_no_undo(en_client, session, compacted):
    from compaction.undo import compaction_undo

    compaction_undo(session=session, record_id=compacted["record"].pk)
    doc = parse(en_client.get(f"/chat/{session.pk}/?view=full").content)
    bubble = doc.by_id(f"msg-{compacted['event'].pk}")
    assert _marked(bubble, "data-undone") and "undone" in bubble.text()
    assert bubble.select("form") == []
    # the compacted view shows the originals again, not the summary
    compacted_view = parse(en_client.get(f"/chat/{session.pk}/").content)
    ids = {a.id for a in compacted_view.by_id("messages").select("article")}
    assert f"msg-{compacted['summary'].pk}" not in ids
    assert {f"msg-{m.pk}" for m in compacted["messages"]} <= ids


def test_a_live_done_bubble_without_a_stored_one_still_offers_undo(session) -> None:
    sid = str(session.pk)
    html = render_event_html(CompactionDone(sid, 3, 9, 1000, 400, None, 77), language="en")
    form = _only(_marked(parse(html), "data-undo-form", "form"))
    assert {i.get("name"): i.get("value") for i in form.select("input")}["compactionId"] == "77"
    assert '"compactionId"' not in str(CompactionDone(sid, 3, 9, 1000, 400, None, 77).to_json())


def test_compaction_undone_is_a_notice_and_the_signal_to_reload_the_list(session) -> None:
    sid = str(session.pk)
    html = render_event_html(CompactionUndone(sid, 9, 4, 1), language="en")
    (notices,) = parse(html).elements
    assert (notices.id, notices.get("hx-swap-oob")) == ("notices", "beforeend")
    assert "Compaction undone: 4 messages are back in the context." in notices.text()
    assert "hidden" in _only(notices.select(data_history_refresh=sid)).attrs


# --- the drawer -----------------------------------------------------------------------


def test_the_drawer_shows_instructions_dropped_values_editor_and_no_history_yet(
    en_client, session, compacted
) -> None:
    summary = compacted["summary"]
    response = en_client.get(_url(session, summary), headers=HTMX)
    assert response.status_code == 200
    doc = parse(response.content)
    assert doc.elements[0].id == "summary-drawer"
    instructions = _only(_marked(doc, "data-drawer-instructions"))
    assert "Instructions this summary was written with" in instructions.text()
    assert "Keep every port number." in instructions.text()
    assert "Focus on the deployment." in instructions.text()
    assert "Ship the parser fix" in _only(_marked(doc, "data-summary-text")).text()
    dropped = _only(_marked(doc, "data-drawer-dropped"))
    items = _marked(dropped, "data-dropped-item", "li")
    first, second = compacted["messages"][1], compacted["messages"][2]
    assert [i.id for i in items] == [f"drawer-dropped-{first.pk}", f"drawer-dropped-{second.pk}"]
    assert [c.text() for c in items[0].select("code")] == ["8443", "deploy/nginx.conf"]
    assert [c.get("title") for c in items[0].select("code")] == ["number", "file path"]
    link = _only(_marked(items[0], "data-original-link", "a"))
    assert link.get("href") == f"/chat/{session.pk}/?view=full#msg-{first.pk}"
    assert link.get("hx-get") == f"/chat/{session.pk}/messages/{first.pk}/?view=full"
    assert link.get("hx-target") == f"#drawer-original-{first.pk}"
    pin = _only(items[0].select("form"))
    assert pin.get("hx-post") == _url(session, summary, f"pin/{first.pk}/")
    assert pin.get("hx-target") == f"#drawer-dropped-{first.pk}"
    textarea = _only(doc.select("textarea", name="content"))
    assert textarea.text().strip() == BODY  # the body: the prefix and framing stay as they are
    edit = _only(doc.select("form", hx_post=_url(session, summary, "edit/")))
    assert edit.get("hx-target") == "#summary-drawer"
    assert _marked(doc, "data-drawer-edits") == []


def test_the_summary_page_without_script_has_plain_forms(en_client, session, compacted):
    summary = compacted["summary"]
    html = en_client.get(_url(session, summary)).content.decode()
    doc = parse(html)
    assert "<html" in html and "Keep every port number." in html
    forms = doc.select("form", method="post")
    actions = {f.get("action") for f in forms}
    assert _url(session, summary, "edit/") in actions
    assert _url(session, summary, f"pin/{compacted['messages'][1].pk}/") in actions
    assert not any(f.get("hx-post") for f in forms)
    assert all(f.select("input", name="csrfmiddlewaretoken") for f in forms if f.get("action"))


def test_a_drawer_without_dropped_values_or_record_says_nothing_was_dropped(
    en_client, session, compacted
) -> None:
    compacted["record"].delete()
    doc = parse(en_client.get(_url(session, compacted["summary"]), headers=HTMX).content)
    assert _marked(doc, "data-dropped-empty") and _marked(doc, "data-drawer-instructions") == []


def test_another_users_drawer_and_controls_are_not_found(client, session, compacted) -> None:
    client.force_login(make_user("mallory"))
    summary, original = compacted["summary"], compacted["messages"][1]
    assert client.get(_url(session, summary), headers=HTMX).status_code == 404
    assert (
        client.post(_url(session, summary, f"pin/{original.pk}/"), headers=HTMX).status_code == 404
    )
    response = client.post(_url(session, summary, "edit/"), {"content": "mine now"}, headers=HTMX)
    assert response.status_code == 404
    original.refresh_from_db()
    summary.refresh_from_db()
    assert not original.pinned and "mine now" not in summary.content


def test_logged_out_is_sent_to_the_login_page(client, session, compacted) -> None:
    response = client.post(_url(session, compacted["summary"], "edit/"), {"content": "x"})
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


# --- pin from the drawer ----------------------------------------------------------------


def test_pin_brings_the_original_back_and_the_item_says_pinned(en_client, session, compacted):
    summary, original = compacted["summary"], compacted["messages"][1]
    response = en_client.post(_url(session, summary, f"pin/{original.pk}/"), headers=HTMX)
    assert response.status_code == 200
    assert HISTORY_CHANGED in response.headers["HX-Trigger"]
    item = parse(response.content).elements[0]
    assert item.id == f"drawer-dropped-{original.pk}"
    assert _marked(item, "data-pinned") and item.select("form") == []
    assert [c.text() for c in item.select("code")] == ["8443", "deploy/nginx.conf"]
    original.refresh_from_db()
    assert original.pinned and original.compacted_at is None  # back in the compacted view
    drawer = parse(en_client.get(_url(session, summary), headers=HTMX).content)
    assert _marked(drawer.by_id(f"drawer-dropped-{original.pk}"), "data-pinned")


def test_pin_without_script_redirects_to_the_summary_page(en_client, session, compacted):
    summary, original = compacted["summary"], compacted["messages"][2]
    response = en_client.post(_url(session, summary, f"pin/{original.pk}/"))
    assert response.status_code == 302
    assert response["Location"] == _url(session, summary) + f"#drawer-dropped-{original.pk}"
    original.refresh_from_db()
    assert original.pinned


def test_pin_only_takes_a_post_and_an_original_the_drawer_lists(en_client, session, compacted):
    summary = compacted["summary"]
    listed, unlisted = compacted["messages"][1], compacted["messages"][3]
    assert en_client.get(_url(session, summary, f"pin/{listed.pk}/")).status_code == 405
    assert (
        en_client.post(_url(session, summary, f"pin/{unlisted.pk}/"), headers=HTMX).status_code
        == 404
    )
    unlisted.refresh_from_db()
    assert not unlisted.pinned


def test_pin_and_edit_need_the_csrf_token(user, session, compacted) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    summary, original = compacted["summary"], compacted["messages"][1]
    assert (
        client.post(_url(session, summary, f"pin/{original.pk}/"), headers=HTMX).status_code == 403
    )
    assert client.post(_url(session, summary, "edit/"), {"content": "x" * 300}).status_code == 403
    original.refresh_from_db()
    assert not original.pinned
    client.get(_url(session, summary))  # the page sets the cookie
    token = client.cookies[settings.CSRF_COOKIE_NAME].value
    response = client.post(
        _url(session, summary, f"pin/{original.pk}/"), headers={**HTMX, "X-CSRFToken": token}
    )
    assert response.status_code == 200


# --- edit the summary from the drawer ----------------------------------------------------


def test_edit_saves_keeps_the_framing_and_lists_who_edited(en_client, user, session, compacted):
    summary, record = compacted["summary"], compacted["record"]
    before = summary.content
    new_body = "## Goal\nShip the parser fix and keep port 8443"
    response = en_client.post(_url(session, summary, "edit/"), {"content": new_body}, headers=HTMX)
    assert response.status_code == 200
    summary.refresh_from_db()
    assert summary.content.startswith(SUMMARY_PREFIX)
    assert summary.content.endswith(RECALL_HINT["en"])
    assert new_body in summary.content and "src/parser.py" not in summary.content
    record.refresh_from_db()
    assert [(e["by"], e["previous"]) for e in record.edits] == [(user.username, before)]
    doc = parse(response.content)
    assert doc.elements[0].id == "summary-drawer"
    assert "keep port 8443" in _only(_marked(doc, "data-summary-text")).text()
    assert _marked(doc, "data-edit-saved")
    edits = _only(_marked(doc, "data-drawer-edits"))
    (entry,) = _marked(edits, "data-edit", "li")
    assert f"Edited by {user.username}" in entry.text()
    assert "src/parser.py" in entry.select("pre")[0].text()  # the text before


def test_edit_without_script_redirects_to_the_summary_page(en_client, session, compacted):
    summary = compacted["summary"]
    response = en_client.post(_url(session, summary, "edit/"), {"content": "## Goal\nNew"})
    assert (response.status_code, response["Location"]) == (302, _url(session, summary))


def test_only_a_summary_can_be_edited_here(en_client, session, compacted) -> None:
    plain = compacted["messages"][5]
    url = f"/chat/{session.pk}/summary/{plain.pk}/edit/"
    assert en_client.post(url, {"content": "hijacked"}, headers=HTMX).status_code == 404
    plain.refresh_from_db()
    assert plain.content == "Latest question"


def test_a_summary_no_longer_in_effect_shows_no_editor_and_refuses_an_edit(
    en_client, session, compacted
) -> None:
    from compaction.undo import compaction_undo

    summary = compacted["summary"]
    compaction_undo(session=session, record_id=compacted["record"].pk)
    doc = parse(en_client.get(_url(session, summary), headers=HTMX).content)
    assert doc.select("textarea") == [] and _marked(doc, "data-summary-undone")
    url = _url(session, summary, "edit/")
    drawer = en_client.post(url, {"content": "late edit"}, headers=HTMX)
    assert drawer.status_code == 200  # htmx swaps no error response: the drawer says it
    error = _only(_marked(parse(drawer.content), "data-edit-error"))
    assert "no longer in effect" in error.text()
    page = en_client.post(url, {"content": "late edit"})
    assert page.status_code == 409 and b"no longer in effect" in page.content
    summary.refresh_from_db()
    assert "late edit" not in summary.content


def test_a_blank_edit_is_refused(en_client, session, compacted) -> None:
    summary = compacted["summary"]
    response = en_client.post(_url(session, summary, "edit/"), {"content": "   "})
    assert response.status_code == 400
    assert _marked(parse(response.content), "data-edit-error")
    summary.refresh_from_db()
    assert BODY in summary.content


def test_summary_with_body_replaces_only_the_body() -> None:
    content = summary_content(BODY, "zh", recall_hint=True)
    edited = with_summary_body(content, "## 目标\n新的")
    assert edited.startswith(SUMMARY_PREFIX) and edited.endswith(RECALL_HINT["zh"])
    assert "## 目标\n新的" in edited and BODY not in edited
    assert with_summary_body("no framing at all", "new") == "new"


# --- the live summary -------------------------------------------------------------------


def test_progress_fills_the_pending_bubbles_region_escaped(session) -> None:
    sid = str(session.pk)
    html = render_event_html(CompactionProgress(sid, "## Goal\n<b>x</b> & y", 2, 3), language="en")
    (region,) = parse(html).elements
    assert (region.id, region.get("hx-swap-oob")) == ("compaction-progress", "true")
    assert "hidden" not in region.attrs
    assert "Summary so far · part 2 of 3" in region.text()
    assert "<b>" not in html and "&lt;b&gt;x&lt;/b&gt; &amp; y" in html
    single = render_event_html(CompactionProgress(sid, "text", 1, 1), language="en")
    assert "part" not in parse(single).elements[0].text()


def test_a_long_summary_so_far_shows_its_newest_characters(session) -> None:
    text = "a" * PROGRESS_TAIL_CHARS + "THE END"
    html = render_event_html(CompactionProgress(str(session.pk), text, 1, 1), language="en")
    shown = _only(_marked(parse(html), "data-progress-text")).text()
    assert shown.startswith("…") and shown.endswith("THE END")
    assert len(shown) == PROGRESS_TAIL_CHARS + 1


def test_only_the_pending_bubble_has_the_progress_region(en_client, session) -> None:
    from django.template.loader import render_to_string

    pending = parse(render_to_string("chat/partials/compaction_status.html", {"compacting": True}))
    region = pending.by_id("compaction-pending").select(id="compaction-progress")
    assert region and "hidden" in region[0].attrs  # until the first progress frame
    idle = parse(en_client.get(f"/chat/{session.pk}/").content)
    assert idle.by_id("compaction-status").elements == []  # chat.js drops a stray frame


def test_a_stored_bubble_for_the_socket_has_the_same_undo(session, compacted) -> None:
    event = message_to_json(compacted["event"])
    html = render_event_html(
        CompactionDone(str(session.pk), 4, compacted["summary"].pk, 900, 300, event, None),
        language="en",
    )
    form = _only(_marked(parse(html), "data-undo-form", "form"))
    values = {i.get("name"): i.get("value") for i in form.select("input")}
    assert values["compactionId"] == str(compacted["record"].pk)
