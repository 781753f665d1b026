"""Background compaction (issue 14 item 6): the summary is prepared from the soft threshold,
and the compaction at the threshold applies it without asking the auxiliary model again —
only while the history it was made from is unchanged and the result fits."""

from __future__ import annotations

import time

import pytest

from agents.leases import held_lease
from agents.meter import meter_read
from agents.models import ChatSession, CompactionMode, Message
from agents.selectors import history_load
from agents.services import messages_bulk_append
from compaction import background
from compaction.request import CompactionRequest
from compaction.run import compact
from scripted_llm import Reply
from tests.factories import make_channel
from tests.support.history import session_to_compact
from tests.support.summaries import KEY_VALUE_SUMMARY

pytestmark = pytest.mark.django_db(transaction=True)  # the preparation has its own connection

THRESHOLD = 80


@pytest.fixture(autouse=True)
def _background_on(background_compaction):
    yield


def _between_soft_and_threshold(server) -> ChatSession:
    """A 40-message chat whose window puts it at 75% (soft threshold 70%, threshold 80%)."""
    session = _with_window(session_to_compact(server), percent_of_window=75)
    return ChatSession.objects.select_related(
        "agent__model_channel", "agent__auxiliary_model_channel"
    ).get(pk=session.pk)


def _with_window(session: ChatSession, *, percent_of_window: int) -> ChatSession:
    """The main model's window set so that the chat fills ``percent_of_window`` of it; the
    auxiliary model keeps a large window of its own (one summary request)."""
    agent = session.agent
    aux = agent.model_channel
    used = meter_read(session=session).used_tokens
    agent.model_channel = make_channel(
        base_url=aux.base_url, model="main-model", context_window=used * 100 // percent_of_window
    )
    agent.auxiliary_model_channel = aux
    agent.compaction_threshold_percent = THRESHOLD
    agent.save()
    return session


def _prepare(session: ChatSession) -> None:
    assert background.preparation_due(session=session, reading=meter_read(session=session))
    assert background.start(str(session.pk))
    background.wait(str(session.pk), timeout=30)


def _cross_threshold(session: ChatSession) -> None:
    """Two more turns, as the chat goes on after the summary was prepared."""
    rows = [{"role": "user", "content": "next " * 300}, {"role": "assistant", "content": "ok"}]
    messages_bulk_append(session=session, rows=rows)
    assert meter_read(session=session).over_threshold


def _summary_requests(server) -> int:
    return sum(1 for r in server.requests if r.body.get("model") == "aux-model")


def test_the_prepared_summary_is_applied_without_asking_again(llm_server) -> None:
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY))
    session = _between_soft_and_threshold(llm_server)
    _prepare(session)
    assert _summary_requests(llm_server) == 1
    _cross_threshold(session)
    added = list(Message.objects.filter(session=session).order_by("-position")[:2])

    outcome = compact(CompactionRequest(str(session.pk), reason="auto"))

    assert outcome.status == "done", outcome
    assert _summary_requests(llm_server) == 1  # nothing more was asked of the model
    view = history_load(session=session, include_events=False)
    assert view[0].is_compaction_summary or any(m.is_compaction_summary for m in view)
    assert "42" in next(m.content for m in view if m.is_compaction_summary)
    # what the chat added after the preparation stays, verbatim, at the end
    assert [m.pk for m in view[-2:]] == [m.pk for m in reversed(added)]
    assert outcome.tokens_after < outcome.tokens_before
    assert not meter_read(session=ChatSession.objects.get(pk=session.pk)).over_threshold


def test_a_history_changed_since_preparing_is_summarized_again(llm_server) -> None:
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY), Reply(text=KEY_VALUE_SUMMARY))
    session = _between_soft_and_threshold(llm_server)
    _prepare(session)
    # the user pins a message the prepared summary would have replaced
    early = Message.objects.filter(session=session).order_by("position")[6]
    Message.objects.filter(pk=early.pk).update(pinned=True)
    _cross_threshold(session)

    outcome = compact(CompactionRequest(str(session.pk), reason="auto"))

    assert outcome.status == "done"
    assert _summary_requests(llm_server) == 2
    assert Message.objects.get(pk=early.pk).compacted_at is None  # the pin held


def test_a_prepared_summary_that_would_not_fit_any_more_is_not_used(llm_server) -> None:
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY), Reply(text=KEY_VALUE_SUMMARY))
    session = _between_soft_and_threshold(llm_server)
    _prepare(session)
    window = session.agent.model_channel.context_window
    # the chat added more than the threshold holds since the summary was prepared
    messages_bulk_append(
        session=session,
        rows=[
            {"role": "user", "content": "y" * (window * 4)},
            {"role": "assistant", "content": "ok"},
        ],
    )
    source_before = Message.objects.filter(session=session).count()

    compact(CompactionRequest(str(session.pk), reason="auto"))

    assert _summary_requests(llm_server) == 2  # compacted afresh (or failed), never applied
    assert Message.objects.filter(session=session).count() >= source_before


def test_a_preparation_still_running_at_the_threshold_is_waited_for(llm_server) -> None:
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY, delay=1.0))
    session = _between_soft_and_threshold(llm_server)
    assert background.start(str(session.pk))
    _cross_threshold(session)

    outcome = compact(CompactionRequest(str(session.pk), reason="auto"))

    assert outcome.status == "done"
    assert _summary_requests(llm_server) == 1  # the rest of it was waited for, not redone


def test_a_stop_does_not_wait_for_the_preparation(llm_server) -> None:
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY, delay=2.0), Reply(text=KEY_VALUE_SUMMARY))
    session = _between_soft_and_threshold(llm_server)
    assert background.start(str(session.pk))
    _cross_threshold(session)
    with held_lease(str(session.pk)) as lease:
        assert lease is not None
        lease.stop.request()
        started = time.monotonic()
        outcome = compact(CompactionRequest(str(session.pk), reason="auto"), lease=lease)
        took = time.monotonic() - started

    assert outcome.status == "cancelled"
    assert took < 1.5, took  # the preparation's model answers only after 2 s
    # the preparation goes on to its end while the scripted model still serves it (the
    # model's server stops before the fixtures' own wait, and a request it leaves
    # unanswered would hold that wait up)
    background.wait(str(session.pk), timeout=10)


def test_manual_compaction_never_takes_the_prepared_summary(llm_server) -> None:
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY), Reply(text=KEY_VALUE_SUMMARY))
    session = _between_soft_and_threshold(llm_server)
    _prepare(session)

    assert compact(CompactionRequest(str(session.pk), reason="manual")).status == "done"

    assert _summary_requests(llm_server) == 2


@pytest.mark.parametrize(
    ("percent_of_window", "mode", "enabled", "due"),
    [
        (75, CompactionMode.AUTO, True, True),  # between the soft threshold and the threshold
        (85, CompactionMode.AUTO, True, True),  # over it: prepare for the next boundary
        (60, CompactionMode.AUTO, True, False),  # below the soft threshold
        (75, CompactionMode.ASK, True, False),  # the user decides when
        (75, CompactionMode.OFF, True, False),
        (75, CompactionMode.AUTO, False, False),  # turned off by the operator
    ],
)
def test_when_a_summary_is_prepared(
    llm_server, settings, percent_of_window, mode, enabled, due
) -> None:
    settings.NETACLAW = {**settings.NETACLAW, "BACKGROUND_COMPACTION": enabled}
    session = _with_window(session_to_compact(llm_server), percent_of_window=percent_of_window)
    session.agent.compaction_mode = mode
    session.agent.save()
    reading = meter_read(session=session)

    assert background.preparation_due(session=session, reading=reading) is due
