"""Issue 17 on the service side: the audit record, undo, instructions, mode, cap, upTo,
pins, summary edits and one counter (CONTRACT §7)."""

from __future__ import annotations

import pytest
from django.db import connection

from agents.meter import meter_read
from agents.models import (
    ChatSession,
    CompactionMode,
    CompactionRecord,
    Message,
)
from agents.selectors import history_load, llm_history_load
from agents.services import (
    lease_acquire,
    message_pin_set,
    messages_bulk_append,
    session_record_usage,
)
from compaction import records, trigger
from compaction.controls import EditRefused, message_pin, summary_edit
from compaction.request import CompactionRequest
from compaction.run import compact
from compaction.undo import RecordNotFound, UndoRefused, compaction_undo
from condense.policy import MIN_TAIL_MESSAGES, CompactionPolicy
from scripted_llm import Fail, Reply
from tests.factories import make_user
from tests.support.history import session_to_compact
from tests.support.summaries import KEY_VALUE_SUMMARY

pytestmark = pytest.mark.django_db


def _view(session: ChatSession) -> list[tuple[int, str, bool]]:
    """The compacted view as the model gets it: ids, contents as shown, pins."""
    return [
        (m.pk, "[pruned]" if m.pruned_at else m.content, m.pinned)
        for m in llm_history_load(session=session)
    ]


# --- item 9: the audit record -------------------------------------------------------


def test_a_done_compaction_is_recorded_with_the_auxiliary_usage(llm_server) -> None:
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY, input_tokens=1234, output_tokens=321))
    session = session_to_compact(llm_server)
    outcome = compact(CompactionRequest(str(session.pk), reason="manual", trigger="api"))
    assert outcome.status == "done"
    record = CompactionRecord.objects.get(session=session)
    assert record.pk == outcome.record_id
    assert (record.trigger, record.status, record.reason) == ("api", "done", "")
    assert record.summary_message_id == outcome.summary_message_id
    assert (record.aux_input_tokens, record.aux_output_tokens) == (1234, 321)
    assert record.request_count == 1
    assert record.auxiliary_model == "aux-model"
    assert record.auxiliary_channel == session.agent.auxiliary_model_channel.name
    assert record.removed_count == outcome.removed_count
    assert (record.tokens_before, record.tokens_after) == (
        outcome.tokens_before,
        outcome.tokens_after,
    )
    assert record.duration_ms >= 0 and record.started_at is not None
    bubble = record.event_message
    assert bubble is not None and bubble.metadata["compactionId"] == record.pk
    assert outcome.event is not None and outcome.event.compaction_id == record.pk


def test_failed_and_skipped_compactions_are_recorded(llm_server) -> None:
    llm_server.enqueue(Fail(status=500, should_retry=False))
    session = session_to_compact(llm_server)
    failed = compact(CompactionRequest(str(session.pk), reason="manual", trigger="command"))
    assert failed.status == "failed"
    assert lease_acquire(session_id=session.pk, holder="elsewhere", seconds=60)
    compact(CompactionRequest(str(session.pk), reason="auto"))
    rows = list(records.records_for_session(session=session))
    assert [(r.trigger, r.status, r.reason) for r in rows] == [
        ("auto", "skipped", "in_progress"),
        ("command", "failed", "upstream_error"),
    ]
    assert rows[1].request_count == 1 and rows[1].auxiliary_model == "aux-model"


def test_a_compaction_under_the_threshold_is_a_skipped_record(llm_server) -> None:
    session = session_to_compact(llm_server, n=6)
    outcome = compact(CompactionRequest(str(session.pk), reason="auto"))
    assert outcome.status == "nothing"
    record = CompactionRecord.objects.get(session=session)
    assert (record.trigger, record.status, record.reason) == ("auto", "skipped", "under_threshold")


# --- items 3: standing instructions ------------------------------------------------------


def test_standing_instructions_and_the_focus_reach_the_summarizer(llm_server) -> None:
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY))
    session = session_to_compact(llm_server)
    session.agent.compaction_instructions = "Always keep every ticket number."
    session.agent.save()
    compact(CompactionRequest(str(session.pk), reason="manual", instructions="the parser bug"))
    prompt = llm_server.requests[0].body["messages"][0]["content"]
    assert "Always keep every ticket number." in prompt and "the parser bug" in prompt
    record = CompactionRecord.objects.get(session=session)
    assert record.instructions == "Always keep every ticket number.\n\nthe parser bug"
    summary = Message.objects.get(pk=record.summary_message_id)
    assert summary.metadata["instructions"] == record.instructions


# --- item 1: undo ----------------------------------------------------------------------


