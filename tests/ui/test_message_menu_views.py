"""Issue 17 on the chat page (items 2, 4, 8, 11), without a browser: the "⋯" menu of each
stored message, pinning from it (web/pin_views.py), the token bar's pins and context panel,
and the ask-mode callout — as the page renders them and as the socket's HTML encoder does."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone

from agents.events import CompactionSuggested, TokenUpdate
from agents.models import ChatSession, CompactionMode, Message
from agents.services import compaction_apply, message_append, session_record_usage
from channels_app.html_encoder import render_event_html
from compaction.controls import message_pin
from tests.factories import make_agent, make_session
from tests.ui.html import Node, parse

pytestmark = pytest.mark.django_db

SID = "7d3b3c8e-6a43-4a4b-9d0c-5b8f0f7f2d11"
PARTS = ("systemPrompt", "toolDefinitions", "pins", "summary", "messages", "free")
HTMX = {"HX-Request": "true"}


def _chat(session: ChatSession) -> list[Message]:
    """A user message, an answer with a tool call, its result, and a last question."""
    user = message_append(session=session, role="user", content="Split src/app/main.py")
    call = message_append(
        session=session,
        role="assistant",
        content="Reading it first.",
        tool_calls=[{"id": "c1", "name": "read_file", "arguments": '{"path": "main.py"}'}],
    )
    result = message_append(
        session=session,
        role="tool",
        content="def main(): ...",
        tool_call_id="c1",
        metadata={"toolName": "read_file"},
    )
    last = message_append(session=session, role="user", content="And the tests?")
    return [user, call, result, last]


def _page(client: Client, session: ChatSession, query: str = "") -> Node:
    response = client.get(f"/chat/{session.pk}/{query}")
    assert response.status_code == 200
    return parse(response.content)


def _inputs(form: Node) -> dict[str, str | None]:
    return {n.get("name"): n.get("value") for n in form.select("input")}


def _usage(session: ChatSession, tokens: int) -> None:
    """The provider reported ``tokens`` input tokens for the whole visible history."""
    last = session.messages.order_by("-position").first()
    assert last is not None
    session_record_usage(
        session=session, input_tokens=tokens, output_tokens=1, input_position=last.position
    )


def _parts(breakdown: Node) -> dict[str, int]:
    return {
        row.get("data-part"): int(row.select("td", **{"data-tokens": True})[0].get("data-tokens"))
        for row in breakdown.select("tr", **{"data-part": True})
    }


# --- the menu ------------------------------------------------------------------------


def test_every_stored_user_assistant_and_tool_message_has_the_menu(en_client, session) -> None:
    rows = _chat(session)
    doc = _page(en_client, session)
    for message in rows:
        article = doc.by_id(f"msg-{message.pk}")
        (menu,) = article.select("details", **{"data-msg-menu": True})
        toggle = menu.select("summary")[0]
        assert toggle.has_class("sr-only")[0].text() == "Message actions"
        assert toggle.get("title") == "Message actions"
        pin_url = f"/chat/{session.pk}/messages/{message.pk}/pin/"
        (pin,) = menu.select("form", **{"hx-post": pin_url})
        assert (pin.get("method"), pin.get("action")) == ("post", pin_url)
        assert pin.get("hx-target") == "closest .msg" and pin.get("hx-swap") == "outerHTML"
        assert _inputs(pin) == {"pinned": "true"}
        assert pin.select("button")[0].get("data-pin-toggle") == "pin"
        (compact,) = menu.select("form", **{"data-compact-up-to": True})
        assert "ws-send" in compact.attrs and compact.get("data-confirm")
        assert _inputs(compact) == {
            "type": "compact",
            "sessionId": str(session.pk),
            "upTo": str(message.pk),
        }
        assert not article.select(**{"data-pinned": True})


def test_summaries_and_events_have_no_menu(zh_client, session) -> None:
    rows = [message_append(session=session, role="user", content=f"m{i}") for i in range(5)]
    applied = compaction_apply(
        session=session,
        compacted_ids=[m.pk for m in rows[1:3]],
        pruned_ids=[],
        summary_content="## Goal\nsplit main.py",
        pruned_token_estimate=0,
        event_content="done",
        event_payload={"status": "done", "removedCount": 2},
    )
    doc = _page(zh_client, session)
    summary = doc.by_id(f"msg-{applied.summary_message.pk}")
    assert summary is not None and not summary.select("details", **{"data-msg-menu": True})
    menus = doc.by_id("messages").select("details", **{"data-msg-menu": True})
    assert len(menus) == 3  # the messages left in the compacted view: m0, m3, m4
    # the full view: a compacted original can be pinned (back), not compacted up to
    full = _page(zh_client, session, "?view=full")
    compacted = full.by_id(f"msg-{rows[1].pk}")
    assert "is-compacted" in compacted.classes
    assert compacted.select("form", **{"hx-post": f"/chat/{session.pk}/messages/{rows[1].pk}/pin/"})
    assert not compacted.select("form", **{"data-compact-up-to": True})


def test_the_menu_speaks_english(en_client, session) -> None:
    (user, *_rest) = _chat(session)
    menu = _page(en_client, session).by_id(f"msg-{user.pk}")
    text = " ".join(menu.text().split())
    assert "Message actions" in text and "Pin" in text and "Compact up to here" in text
    confirm = menu.select("form", **{"data-compact-up-to": True})[0].get("data-confirm")
    assert confirm.startswith("Compact every message before this one?")


# --- pinning ---------------------------------------------------------------------------


def test_pin_from_the_menu_returns_the_bubble_with_its_badge_and_the_meter(
    en_client, session
) -> None:
    user, call, result, _last = _chat(session)
    response = en_client.post(
        f"/chat/{session.pk}/messages/{call.pk}/pin/", {"pinned": "true"}, headers=HTMX
    )
    assert response.status_code == 200
    call.refresh_from_db()
    assert call.pinned
    doc = parse(response.content)
    article, bar, status, breakdown = doc.elements
    assert article.id == f"msg-{call.pk}" and article.get("hx-swap-oob") is None
    assert "is-pinned" in article.classes
    (badge,) = article.select(**{"data-pinned": True})
    assert badge.text() == "pinned" and badge.get("title").startswith("Pinned: never summarized")
    (pin,) = article.select("form", **{"hx-post": f"/chat/{session.pk}/messages/{call.pk}/pin/"})
    assert _inputs(pin) == {"pinned": "false"}
    assert pin.select("button")[0].get("data-pin-toggle") == "unpin"
    # the pins' cost, in the bar's aria text, the status line's tooltip and the panel
    assert (bar.id, bar.get("hx-swap-oob")) == ("token-bar", "true")
    pins = int(bar.get("data-pins"))
    assert pins > 0
    assert bar.get("aria-valuetext").endswith(f" · Pinned messages: {pins:,} tokens")
    assert status.id == "meter-status"
    assert f"{pins:,} tokens" in status.select(**{"data-pins-cost": True})[0].text()
    assert (breakdown.id, breakdown.get("hx-swap-oob")) == ("context-breakdown", "true")
    assert _parts(breakdown)["pins"] == pins

    response = en_client.post(
        f"/chat/{session.pk}/messages/{call.pk}/pin/", {"pinned": "false"}, headers=HTMX
    )
    article, bar, *_ = parse(response.content).elements
    call.refresh_from_db()
    assert not call.pinned and not article.select(**{"data-pinned": True})
    assert "is-pinned" not in article.classes
    assert bar.get("data-pins") == "0" and "Pinned" not in bar.get("aria-valuetext")


def test_a_pinned_message_is_marked_in_both_views(zh_client, session) -> None:
    rows = [message_append(session=session, role="user", content=f"m{i}") for i in range(5)]
    message_pin(session=session, message_id=rows[3].pk, pinned=True)
    for query in ("", "?view=full"):
        article = _page(zh_client, session, query).by_id(f"msg-{rows[3].pk}")
        assert "is-pinned" in article.classes, query
        assert article.select(**{"data-pinned": True}), query
        other = _page(zh_client, session, query).by_id(f"msg-{rows[2].pk}")
        assert not other.select(**{"data-pinned": True}), query


def test_pinning_without_htmx_goes_back_to_the_chat(zh_client, session) -> None:
    user, *_ = _chat(session)
    response = zh_client.post(f"/chat/{session.pk}/messages/{user.pk}/pin/", {"pinned": "true"})
    assert response.status_code == 302 and response["Location"] == f"/chat/{session.pk}/"
    user.refresh_from_db()
    assert user.pinned


def test_pinning_is_the_owners_and_asks_exactly(en_client, session, other_user, agent) -> None:
    user, *_ = _chat(session)
    url = f"/chat/{session.pk}/messages/{user.pk}/pin/"
    assert en_client.get(url).status_code == 405
    bad = en_client.post(url, {"pinned": "yes"}, headers=HTMX)
    assert bad.status_code == 400
    assert bad.content.decode() == "Send pinned=true or pinned=false."
    # a message of another chat, through this chat's address
    elsewhere = make_session(owner=session.owner, agent=agent)
    foreign = message_append(session=elsewhere, role="user", content="x")
    foreign_url = f"/chat/{session.pk}/messages/{foreign.pk}/pin/"
    assert en_client.post(foreign_url, {"pinned": "true"}).status_code == 404
    # someone else's chat
    mallory = Client()
    mallory.force_login(other_user)
    assert mallory.post(url, {"pinned": "true"}, headers=HTMX).status_code == 404
    # signed out
    assert Client().post(url, {"pinned": "true"}).status_code == 302
    user.refresh_from_db()
    foreign.refresh_from_db()
    assert not user.pinned and not foreign.pinned


def test_pinning_needs_the_csrf_token(user, session) -> None:
    message = _chat(session)[0]
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    client.get(f"/chat/{session.pk}/")  # sets the CSRF cookie, as the page does
    url = f"/chat/{session.pk}/messages/{message.pk}/pin/"
    assert client.post(url, {"pinned": "true"}, headers=HTMX).status_code == 403
    token = client.cookies[settings.CSRF_COOKIE_NAME].value
    sent = client.post(url, {"pinned": "true"}, headers={**HTMX, "X-CSRFToken": token})
    assert sent.status_code == 200
    message.refresh_from_db()
    assert message.pinned


# --- the token bar and the context panel -------------------------------------------------


def test_the_page_renders_the_context_panel_from_the_bars_count(en_client, session) -> None:
    rows = _chat(session)
    message_pin(session=session, message_id=rows[0].pk, pinned=True)
    _usage(session, 3_000)
    doc = _page(en_client, session)
    bar = doc.by_id("token-bar")
    toggle = doc.by_id("context-toggle")
    assert toggle.tag == "button" and toggle.get("type") == "button"
    assert (toggle.get("aria-expanded"), toggle.get("aria-controls")) == ("false", "context-panel")
    panel = doc.by_id("context-panel")
    assert "hidden" in panel.attrs and panel.get("aria-labelledby") == "context-panel-title"
    parts = _parts(panel.by_id("context-breakdown"))
    assert tuple(parts) == PARTS
    assert sum(parts.values()) == int(bar.get("aria-valuemax")) == 8000
    assert sum(v for k, v in parts.items() if k != "free") == int(bar.get("aria-valuenow"))
    # the same figures as the context API (one counter)
    api = en_client.get(f"/api/sessions/{session.pk}/context/").json()["context"]["breakdown"]
    assert parts == {key: api[key] for key in PARTS}
    assert parts["pins"] > 0 and int(bar.get("data-pins")) == parts["pins"]
    assert f"{parts['pins']:,} tokens" in bar.get("aria-valuetext")
    shares = [row.select("td")[1].text() for row in panel.select("tr", **{"data-part": True})]
    assert shares[-1] == f"{100 * parts['free'] / 8000:.1f}%"


def test_without_pins_the_bar_says_nothing_of_them(en_client, session) -> None:
    _chat(session)
    doc = _page(en_client, session)
    assert doc.by_id("token-bar").get("data-pins") == "0"
    text = doc.by_id("token-bar").get("aria-valuetext")
    assert re.fullmatch(r"[\d,]+ of 8,000 tokens \(\d+%\)", text), text
    assert not doc.by_id("meter-status").select(**{"data-pins-cost": True})


def _meter(used: int, **figures: Any) -> TokenUpdate:
    reading: dict[str, Any] = {"max_tokens": 8000, "threshold_percent": 70, "estimated": False}
    reading |= {"input_tokens": used, "output_tokens": 0, "api_calls": 1, **figures}
    return TokenUpdate(session_id=SID, used_tokens=used, **reading)


BREAKDOWN = {
    "systemPrompt": 300,
    "toolDefinitions": 900,
    "pins": 450,
    "summary": 0,
    "messages": 2350,
    "free": 4000,
}


def test_a_token_update_with_a_breakdown_refreshes_the_panel(session) -> None:
    html = render_event_html(_meter(4000, breakdown=BREAKDOWN), language="en")
    nodes = parse(html).elements
    assert all(n.id and n.get("hx-swap-oob") == "true" for n in nodes)
    ids = [n.id for n in nodes]
    assert ids.index("context-breakdown") > ids.index("meter-status")
    assert "context-panel" not in ids and "context-toggle" not in ids  # it stays as it is
    breakdown = next(n for n in nodes if n.id == "context-breakdown")
    assert _parts(breakdown) == BREAKDOWN and sum(BREAKDOWN.values()) == 8000
    labels = [r.select("th")[0].text() for r in breakdown.select("tr", **{"data-part": True})]
    assert labels == [
        "System prompt",
        "Tool definitions",
        "Pinned messages",
        "Summary",
        "Messages",
        "Free",
    ]
    bar = nodes[0]
    assert bar.get("aria-valuetext") == "4,000 of 8,000 tokens (50%) · Pinned messages: 450 tokens"
    status = next(n for n in nodes if n.id == "meter-status")
    assert status.select(**{"data-pins-cost": True})[0].text() == "Pinned messages: 450 tokens"
    # a reading without its breakdown leaves the panel's last figures
    assert "context-breakdown" not in [
        n.id for n in parse(render_event_html(_meter(4000), language="en")).elements
    ]


# --- ask mode ----------------------------------------------------------------------------


def _callout(slot: Node) -> Node:
    (callout,) = slot.select(**{"data-testid": "compaction-suggested"})
    return callout


def test_compaction_suggested_shows_the_callout_with_three_actions() -> None:
    (slot,) = parse(
        render_event_html(CompactionSuggested(SID, {"usedTokens": 5800}), language="en")
    ).elements
    assert (slot.id, slot.get("hx-swap-oob")) == ("compaction-suggestion", "true")
    callout = _callout(slot)
    assert callout.get("role") == "alert"
    assert "The context reached the compaction threshold" in callout.text()
    now, instructions = callout.select("form")
    assert "ws-send" in now.attrs and _inputs(now) == {"type": "compact", "sessionId": SID}
    buttons = {b.text().strip(): b for b in now.select("button")}
    assert set(buttons) == {"Compact now", "Compact with instructions", "Not now"}
    assert buttons["Compact now"].get("type") == "submit"
    reveal = buttons["Compact with instructions"]
    assert reveal.get("aria-expanded") == "false"
    assert reveal.get("aria-controls") == instructions.id and "hidden" in instructions.attrs
    assert "data-suggest-dismiss" in buttons["Not now"].attrs
    assert "ws-send" in instructions.attrs
    assert _inputs(instructions) == {"type": "compact", "sessionId": SID}
    (field,) = instructions.select("textarea")
    assert field.get("name") == "instructions" and "required" in field.attrs
    assert int(field.get("maxlength")) == 2000
    label = instructions.select("label", **{"for": field.id})[0]
    assert label.text() == "Instructions for the summary"
    zh = _callout(
        parse(render_event_html(CompactionSuggested(SID, {}), language="zh-hans")).elements[0]
    )
    assert zh.select("form")[0].select("button")[0].text() == "立即压缩"


def test_a_reading_under_the_threshold_takes_the_callout_away() -> None:
    under = [n for n in parse(render_event_html(_meter(1000), language="en")).elements]
    (slot,) = [n for n in under if n.id == "compaction-suggestion"]
    assert slot.get("hx-swap-oob") == "true" and slot.elements == []
    over = parse(render_event_html(_meter(5600), language="en")).elements  # 70% exactly
    assert "compaction-suggestion" not in [n.id for n in over]
    # the agent's cap counts as the threshold too
    capped = parse(render_event_html(_meter(3000, token_cap=2000), language="en")).elements
    assert "compaction-suggestion" not in [n.id for n in capped]


def _ask_session(user: Any, channel: Any, *, mode: str = CompactionMode.ASK) -> ChatSession:
    agent = make_agent(model_channel=channel, compaction_mode=mode)
    session = make_session(owner=user, agent=agent)
    _chat(session)
    return session


def _suggested(session: ChatSession) -> None:
    ChatSession.objects.filter(pk=session.pk).update(compaction_suggested_at=timezone.now())


@pytest.mark.parametrize(
    ("mode", "suggested", "used", "shown"),
    [
        (CompactionMode.ASK, True, 6000, True),
        (CompactionMode.ASK, True, 5600, True),  # at the threshold
        (CompactionMode.ASK, True, 3000, False),  # compacted or undone since: under it
        (CompactionMode.ASK, False, 6000, False),  # not suggested (yet)
        (CompactionMode.AUTO, True, 6000, False),  # the mode changed since
    ],
)
def test_the_page_asks_again_on_load(
    zh_client, user, channel, mode, suggested, used, shown
) -> None:
    session = _ask_session(user, channel, mode=mode)
    if suggested:
        _suggested(session)
    _usage(session, used)
    slot = _page(zh_client, session).by_id("compaction-suggestion")
    assert slot is not None
    assert bool(slot.select(**{"data-testid": "compaction-suggested"})) is shown
    if shown:
        now = _callout(slot).select("form")[0]
        assert _inputs(now) == {"type": "compact", "sessionId": str(session.pk)}


def test_mode_off_over_the_window_still_warns(zh_client, user, channel) -> None:
    session = _ask_session(user, channel, mode=CompactionMode.OFF)
    _usage(session, 9_000)
    doc = _page(zh_client, session)
    (alert,) = doc.select(**{"data-testid": "over-window"})
    assert alert.get("role") == "alert"
    assert not doc.by_id("compaction-suggestion").elements
    # and live, from a token_update
    frame = parse(render_event_html(_meter(9_000), language="en"))
    assert frame.by_id("meter-alert").select(**{"data-testid": "over-window"})
