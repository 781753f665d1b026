"""``GET /api/sessions/<id>/context/`` (issue 17 item 11): the token bar's reading with the
breakdown of what fills the context, behind the one access gate."""

from __future__ import annotations

import pytest

from agents.meter import meter_read
from agents.services import session_record_usage
from compaction.controls import message_pin
from tests.factories import make_session
from tests.support.history import conversation

pytestmark = pytest.mark.django_db

PARTS = ("systemPrompt", "toolDefinitions", "pins", "summary", "messages")


def test_the_reading_and_its_breakdown(alice, alice_api) -> None:
    session = make_session(owner=alice)
    rows = conversation(session, 12)
    message_pin(session=session, message_id=rows[1].pk, pinned=True)
    session_record_usage(
        session=session, input_tokens=3_000, output_tokens=7, input_position=rows[-1].position
    )
    response = alice_api.get(f"/api/sessions/{session.pk}/context/")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"sessionId", "current", "context", "compactionCount", "autoCompaction"}
    context = body["context"]
    reading = meter_read(session=session)
    assert context["usedTokens"] == reading.used_tokens == 3_000
    assert context["maxTokens"] == reading.max_tokens
    breakdown = context["breakdown"]
    assert set(breakdown) == {*PARTS, "free"}
    assert sum(breakdown[k] for k in PARTS) == 3_000
    assert breakdown["free"] == reading.max_tokens - 3_000
    assert breakdown["pins"] > 0 and breakdown["summary"] == 0
    assert breakdown["toolDefinitions"] > 0 and breakdown["systemPrompt"] > 0


def test_someone_elses_session_is_not_found(alice, bob_api) -> None:
    session = make_session(owner=alice)
    assert bob_api.get(f"/api/sessions/{session.pk}/context/").status_code == 404


def test_anonymous_is_refused(alice, anon) -> None:
    session = make_session(owner=alice)
    assert anon.get(f"/api/sessions/{session.pk}/context/").status_code in (401, 403)