def test_undo_restores_the_compacted_view_and_keeps_later_messages(llm_server) -> None:
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY))
    session = session_to_compact(llm_server)
    before = _view(session)
    outcome = compact(CompactionRequest(str(session.pk), reason="manual"))
    later = messages_bulk_append(session=session, rows=[{"role": "user", "content": "later"}])
    undone = compaction_undo(session=session, record_id=outcome.record_id)
    assert undone.restored_count == outcome.removed_count
    assert _view(session) == [*before, (later[0].pk, "later", False)]
    summary = Message.objects.get(pk=outcome.summary_message_id)
    assert summary.compacted_at is not None and summary.metadata["undone"] is True
    record = CompactionRecord.objects.get(pk=outcome.record_id)
    assert record.status == "undone" and record.undone_at is not None
    session.refresh_from_db()
    assert session.compaction_count == 0
    with pytest.raises(UndoRefused) as refused:
        compaction_undo(session=session, record_id=outcome.record_id)
    assert refused.value.reason == "not_latest"


def test_only_the_latest_compaction_can_be_undone(llm_server) -> None:
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY), Reply(text=KEY_VALUE_SUMMARY))
    session = session_to_compact(llm_server)
    first = compact(CompactionRequest(str(session.pk), reason="manual"))
    after_first = _view(session)
    messages_bulk_append(session=session, rows=[{"role": "user", "content": "more " * 200}] * 10)
    second = compact(CompactionRequest(str(session.pk), reason="manual"))
    assert second.status == "done"
    with pytest.raises(UndoRefused) as refused:
        compaction_undo(session=session, record_id=first.record_id)
    assert refused.value.reason == "not_latest"
    compaction_undo(session=session, record_id=second.record_id)
    assert _view(session)[: len(after_first)] == after_first  # the first summary is back
    compaction_undo(session=session, record_id=first.record_id)  # now the latest in effect
    assert Message.objects.filter(session=session, compacted_at__isnull=False).count() == 2


def test_undo_without_a_compaction_and_of_a_foreign_record(llm_server) -> None:
    session = session_to_compact(llm_server, n=6)
    with pytest.raises(UndoRefused) as refused:
        compaction_undo(session=session)
    assert refused.value.reason == "nothing_to_undo"
    with pytest.raises(RecordNotFound):
        compaction_undo(session=session, record_id=999_999)


def test_undoing_an_automatic_compaction_pauses_automatic_compaction(llm_server) -> None:
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY))
    session = session_to_compact(llm_server)
    outcome = compact(CompactionRequest(str(session.pk), reason="auto", force=True))
    compaction_undo(session=session, record_id=outcome.record_id)
    session.refresh_from_db()
    assert session.auto_compaction_paused_reason == trigger.PAUSED_UNDONE


# --- item 8: upTo ---------------------------------------------------------------------


def test_up_to_compacts_only_what_comes_before_the_message(llm_server) -> None:
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY))
    session = session_to_compact(llm_server)
    visible = llm_history_load(session=session)
    cut = visible[20]
    outcome = compact(CompactionRequest(str(session.pk), reason="manual", up_to=cut.pk))
    assert outcome.status == "done"
    compacted = set(
        Message.objects.filter(session=session, compacted_at__isnull=False).values_list(
            "pk", flat=True
        )
    )
    # the newest user messages of the span stay verbatim (anchors); every answer goes
    assert all(m.pk in compacted for m in visible[2:20] if m.role == "assistant")
    assert not any(m.pk in compacted for m in visible[20:])
    record = CompactionRecord.objects.get(session=session)
    assert record.up_to_message_id == cut.pk


def test_up_to_an_unknown_message_fails_clearly(llm_server) -> None:
    session = session_to_compact(llm_server)
    outcome = compact(CompactionRequest(str(session.pk), reason="manual", up_to=999_999))
    assert (outcome.status, outcome.reason) == ("failed", "unknown_message")
    assert llm_server.requests == []


# --- items 4, 5: mode and cap ------------------------------------------------------------


def _reading_over(session: ChatSession, used: int):
    session_record_usage(session=session, input_tokens=used, output_tokens=1, input_position=10**18)
    return meter_read(session=session)


@pytest.mark.parametrize(
    ("mode", "due", "suggested"),
    [(CompactionMode.AUTO, True, False), (CompactionMode.ASK, False, True), ("off", False, False)],
)
def test_the_mode_decides_between_compacting_and_asking(llm_server, mode, due, suggested) -> None:
    session = session_to_compact(llm_server)
    session.agent.compaction_mode = mode
    session.agent.save()
    reading = _reading_over(session, 190_000)
    assert reading.over_threshold
    count = len(llm_history_load(session=session))
    assert trigger.auto_compaction_due(session=session, reading=reading, visible_count=count) is due
    event = trigger.compaction_suggest(session=session, reading=reading, visible_count=count)
    assert (event is not None) is suggested
    if event is not None:
        assert event.to_json()["type"] == "compaction_suggested"
        assert event.to_json()["context"]["usedTokens"] == 190_000
        # once per crossing
        again = trigger.compaction_suggest(session=session, reading=reading, visible_count=count)
        assert again is None


