"""Sessions and their messages: a user sees only their own, foreign ids answer 404."""

from __future__ import annotations

import uuid

import pytest

from agents import services
from agents.models import SYSTEM_TYPE_COMPACTION, ChatSession, Role
from tests.factories import make_agent, make_session

pytestmark = pytest.mark.django_db

SESSION_FIELDS = {
    "id",
    "agent",
    "title",
    "created_at",
    "updated_at",
    "compaction_count",
    "auto_compaction_paused_reason",
    "model_channel",  # issue 26 item 3: the chat's own model (null: its agent's)
    "channel",  # the one it talks to
}


def test_list_shows_only_own_sessions(alice, bob, alice_api, shared_agent) -> None:
    mine = make_session(owner=alice, agent=shared_agent, title="mine")
    make_session(owner=bob, agent=shared_agent, title="theirs")
    body = alice_api.get("/api/sessions/").json()
    assert [s["id"] for s in body] == [str(mine.pk)]
    assert set(body[0]) == SESSION_FIELDS
    assert body[0]["title"] == "mine" and body[0]["agent"] == shared_agent.pk


def test_create_session_with_a_visible_agent(alice, alice_api, shared_agent) -> None:
    response = alice_api.post(
        "/api/sessions/", {"agent": shared_agent.pk, "title": "Plan"}, format="json"
    )
    assert response.status_code == 201
    body = response.json()
    assert set(body) == SESSION_FIELDS
    session = ChatSession.objects.get(pk=body["id"])
    assert session.owner == alice and session.agent == shared_agent and session.title == "Plan"
    assert body["compaction_count"] == 0 and body["auto_compaction_paused_reason"] == ""


def test_create_session_title_is_optional(alice_api, alice) -> None:
    own_agent = make_agent(owner=alice)
    response = alice_api.post("/api/sessions/", {"agent": own_agent.pk}, format="json")
    assert response.status_code == 201 and response.json()["title"] == ""


def test_create_session_with_someone_elses_agent_is_a_field_error(bob, alice_api) -> None:
    private = make_agent(owner=bob)
    response = alice_api.post("/api/sessions/", {"agent": private.pk}, format="json")
    assert response.status_code == 400
    assert response.json() == {
        "agent": [f"Agent {private.pk} does not exist or is not available to you."]
    }
    assert not ChatSession.objects.exists()


@pytest.mark.parametrize(
    ("payload", "errors"),
    [
        ({"agent": 999999}, {"agent": ["Agent 999999 does not exist or is not available to you."]}),
        ({}, {"agent": ["This field is required."]}),
        ({"agent": "x"}, {"agent": ["A valid integer is required."]}),
    ],
)
def test_create_session_with_a_bad_agent_is_400(alice_api, payload, errors) -> None:
    response = alice_api.post("/api/sessions/", payload, format="json")
    assert response.status_code == 400
    assert response.json() == errors


def test_staff_may_start_a_session_with_any_agent(bob, staff, staff_api) -> None:
    private = make_agent(owner=bob)
    response = staff_api.post("/api/sessions/", {"agent": private.pk}, format="json")
    assert response.status_code == 201
    assert ChatSession.objects.get(pk=response.json()["id"]).owner == staff


def test_session_detail_is_own_only(alice, bob, alice_api, bob_api) -> None:
    session = make_session(owner=alice)
    assert alice_api.get(f"/api/sessions/{session.pk}/").json()["id"] == str(session.pk)
    response = bob_api.get(f"/api/sessions/{session.pk}/")
    assert response.status_code == 404
    assert response.json() == {"detail": "No such session."}


@pytest.mark.parametrize("suffix", ["", "messages/", "messages/?view=full", "messages/?view=x"])
@pytest.mark.parametrize("session_id", [str(uuid.uuid4()), "not-a-uuid", "123"])
def test_unknown_session_ids_are_404(alice_api, suffix, session_id) -> None:
    response = alice_api.get(f"/api/sessions/{session_id}/{suffix}")
    assert response.status_code == 404


def _compacted_session(owner) -> tuple[ChatSession, list, int]:
    session = make_session(owner=owner)
    msgs = [
        services.message_append(session=session, role=role, content=f"turn {i}")
        for i, role in enumerate([Role.USER, Role.ASSISTANT] * 4)
    ]
    applied = services.compaction_apply(
        session=session,
        compacted_ids=[m.pk for m in msgs[2:6]],
        pruned_ids=[],
        summary_content="[CONTEXT COMPACTION] what happened in turns 2-5",
        pruned_token_estimate=0,
        event_content="Compacted 4 messages",
        event_payload={"removedCount": 4},
    )
    return session, msgs, applied.summary_message.pk


def test_messages_compacted_and_full_views_after_a_compaction(alice, alice_api) -> None:
    session, msgs, summary_id = _compacted_session(alice)
    compacted = alice_api.get(f"/api/sessions/{session.pk}/messages/").json()["results"]
    explicit = alice_api.get(f"/api/sessions/{session.pk}/messages/?view=compacted").json()[
        "results"
    ]
    assert compacted == explicit
    head, tail = [m.pk for m in msgs[:2]], [m.pk for m in msgs[6:]]
    ids = [m["id"] for m in compacted]
    assert ids[:3] == [*head, summary_id]
    assert ids[3:5] == tail
    assert compacted[2]["is_compaction_summary"] is True
    assert compacted[-1]["metadata"]["systemType"] == SYSTEM_TYPE_COMPACTION

    full = alice_api.get(f"/api/sessions/{session.pk}/messages/?view=full").json()["results"]
    full_ids = [m["id"] for m in full]
    assert full_ids[:7] == [*head, summary_id, *[m.pk for m in msgs[2:6]]]
    replaced = [m for m in full if m["compacted_into"] == summary_id]
    assert len(replaced) == 4 and all(m["compacted_at"] for m in replaced)
    assert set(full_ids) >= set(ids)


def test_messages_use_the_one_message_shape(alice, alice_api) -> None:
    from agents.message_format import message_to_json
    from agents.selectors import history_load

    session, _, _ = _compacted_session(alice)
    for view in ("compacted", "full"):
        body = alice_api.get(f"/api/sessions/{session.pk}/messages/?view={view}").json()
        assert body["next"] is None
        body = body["results"]
        expected = [message_to_json(m, view=view) for m in history_load(session=session, view=view)]
        assert body == expected


def test_bad_view_is_400_with_reason(alice, alice_api) -> None:
    session = make_session(owner=alice)
    response = alice_api.get(f"/api/sessions/{session.pk}/messages/?view=everything")
    assert response.status_code == 400
    assert response.json() == {
        "error": "Unknown view 'everything'; use 'compacted' or 'full'.",
        "reason": "bad_view",
    }


def test_someone_elses_messages_are_404_even_with_a_bad_view(alice, bob_api) -> None:
    session, _, _ = _compacted_session(alice)
    for query in ("", "?view=full", "?view=bogus"):
        assert bob_api.get(f"/api/sessions/{session.pk}/messages/{query}").status_code == 404
