"""A chat of 100,000 messages compacts on PostgreSQL (issue 27 item 1): the write-back once
passed one bind parameter per message, and the wire protocol allows 65,535 per statement.
Deleting such a chat failed the same way (Django's deletion collector names every message in
one statement)."""

from __future__ import annotations

import pytest

from agents.models import Message
from agents.services import messages_bulk_append
from compaction.request import CompactionRequest
from compaction.run import compact
from compaction.undo import compaction_undo
from scripted_llm import Reply
from tests.support.api_clients import token_client
from tests.support.history import session_to_compact
from tests.support.summaries import KEY_VALUE_SUMMARY

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

MESSAGES = 100_000


@pytest.mark.timeout(600)  # storing 100,000 messages alone takes 15 s or more
def test_a_hundred_thousand_messages_compact_into_one_summary(llm_server) -> None:
    llm_server.responder = lambda body, wire: Reply(text=KEY_VALUE_SUMMARY)
    session = session_to_compact(llm_server, n=4)
    rows = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"第 {i} 轮 ok"}
        for i in range(MESSAGES)
    ]
    messages_bulk_append(session=session, rows=rows)

    outcome = compact(CompactionRequest(str(session.pk), reason="manual"))

    assert (outcome.status, outcome.reason) == ("done", None)
    assert outcome.removed_count > 65_535
    compacted = Message.objects.filter(session=session, compacted_at__isnull=False)
    assert compacted.count() == outcome.removed_count
    assert compacted.filter(compacted_into_id=outcome.summary_message_id).count() == (
        outcome.removed_count
    )

    undone = compaction_undo(session=session)  # every original back, in batches
    assert undone.restored_count == outcome.removed_count
    assert (
        not Message.objects.filter(session=session, compacted_at__isnull=False)
        .exclude(is_compaction_summary=True)
        .exists()
    )

    response = token_client(session.owner).delete(f"/api/sessions/{session.pk}/")
    assert response.status_code == 204
    assert not Message.objects.filter(session_id=session.pk).exists()