def test_the_trigger_waits_for_the_cores_minimum_tail(llm_server) -> None:
    """One minimum tail (issue 23): the core keeps it verbatim, and the trigger waits for more
    history than the head and that tail."""
    assert CompactionPolicy(context_window=10_000).min_tail_messages == MIN_TAIL_MESSAGES
    session = session_to_compact(llm_server)
    reading = _reading_over(session, 190_000)
    least = session.agent.compaction_protect_first_n + MIN_TAIL_MESSAGES
    assert not trigger.auto_compaction_due(session=session, reading=reading, visible_count=least)
    assert trigger.auto_compaction_due(session=session, reading=reading, visible_count=least + 1)


def test_the_token_cap_fires_before_the_percentage(llm_server) -> None:
    session = session_to_compact(llm_server)  # a 200k window at 70 %: 140k
    count = len(llm_history_load(session=session))
    reading = _reading_over(session, 60_000)
    assert not trigger.auto_compaction_due(session=session, reading=reading, visible_count=count)
    session.agent.compaction_token_cap = 50_000
    session.agent.save()
    reading = meter_read(session=session)
    assert reading.threshold_tokens == 50_000
    assert trigger.auto_compaction_due(session=session, reading=reading, visible_count=count)


def test_an_automatic_compaction_at_the_cap_compacts_under_it(llm_server) -> None:
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY))
    session = session_to_compact(llm_server)  # ~3,500 estimated tokens, a 200k window
    session.agent.compaction_token_cap = 2_000
    session.agent.save()
    outcome = compact(CompactionRequest(str(session.pk), reason="auto"))
    assert outcome.status == "done", outcome.reason
    assert outcome.tokens_after < 2_000 <= outcome.tokens_before


# --- item 10: one counter ------------------------------------------------------------------


def test_the_compaction_figures_are_the_token_bars(llm_server) -> None:
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY))
    session = session_to_compact(llm_server)
    # the provider measured 3× the estimate (a Chinese conversation, say)
    estimate = meter_read(session=session).used_tokens
    reading = _reading_over(session, estimate * 3)
    outcome = compact(CompactionRequest(str(session.pk), reason="manual"))
    assert outcome.tokens_before == reading.used_tokens
    session.refresh_from_db()
    after = meter_read(session=session)
    assert after.used_tokens == outcome.tokens_after
    assert abs(session.token_calibration - 3.0) < 0.01
    record = CompactionRecord.objects.get(session=session)
    assert (record.tokens_before, record.tokens_after) == (reading.used_tokens, after.used_tokens)
    bubble = record.event_message
    assert bubble is not None
    saved = round(100 * (reading.used_tokens - after.used_tokens) / reading.used_tokens)
    assert bubble.metadata["savedPercent"] == saved


# --- items 2, 6: pins and edits ----------------------------------------------------------


def test_pinning_a_compacted_original_brings_it_back(llm_server) -> None:
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY))
    session = session_to_compact(llm_server)
    outcome = compact(CompactionRequest(str(session.pk), reason="manual"))
    gone = Message.objects.filter(session=session, compacted_at__isnull=False).first()
    assert gone is not None
    changed = message_pin(session=session, message_id=gone.pk, pinned=True)
    assert [m.pk for m in changed] == [gone.pk]
    view = history_load(session=session, include_events=False)
    assert gone.pk in [m.pk for m in view]
    assert [m.pk for m in view].index(gone.pk) > [m.pk for m in view].index(
        outcome.summary_message_id
    )
    message_pin(session=session, message_id=gone.pk, pinned=False)
    assert Message.objects.get(pk=gone.pk).pinned is False


def test_a_summary_edit_is_kept_in_the_audit(llm_server) -> None:
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY))
    session = session_to_compact(llm_server)
    outcome = compact(CompactionRequest(str(session.pk), reason="manual"))
    editor = make_user("editor")
    summary = summary_edit(
        session=session,
        message_id=outcome.summary_message_id,
        content="## 目标\nedited by hand",
        editor=editor,
    )
    assert summary.content == "## 目标\nedited by hand" and summary.metadata["edited"]
    record = CompactionRecord.objects.get(pk=outcome.record_id)
    assert len(record.edits) == 1
    assert record.edits[0]["by"] == "editor" and record.edits[0]["byId"] == editor.pk
    assert (
        record.edits[0]["previous"].startswith("[CONTEXT COMPACTION]")
        or record.edits[0]["previous"]
    )
    plain = Message.objects.filter(session=session, is_compaction_summary=False).first()
    assert plain is not None
    with pytest.raises(EditRefused) as refused:
        summary_edit(session=session, message_id=plain.pk, content="x", editor=editor)
    assert refused.value.reason == "not_a_summary"
    compaction_undo(session=session, record_id=outcome.record_id)
    with pytest.raises(EditRefused) as refused:
        summary_edit(
            session=session, message_id=outcome.summary_message_id, content="x", editor=editor
        )
    assert refused.value.reason == "summary_not_active"


