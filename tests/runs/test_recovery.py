"""What a dead runner left is taken back (``chat.recovery``): the session freed at once, a
compaction it ran recorded interrupted, a turn it ran recorded interrupted and answered
again once — never a finished turn, never a live holder's lease."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from agents.models import ChatSession, CompactionRecord, CompactionStatus, Message
from agents.services import message_append, user_message_append
from chat.interruption import INTERRUPTED_TOOL_RESULT
from chat.recovery import recover, recover_after_restart
from tests.factories import make_session

pytestmark = pytest.mark.django_db


def _held(session: ChatSession, holder: str) -> None:
    ChatSession.objects.filter(pk=session.pk).update(
        lease_holder=holder, lease_expires_at=timezone.now() + timedelta(seconds=40)
    )


def test_a_dead_turn_is_recorded_interrupted_its_open_calls_answered_and_the_session_freed():
    session = make_session()
    user_message_append(session=session, content="列出文件")
    message_append(
        session=session,
        role="assistant",
        tool_calls=[{"id": "c1", "name": "list_files", "arguments": "{}"}],
    )
    _held(session, "t/job7:host:1:abc")

    found = recover(str(session.pk), dead="t/job7:host:1:abc")

    assert found.interrupted_turn and found.continue_attempt == 1
    results = Message.objects.filter(session=session, role="tool")
    assert [(r.tool_call_id, r.content) for r in results] == [("c1", INTERRUPTED_TOOL_RESULT)]
    record = Message.objects.get(session=session, metadata__systemType="turn_event")
    assert record.metadata["status"] == "interrupted"
    assert ChatSession.objects.get(pk=session.pk).lease_holder == ""


def test_a_second_interruption_waits_for_retry():
    session = make_session()
    user_message_append(session=session, content="再来")
    _held(session, "t/x:host:1:abc")
    assert recover(str(session.pk), dead="t/x:host:1:abc", attempt=1).continue_attempt is None


def test_a_finished_turn_is_not_interrupted_only_freed():
    session = make_session()
    user_message_append(session=session, content="你好")
    message_append(session=session, role="assistant", content="你好！")
    _held(session, "t/x:host:1:abc")
    found = recover(str(session.pk), dead="t/x:host:1:abc")
    assert not found.interrupted_turn
    assert not Message.objects.filter(session=session, metadata__systemType="turn_event")
    assert ChatSession.objects.get(pk=session.pk).lease_holder == ""


def test_a_running_compaction_is_recorded_interrupted():
    session = make_session()
    record = CompactionRecord.objects.create(
        session=session,
        status=CompactionStatus.RUNNING,
        trigger="manual",
        started_at=timezone.now(),
    )
    _held(session, "c/host:1:abc")
    found = recover(str(session.pk), dead="c/host:1:abc")
    record.refresh_from_db()
    assert (record.status, record.reason) == ("interrupted", "compaction_interrupted")
    assert [e.type for e in found.events] == ["compaction_failed"]


def test_a_lease_another_holder_has_is_left_alone():
    session = make_session()
    user_message_append(session=session, content="问")
    _held(session, "t/alive:host:2:def")
    found = recover(str(session.pk), dead="t/dead:host:1:abc")
    assert not found.interrupted_turn and not found.events
    assert ChatSession.objects.get(pk=session.pk).lease_holder == "t/alive:host:2:def"


def test_make_run_starting_again_takes_every_lease_back():
    first, second = make_session(), make_session()
    user_message_append(session=first, content="问")
    _held(first, "t/old:host:1:abc")
    _held(second, "c/old:host:1:def")
    assert len(recover_after_restart()) == 2
    assert not ChatSession.objects.exclude(lease_holder="").exists()


def test_a_turn_run_again_keeps_the_lease_for_its_job_and_a_new_message_waits_queued():
    """The sweep hands the lease over (``hand_over``): a message the user sends as soon as
    they hear of the interruption must wait behind the re-run, not take the free lease and
    answer both questions at once (bench.worker_failover: 21 of 120 questions lost)."""
    session = make_session()
    user_message_append(session=session, content="第一问")
    _held(session, "t/job9:host:1:abc")

    found = recover(str(session.pk), dead="t/job9:host:1:abc", hand_over=True)

    held = ChatSession.objects.get(pk=session.pk)
    assert found.continue_attempt == 1
    assert found.holder and held.lease_holder == found.holder != "t/job9:host:1:abc"
    assert found.holder.startswith("t/") and held.lease_expires_at > timezone.now()


def test_without_a_re_run_nothing_is_handed_over():
    session = make_session()
    user_message_append(session=session, content="再来")
    _held(session, "t/x:host:1:abc")
    found = recover(str(session.pk), dead="t/x:host:1:abc", attempt=1, hand_over=True)
    assert found.continue_attempt is None and found.holder == ""
    assert ChatSession.objects.get(pk=session.pk).lease_holder == ""
