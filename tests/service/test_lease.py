"""The compaction lease: renewed while a long summary is written, short enough that a
crashed holder frees the session within a minute, and a lost lease writes nothing."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection

from agents.leases import lease_seconds
from agents.models import ChatSession, Message
from agents.services import lease_acquire
from compaction.request import CompactionRequest
from compaction.run import compact
from scripted_llm import Reply
from tests.support.history import session_to_compact, stored_rows
from tests.support.summaries import KEY_VALUE_SUMMARY

pytestmark = pytest.mark.django_db(transaction=True)


def _in_thread(work, results: list) -> threading.Thread:
    def run() -> None:
        try:
            results.append(work())
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_a_summary_longer_than_the_lease_keeps_it_to_the_end(llm_server, settings) -> None:
    settings.NETACLAW = {**settings.NETACLAW, "COMPACTION_LEASE_SECONDS": 1}
    session = session_to_compact(llm_server)

    def slow(body, wire):
        time.sleep(2.5)  # two and a half leases
        return Reply(text=KEY_VALUE_SUMMARY)

    llm_server.responder = slow
    outcomes: list = []
    worker = _in_thread(
        lambda: compact(CompactionRequest(str(session.pk), reason="manual")),
        outcomes,
    )
    time.sleep(1.8)  # the first lease would have expired by now
    intruder = lease_acquire(session_id=session.pk, holder="intruder", seconds=1)
    worker.join(timeout=30)
    assert intruder is False, "a second holder took the lease of a running compaction"
    assert outcomes[0].status == "done", outcomes[0]
    session.refresh_from_db()
    assert session.lease_holder == ""


def test_a_compaction_whose_lease_was_taken_writes_nothing(llm_server, settings) -> None:
    settings.NETACLAW = {**settings.NETACLAW, "COMPACTION_LEASE_SECONDS": 1}
    session = session_to_compact(llm_server)
    before = stored_rows(session)

    def stolen(body, wire):
        # another process took over (as if this one had stalled past its lease)
        ChatSession.objects.filter(pk=session.pk).update(lease_holder="someone")
        connection.close()
        return Reply(text=KEY_VALUE_SUMMARY)

    llm_server.responder = stolen
    outcome = compact(CompactionRequest(str(session.pk), reason="manual"))
    assert (outcome.status, outcome.reason) == ("failed", "history_changed")
    assert stored_rows(session) == before
    assert not Message.objects.filter(session=session, is_compaction_summary=True).exists()


def test_a_crashed_holder_frees_the_session_within_a_minute() -> None:
    assert lease_seconds() * 1 <= 60