# --- item 9: every path writes its record; item 7: what it dropped ----------------------


def test_the_command_and_the_admin_action_write_their_records(llm_server, client) -> None:
    from io import StringIO

    from django.core.management import call_command
    from django.urls import reverse

    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY), Reply(text=KEY_VALUE_SUMMARY))
    session = session_to_compact(llm_server)
    call_command("compact_session", str(session.pk), stdout=StringIO(), stderr=StringIO())
    messages_bulk_append(session=session, rows=[{"role": "user", "content": "more " * 200}] * 10)
    admin_user = make_user("root", is_staff=True, is_superuser=True)
    client.force_login(admin_user)
    response = client.post(
        reverse("admin:agents_chatsession_changelist"),
        {"action": "compact_selected", "_selected_action": [str(session.pk)]},
    )
    assert response.status_code == 302
    rows = list(records.records_for_session(session=session))
    assert [(r.trigger, r.status) for r in rows] == [("manual", "done"), ("command", "done")]
    listing = client.get(reverse("admin:agents_compactionrecord_changelist"))
    assert listing.status_code == 200 and b"command" in listing.content


def test_what_a_compaction_dropped_is_kept_on_its_record(llm_server, monkeypatch) -> None:
    """The wiring of ``core.dropped_facts``: the summarized originals (in full) and the text
    of what was kept go in; its facts are stored on the record."""
    from dataclasses import dataclass

    import condense as core

    seen: dict[str, object] = {}

    @dataclass(frozen=True)
    class Fact:
        value: str
        kind: str
        message_id: int | None

    def fake(originals, kept_text, limit=200):
        seen["ids"] = [m.id for m in originals]
        seen["kept"] = kept_text
        return [Fact("src/lost.py", "path", originals[0].id)]

    monkeypatch.setattr(core, "dropped_facts", fake, raising=False)
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY))
    session = session_to_compact(llm_server)
    outcome = compact(CompactionRequest(str(session.pk), reason="manual"))
    record = CompactionRecord.objects.get(pk=outcome.record_id)
    compacted = set(
        Message.objects.filter(session=session, compacted_at__isnull=False).values_list(
            "pk", flat=True
        )
    )
    assert set(seen["ids"]) == compacted  # type: ignore[arg-type]
    assert "关键值 42" in str(seen["kept"])  # the summary is part of what was kept
    assert record.dropped == [{"value": "src/lost.py", "kind": "path", "messageId": min(compacted)}]
    assert records.record_json(record, detail=True)["dropped"] == record.dropped


def test_pins_that_leave_no_room_fail_clearly(llm_server) -> None:
    session = session_to_compact(llm_server)  # 40 turns of ~85 estimated tokens each
    session.agent.compaction_token_cap = 1_024
    session.agent.save()
    middle = llm_history_load(session=session)[4:30]
    Message.objects.filter(pk__in=[m.pk for m in middle]).update(pinned=True)
    before = _view(session)
    outcome = compact(CompactionRequest(str(session.pk), reason="manual"))
    assert (outcome.status, outcome.reason) == ("failed", "pins_too_long")
    assert _view(session) == before and llm_server.requests == []


@pytest.mark.django_db(transaction=True)  # the model's thread pins: it must see the rows
def test_a_pin_that_slips_in_while_the_summary_is_written_fails_the_write_back(llm_server):
    """Issue 27 item 6: the pin stands and the compaction stores nothing (history_changed);
    the refusal before it (409 while compacting) leaves only this race."""
    session = session_to_compact(llm_server)
    target = Message.objects.filter(session=session).order_by("position")[10]

    def pin_meanwhile(body, wire):
        try:
            message_pin_set(message=Message.objects.get(pk=target.pk), pinned=True)
        finally:
            connection.close()  # this thread's own connection
        return Reply(text=KEY_VALUE_SUMMARY)

    llm_server.responder = pin_meanwhile
    outcome = compact(CompactionRequest(str(session.pk)))
    assert (outcome.status, outcome.reason) == ("failed", "history_changed")
    assert Message.objects.get(pk=target.pk).pinned
    assert not Message.objects.filter(session=session, compacted_at__isnull=False).exists()
