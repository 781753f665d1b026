from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from agents import services
from agents.models import Message
from agents.selectors import history_load, llm_history_load, model_visible, session_tail
from agents.services import (
    SpanChanged,
    lease_acquire,
    lease_release,
    message_append,
)
from tests.factories import make_session
from tests.support.history import apply_compaction, conversation

pytestmark = pytest.mark.django_db


def _active_summaries(session) -> list[Message]:
    return list(
        Message.objects.filter(session=session, is_compaction_summary=True, compacted_at=None)
    )


def test_append_gives_increasing_positions_and_stores_the_seed_estimate() -> None:
    session = make_session()
    a = message_append(session=session, role="user", content="x" * 41)
    b = message_append(
        session=session,
        role="assistant",
        content="",
        tool_calls=[{"id": "c1", "name": "read_file", "arguments": "a" * 8}],
    )
    assert a.position < b.position
    assert a.token_estimate == 41 // 4 + 10
    assert b.token_estimate == 0 + 10 + 8 // 4


def test_unknown_role_is_refused_and_nothing_written() -> None:
    session = make_session()
    with pytest.raises(ValueError, match="unknown role 'robot'"):
        message_append(session=session, role="robot", content="hi")
    assert not Message.objects.filter(session=session).exists()


def test_compacted_and_full_views_after_compaction_apply() -> None:
    session = make_session()
    msgs = conversation(session, 10)
    middle = msgs[3:7]
    applied = apply_compaction(session, middle, pruned=[msgs[1]])
    summary = applied.summary_message
    assert summary is not None and summary.is_compaction_summary and summary.role == "user"

    compacted = history_load(session=session, view="compacted")
    ids = [m.pk for m in compacted]
    # head, then the summary where the span was, then the tail, then the event record
    assert ids == [
        msgs[0].pk,
        msgs[1].pk,
        msgs[2].pk,
        summary.pk,
        *[m.pk for m in msgs[7:]],
        applied.event_message.pk,
    ]

    full = history_load(session=session, view="full")
    assert [m.pk for m in full] == [
        *[m.pk for m in msgs[:3]],
        summary.pk,
        *[m.pk for m in msgs[3:]],
        applied.event_message.pk,
    ]
    for m in Message.objects.filter(pk__in=[x.pk for x in middle]):
        assert m.compacted_at is not None and m.compacted_into_id == summary.pk
    pruned = Message.objects.get(pk=msgs[1].pk)
    assert pruned.pruned_at is not None and pruned.content == msgs[1].content
    assert pruned.token_estimate == 17

    session.refresh_from_db()
    assert session.compaction_count == 1
    event = applied.event_message
    assert event.metadata["systemType"] == "compaction_event"
    assert event.metadata["summaryMessageId"] == summary.pk
    assert _active_summaries(session) == [summary]


def test_system_events_never_reach_the_llm_history() -> None:
    session = make_session()
    msgs = conversation(session, 8)
    applied = apply_compaction(session, msgs[3:5])
    llm_ids = [m.pk for m in llm_history_load(session=session)]
    assert applied.event_message.pk not in llm_ids
    assert applied.summary_message.pk in llm_ids
    expected = sum(m.token_estimate for m in llm_history_load(session=session))
    assert sum(model_visible(session=session).values_list("token_estimate", flat=True)) == expected


def test_second_compaction_replaces_the_first_summary_and_full_view_keeps_both() -> None:
    session = make_session()
    msgs = conversation(session, 12)
    first = apply_compaction(session, msgs[3:6]).summary_message
    second = apply_compaction(
        session, [first, *msgs[6:9]], summary="second " + "z" * 300
    ).summary_message
    assert _active_summaries(session) == [second]
    assert second.position == first.position
    full_ids = [m.pk for m in history_load(session=session, view="full", include_events=False)]
    # the newer summary first, then the older one it replaced, then the original span
    assert full_ids.index(second.pk) < full_ids.index(first.pk) < full_ids.index(msgs[3].pk)
    compacted_ids = [m.pk for m in history_load(session=session, include_events=False)]
    assert first.pk not in compacted_ids and second.pk in compacted_ids


def test_compaction_apply_rolls_back_completely_when_a_write_fails(monkeypatch) -> None:
    session = make_session()
    msgs = conversation(session, 10)
    before = list(Message.objects.filter(session=session).values())

    def explode(*args, **kwargs):
        raise RuntimeError("disk full")

    # The event record is the last write: summary, marks and prunes have happened by then.
    monkeypatch.setattr(services, "next_positions", explode)
    with pytest.raises(RuntimeError, match="disk full"):
        apply_compaction(session, msgs[3:7], pruned=[msgs[1]])

    assert list(Message.objects.filter(session=session).values()) == before
    session.refresh_from_db()
    assert session.compaction_count == 0


def test_span_changed_writes_nothing() -> None:
    session = make_session()
    msgs = conversation(session, 10)
    apply_compaction(session, msgs[3:5])
    count = Message.objects.count()
    with pytest.raises(SpanChanged):
        apply_compaction(session, msgs[4:7])  # msgs[4] is already compacted
    assert Message.objects.count() == count


def test_unknown_view_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown history view 'everything'"):
        history_load(session=make_session(), view="everything")  # type: ignore[arg-type]


def test_lease_is_exclusive_until_released_or_expired() -> None:
    session = make_session()
    assert lease_acquire(session_id=session.pk, holder="a", seconds=60)
    assert not lease_acquire(session_id=session.pk, holder="b", seconds=60)
    lease_release(session_id=session.pk, holder="b")  # not the holder: no effect
    assert not lease_acquire(session_id=session.pk, holder="b", seconds=60)
    lease_release(session_id=session.pk, holder="a")
    assert lease_acquire(session_id=session.pk, holder="b", seconds=60)
    type(session).objects.filter(pk=session.pk).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert lease_acquire(session_id=session.pk, holder="c", seconds=60)


def test_the_turn_lease_is_released_in_one_statement_unless_a_message_waits_queued() -> None:
    session = make_session()
    assert services.lease_acquire(session_id=session.pk, holder="a", seconds=60)
    queued = services.user_message_append(session=session, content="later", queued=True)
    # a queued message keeps the conditional release from freeing the lease …
    assert not services.lease_release(session_id=session.pk, holder="a", unless_queued=True)
    assert not services.lease_acquire(session_id=session.pk, holder="b", seconds=60)
    # … the plain release frees it whatever waits; another holder's release does nothing
    assert not services.lease_release(session_id=session.pk, holder="b")
    assert services.lease_release(session_id=session.pk, holder="a")
    assert services.lease_acquire(session_id=session.pk, holder="b", seconds=60)
    assert services.turn_start(session=session) == [queued]
    assert services.lease_release(session_id=session.pk, holder="b", unless_queued=True)


def test_the_session_tail_counts_queued_messages_and_finds_the_last_position() -> None:
    session = make_session()
    assert session_tail(session=session).last_position is None
    first = message_append(session=session, role="user", content="one")
    later = services.user_message_append(session=session, content="two", queued=True)
    tail = session_tail(session=session)
    assert tail.queued == 1
    assert tail.last_position == max(first.position, later.position)
