"""Issue 17 item 6 on the service side: a compaction previewed before it applies, then
accepted (as written or edited), refused, discarded or expired (``compaction.preview``)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import transaction
from django.utils import timezone

import condense as core
from agents.events import CompactionPreviewReady
from agents.models import ChatSession, CompactionPreview, CompactionRecord, Message
from agents.selectors import llm_history_load
from agents.services import lease_acquire, messages_bulk_append
from compaction.controls import message_pin
from compaction.outcome import CompactionOutcome
from compaction.preview import (
    PreviewNotFound,
    PreviewRefused,
    compaction_preview,
    preview_accept,
    preview_discard,
    preview_for_session,
)
from compaction.request import CompactionRequest
from compaction.run import compact
from scripted_llm import Fail, Reply
from tests.support.history import history_rows, session_to_compact
from tests.support.summaries import KEY_VALUE_SUMMARY

pytestmark = pytest.mark.django_db


class _Rollback(Exception):
    pass


def _preview(session: ChatSession, **kwargs: Any) -> CompactionPreviewReady:
    outcome = compaction_preview(session=session, created_by=session.owner.pk, **kwargs)
    assert outcome.status == "previewed", outcome
    assert isinstance(outcome.event, CompactionPreviewReady)
    return outcome.event


def _everything(session: ChatSession) -> list[dict[str, Any]]:
    """Every stored message of the session, events included, every field."""
    return list(Message.objects.filter(session=session).order_by("id").values())


def _shape(session: ChatSession, outcome: CompactionOutcome) -> dict[str, Any]:
    """What a compaction left behind, without the ids of the rows it created."""
    session.refresh_from_db()
    record = CompactionRecord.objects.get(pk=outcome.record_id)
    summary = Message.objects.get(pk=outcome.summary_message_id)
    bubble = record.event_message
    assert bubble is not None
    return {
        "view": [
            (m.pk if not m.is_compaction_summary else "summary", m.role, m.content, m.pinned)
            for m in llm_history_load(session=session)
        ],
        "replaced": sorted(summary.replaced.values_list("pk", flat=True)),
        "summary": (summary.position, summary.content, summary.token_estimate, summary.metadata),
        "bubble": (
            bubble.content,
            {
                k: v
                for k, v in bubble.metadata.items()
                if k not in {"compactionId", "summaryMessageId"}
            },
        ),
        "figures": (outcome.removed_count, outcome.tokens_before, outcome.tokens_after),
        "record": (
            record.trigger,
            record.status,
            record.tokens_before,
            record.tokens_after,
            record.removed_count,
            record.pruned_ids,
            record.request_count,
            record.aux_input_tokens,
            record.aux_output_tokens,
            record.auxiliary_model,
            record.instructions,
            record.up_to_message_id,
            record.dropped,
        ),
        "session": (
            session.compaction_count,
            session.token_calibration,
            session.auto_compaction_paused_reason,
            session.lease_holder,
        ),
    }


# --- a preview writes nothing ----------------------------------------------------------


def test_a_preview_writes_nothing_to_the_history(
    llm_server, django_capture_on_commit_callbacks
) -> None:
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY, input_tokens=800, output_tokens=80))
    session = session_to_compact(llm_server)
    before = _everything(session)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        event = _preview(session, instructions="keep the parser")
    assert _everything(session) == before  # not even a bubble
    session.refresh_from_db()
    assert (session.compaction_count, session.lease_holder) == (0, "")
    assert not CompactionRecord.objects.filter(session=session).exists()  # written on accept
    row = CompactionPreview.objects.get(session=session)
    assert row.pk == event.preview_id
    assert core.summary_body(row.summary) == event.summary
    assert KEY_VALUE_SUMMARY.strip() in event.summary
    assert event.removed_count > 0 and event.tokens_after < event.tokens_before
    assert row.instructions == "keep the parser"
    assert (row.audit["inputTokens"], row.audit["outputTokens"], row.audit["requests"]) == (
        800,
        80,
        1,
    )
    assert len(callbacks) == 1  # the compaction_preview event, after the commit
    assert event.to_json() == {
        "type": "compaction_preview",
        "sessionId": str(session.pk),
        "previewId": row.pk,
        "summary": event.summary,
        "removedCount": event.removed_count,
        "tokensBefore": event.tokens_before,
        "tokensAfter": event.tokens_after,
    }


def test_a_failed_preview_keeps_nothing(llm_server) -> None:
    llm_server.enqueue(Fail(status=500, should_retry=False))
    session = session_to_compact(llm_server)
    outcome = compaction_preview(session=session, created_by=None)
    assert (outcome.status, outcome.reason) == ("failed", "upstream_error")
    assert not CompactionPreview.objects.exists()
    record = CompactionRecord.objects.get(session=session)
    assert (record.status, record.reason, record.request_count) == ("failed", "upstream_error", 1)


def test_a_preview_while_a_compaction_runs_is_skipped(llm_server) -> None:
    session = session_to_compact(llm_server)
    assert lease_acquire(session_id=session.pk, holder="elsewhere", seconds=60)
    outcome = compaction_preview(session=session, created_by=None)
    assert (outcome.status, outcome.reason) == ("skipped", "in_progress")
    assert llm_server.requests == [] and not CompactionPreview.objects.exists()


# --- accepting ---------------------------------------------------------------------------


def test_accepting_applies_exactly_what_a_direct_compaction_would(llm_server) -> None:
    for _ in range(2):
        llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY, input_tokens=700, output_tokens=70))
    session = session_to_compact(llm_server)
    event = _preview(session)
    with pytest.raises(_Rollback), transaction.atomic():
        direct = compact(CompactionRequest(str(session.pk), reason="manual"))
        assert direct.status == "done"
        expected = _shape(session, direct)
        raise _Rollback
    session.refresh_from_db()
    assert session.compaction_count == 0  # the direct one was rolled back
    accepted = preview_accept(session=session, preview_id=event.preview_id, editor=session.owner)
    assert accepted.status == "done"
    assert _shape(session, accepted) == expected
    assert len(llm_server.requests) == 2  # the accept called no model
    record = CompactionRecord.objects.get(pk=accepted.record_id)
    assert (record.reason, record.edits) == ("previewed", [])
    assert not CompactionPreview.objects.exists()
    summary = Message.objects.get(pk=accepted.summary_message_id)
    assert core.summary_body(summary.content) == event.summary


def test_an_edited_accept_stores_the_edited_text_and_the_edit(llm_server) -> None:
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY))
    session = session_to_compact(llm_server)
    event = _preview(session)
    previewed = CompactionPreview.objects.get(pk=event.preview_id).summary
    edited = "## 目标\n修复 src/parser.py（用户改写）\n## 下一步\n补测试。"
    accepted = preview_accept(
        session=session, preview_id=event.preview_id, editor=session.owner, summary=edited + "\r\n"
    )
    assert accepted.status == "done"
    summary = Message.objects.get(pk=accepted.summary_message_id)
    assert core.summary_body(summary.content) == edited
    assert summary.content.startswith(core.SUMMARY_PREFIX)  # still reads as a summary
    assert KEY_VALUE_SUMMARY.strip() not in summary.content
    record = CompactionRecord.objects.get(pk=accepted.record_id)
    assert record.reason == "previewed"
    [edit] = record.edits
    assert edit["by"] == session.owner.username and edit["byId"] == session.owner.pk
    assert edit["previous"] == previewed and edit["preview"] is True and edit["at"]
    # the figures count the edited summary: much shorter than the previewed one
    assert accepted.tokens_after < event.tokens_after
    assert summary.pk in [m.pk for m in llm_history_load(session=session)]


def test_an_unchanged_text_is_no_edit(llm_server) -> None:
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY))
    session = session_to_compact(llm_server)
    event = _preview(session)
    accepted = preview_accept(
        session=session, preview_id=event.preview_id, editor=session.owner, summary=event.summary
    )
    assert CompactionRecord.objects.get(pk=accepted.record_id).edits == []


def test_messages_added_since_the_preview_stay_after_it(llm_server) -> None:
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY))
    session = session_to_compact(llm_server)
    event = _preview(session)
    [later] = messages_bulk_append(session=session, rows=[{"role": "user", "content": "later"}])
    accepted = preview_accept(session=session, preview_id=event.preview_id, editor=session.owner)
    assert accepted.status == "done"
    view = llm_history_load(session=session)
    assert view[-1].pk == later.pk
    assert accepted.summary_message_id in [m.pk for m in view]


@pytest.mark.parametrize("change", ["pin", "compaction", "prompt"])
def test_accepting_is_refused_when_the_history_changed(llm_server, change: str) -> None:
    for _ in range(2):
        llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY))
    session = session_to_compact(llm_server)
    event = _preview(session)
    if change == "pin":  # a summarized message is pinned: it may no longer be summarized
        first = llm_history_load(session=session)[1]
        message_pin(session=session, message_id=first.pk, pinned=True)
    elif change == "compaction":
        assert compact(CompactionRequest(str(session.pk), reason="manual")).status == "done"
    else:  # the system prompt the summary was made under
        session.agent.system_prompt = "You are someone else now."
        session.agent.save()
    rows, records = history_rows(session), CompactionRecord.objects.count()
    with pytest.raises(PreviewRefused) as refused:
        preview_accept(session=session, preview_id=event.preview_id, editor=session.owner)
    assert refused.value.reason == "history_changed"
    assert history_rows(session) == rows and CompactionRecord.objects.count() == records
    session.refresh_from_db()
    assert session.lease_holder == ""


def test_accepting_while_a_compaction_runs_is_refused(llm_server) -> None:
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY))
    session = session_to_compact(llm_server)
    event = _preview(session)
    assert lease_acquire(session_id=session.pk, holder="elsewhere", seconds=60)
    with pytest.raises(PreviewRefused) as refused:
        preview_accept(session=session, preview_id=event.preview_id, editor=session.owner)
    assert refused.value.reason == "in_progress"
    assert CompactionPreview.objects.filter(pk=event.preview_id).exists()


def test_a_preview_is_applied_once(llm_server) -> None:
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY))
    session = session_to_compact(llm_server)
    event = _preview(session)
    preview_accept(session=session, preview_id=event.preview_id, editor=session.owner)
    with pytest.raises(PreviewNotFound):
        preview_accept(session=session, preview_id=event.preview_id, editor=session.owner)


def test_another_sessions_preview_is_not_found(llm_server) -> None:
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY))
    mine = session_to_compact(llm_server)
    theirs = session_to_compact(llm_server)
    event = _preview(theirs)
    with pytest.raises(PreviewNotFound):
        preview_accept(session=mine, preview_id=event.preview_id, editor=mine.owner)
    with pytest.raises(PreviewNotFound):
        preview_discard(session=mine, preview_id=event.preview_id)
    assert CompactionPreview.objects.filter(pk=event.preview_id).exists()


# --- closing without applying: discard, replace, expire --------------------------------------


def _cancelled(session: ChatSession) -> list[tuple[str, str, int]]:
    rows = CompactionRecord.objects.filter(session=session, status="cancelled").order_by("id")
    return [(r.trigger, r.reason, r.request_count) for r in rows]


def test_discarding_and_replacing_record_what_the_summary_cost(llm_server) -> None:
    for _ in range(2):
        llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY, input_tokens=500, output_tokens=50))
    session = session_to_compact(llm_server)
    first = _preview(session)
    second = _preview(session, trigger="api")  # replaces the first: one per session
    assert list(CompactionPreview.objects.values_list("pk", flat=True)) == [second.preview_id]
    rows = history_rows(session)
    preview_discard(session=session, preview_id=second.preview_id)
    assert history_rows(session) == rows and not CompactionPreview.objects.exists()
    assert _cancelled(session) == [
        ("manual", "preview_replaced", 1),
        ("api", "preview_discarded", 1),
    ]
    record = CompactionRecord.objects.filter(session=session).first()
    assert record is not None and (record.aux_input_tokens, record.aux_output_tokens) == (500, 50)
    with pytest.raises(PreviewNotFound):
        preview_accept(session=session, preview_id=first.preview_id, editor=session.owner)


def test_a_preview_expires_after_an_hour(llm_server) -> None:
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY))
    session = session_to_compact(llm_server)
    event = _preview(session)
    CompactionPreview.objects.filter(pk=event.preview_id).update(
        created_at=timezone.now() - timedelta(minutes=59)
    )
    # still open a minute before the hour
    assert preview_for_session(session=session, preview_id=event.preview_id).pk == event.preview_id
    CompactionPreview.objects.filter(pk=event.preview_id).update(
        created_at=timezone.now() - timedelta(hours=1, seconds=1)
    )
    rows = history_rows(session)
    with pytest.raises(PreviewNotFound):
        preview_accept(session=session, preview_id=event.preview_id, editor=session.owner)
    assert history_rows(session) == rows and not CompactionPreview.objects.exists()
    assert _cancelled(session) == [("manual", "preview_expired", 1)]
