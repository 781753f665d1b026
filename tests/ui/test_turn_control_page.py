"""The chat page's side of issue 14 (items 1, 2, 3): a queued message is a chip under the
running turn, a failed or stopped turn is a bubble with Retry, Stop is on the page while
the agent works — live (the HTML encoder) and after a reload (the page)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from agents.event_records import EventRecord
from agents.events import CompactionFailed, ErrorEvent, MessageStored, TurnDone
from agents.message_format import message_to_json
from agents.models import SYSTEM_TYPE_TURN, ChatSession
from agents.reasons import TurnFailure
from agents.services import message_append, turn_event_append, user_message_append
from channels_app.html_encoder import render_event_html
from tests.ui.html import Node, parse

pytestmark = pytest.mark.django_db

HOSTILE = '<img src=x onerror="alert(1)">'


def _frame(event, language: str = "zh-hans") -> list[Node]:
    return parse(render_event_html(event, language=language)).elements


def _failure(session: ChatSession, **found) -> dict:
    failure = TurnFailure.of(
        "connection_error",
        "Could not connect to the model provider: ClientConnectorError",
        channel="本地 Ollama",
        model="qwen3:8b",
    )
    record = turn_event_append(
        session=session,
        record=EventRecord(
            SYSTEM_TYPE_TURN,
            "failed",
            reason=failure.reason,
            error=failure.wire_text(),
            channel="本地 Ollama",
            model="qwen3:8b",
        ),
    )
    return message_to_json(record)


def test_a_queued_message_is_a_chip_under_the_running_turn(session) -> None:
    queued = user_message_append(session=session, content=f"稍后再问 {HOSTILE}", queued=True)
    (target,) = _frame(MessageStored(str(session.pk), message_to_json(queued)))
    assert (target.id, target.get("hx-swap-oob")) == ("queued", "beforeend")
    (chip,) = target.elements
    assert chip.id == f"queued-{queued.pk}" and chip.get("data-role") == "queued"
    assert "排队中" in chip.text() and HOSTILE in chip.text()
    assert not [n for n in chip.iter() if n.tag == "img"]


def test_a_failed_turn_is_a_bubble_that_names_the_channel_and_offers_retry(session) -> None:
    record = _failure(session)
    for language, words in [
        (
            "zh-hans",
            ("Agent 未能回答", "无法连接模型服务商", "请检查模型渠道“本地 Ollama”（qwen3:8b）"),
        ),
        ("en", ("The agent could not answer", "Check the model channel “本地 Ollama” (qwen3:8b)")),
    ]:
        messages, *_ = _frame(MessageStored(str(session.pk), record), language)
        (bubble,) = messages.elements
        assert bubble.get("data-event") == "turn_failed" and bubble.get("role") == "alert"
        text = " ".join(bubble.text().split())
        assert all(w in text for w in words), text
        assert "ClientConnectorError" not in text
        (retry,) = bubble.find_all(lambda n: "data-retry" in n.attrs)
        assert retry.tag == "button" and retry.get("form") == "retry-form"
    # the error event that goes with it raises no second alert on the page
    (status,) = _frame(ErrorEvent("x", "connection_error", str(session.pk), recorded=True))
    assert (status.id, status.get("data-busy")) == ("turn-status", "false")


def test_a_stopped_turn_keeps_its_answer_marked_and_offers_retry(session) -> None:
    partial = message_append(
        session=session, role="assistant", content="写到一半", metadata={"stopped": True}
    )
    messages, _stream = _frame(MessageStored(str(session.pk), message_to_json(partial)))
    assert messages.find_all(lambda n: "data-stopped" in n.attrs)
    record = turn_event_append(
        session=session,
        record=EventRecord(SYSTEM_TYPE_TURN, "stopped", reason="stopped", error="已停止"),
    )
    messages, _stream = _frame(MessageStored(str(session.pk), message_to_json(record)), "en")
    (bubble,) = messages.elements
    assert bubble.get("data-event") == "turn_stopped"
    assert "Stopped. What the agent had written so far is kept." in bubble.text()
    (done,) = _frame(TurnDone(str(session.pk), stopped=True))
    assert done.get("data-busy") == "false"


def test_the_page_shows_queued_chips_the_stop_button_and_retry_after_a_reload(
    zh_client, session
) -> None:
    message_append(session=session, role="user", content="第一个问题")
    _failure(session)
    user_message_append(session=session, content="排队的问题", queued=True)
    ChatSession.objects.filter(pk=session.pk).update(
        lease_holder="t/host:1:abc", lease_expires_at=timezone.now() + timedelta(60)
    )
    doc = parse(zh_client.get(f"/chat/{session.pk}/").content)
    history = doc.by_id("messages").text()
    assert "第一个问题" in history and "排队的问题" not in history
    chips = doc.by_id("queued").has_class("queued-chip")
    assert [c.text().strip() for c in chips] == ["排队中排队的问题"]  # a badge, then the text
    assert doc.by_id("turn-status").get("data-busy") == "true", "a turn runs"
    stop = doc.by_id("stop-button")
    assert stop.get("form") == "stop-form" and stop.text().strip() == "停止"
    for form_id, kind in [("stop-form", "stop"), ("retry-form", "retry")]:
        form = doc.by_id(form_id)
        assert "ws-send" in form.attrs
        values = {n.get("name"): n.get("value") for n in form.find_all(lambda n: n.tag == "input")}
        assert values == {"type": kind, "sessionId": str(session.pk)}
    bubble = doc.find_all(lambda n: n.get("data-event") == "turn_failed")
    assert bubble and "本地 Ollama" in bubble[0].text()


def test_the_page_is_idle_when_no_turn_holds_the_session(zh_client, session) -> None:
    ChatSession.objects.filter(pk=session.pk).update(
        lease_holder="t/crashed:1:abc", lease_expires_at=timezone.now() - timedelta(1)
    )
    doc = parse(zh_client.get(f"/chat/{session.pk}/").content)
    assert doc.by_id("turn-status").get("data-busy") == "false"
    assert doc.by_id("queued").elements == []


def test_a_cancelled_compaction_says_so_without_the_failure_advice(session) -> None:
    *_, appended = _frame(CompactionFailed(str(session.pk), "已取消", "cancelled"), "en")
    (bubble,) = appended.elements
    assert bubble.get("data-event") == "compaction_cancelled"
    assert "The compaction was cancelled; the history is unchanged" in bubble.text()
    assert "start a new chat" not in bubble.text()
