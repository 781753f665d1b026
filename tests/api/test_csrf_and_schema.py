"""Cookie clients must send the CSRF token on writes; the OpenAPI document lists everything."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.factories import make_agent, make_session
from tests.support.api_clients import ENGLISH

pytestmark = pytest.mark.django_db

CSRF_FAILED = "CSRF Failed: CSRF cookie not set."


def _cookie_client(user) -> Client:
    client = Client(enforce_csrf_checks=True, **ENGLISH)
    client.force_login(user)
    return client


def _csrf_token(client: Client) -> str:
    client.get("/accounts/login/")  # any page with {% csrf_token %} sets the cookie
    return client.cookies["csrftoken"].value


def test_session_authenticated_post_without_csrf_token_is_refused(alice, shared_agent) -> None:
    client = _cookie_client(alice)
    response = client.post(
        "/api/sessions/", {"agent": shared_agent.pk}, content_type="application/json"
    )
    assert response.status_code == 403
    assert response.json() == {"detail": CSRF_FAILED}


def test_session_authenticated_post_with_csrf_token_passes(alice, shared_agent) -> None:
    client = _cookie_client(alice)
    token = _csrf_token(client)
    response = client.post(
        "/api/sessions/",
        {"agent": shared_agent.pk},
        content_type="application/json",
        HTTP_X_CSRFTOKEN=token,
    )
    assert response.status_code == 201


def test_session_authenticated_patch_without_csrf_token_is_refused(alice) -> None:
    agent = make_agent(owner=alice, name="before")
    response = _cookie_client(alice).patch(
        f"/api/agents/{agent.pk}/", {"name": "after"}, content_type="application/json"
    )
    assert response.status_code == 403
    agent.refresh_from_db()
    assert agent.name == "before"


def test_compact_with_session_cookie_but_no_csrf_token_is_refused(alice) -> None:
    session = make_session(owner=alice)
    response = _cookie_client(alice).post(
        f"/api/sessions/{session.pk}/compact/", {}, content_type="application/json"
    )
    assert response.status_code == 403
    assert response.json() == {"error": CSRF_FAILED, "reason": "permission_denied"}


def test_token_clients_need_no_csrf_token(alice_api, shared_agent) -> None:
    alice_api.handler.enforce_csrf_checks = True
    response = alice_api.post("/api/sessions/", {"agent": shared_agent.pk}, format="json")
    assert response.status_code == 201


def test_schema_needs_login(anon) -> None:
    assert anon.get("/api/schema/").status_code in (401, 403)


def test_schema_lists_every_endpoint(alice_api) -> None:
    response = alice_api.get("/api/schema/?format=json")
    assert response.status_code == 200
    schema = response.json()
    paths = schema["paths"]
    assert set(paths) >= {
        "/api/auth/token/",
        "/api/sessions/",
        "/api/sessions/{session_id}/",
        "/api/sessions/{session_id}/messages/",
        "/api/sessions/{session_id}/compact/",
        "/api/agents/",
        "/api/agents/{agent_id}/",
        "/api/model-channels/",
        "/api/model-channels/{channel_id}/",
        "/api/dict-info/",
        "/api/dict-info/{entry_id}/",
    }
    compact = paths["/api/sessions/{session_id}/compact/"]
    assert set(compact) == {"post"}
    assert set(compact["post"]["responses"]) >= {"200", "409", "422", "502"}
    result = schema["components"]["schemas"]["CompactResult"]["properties"]
    assert set(result) == {
        "removed_count",
        "summary_message_id",
        "tokens_before",
        "tokens_after",
        "compaction_id",  # its audit record (CONTRACT §7)
    }
    for path in (
        "/api/sessions/{session_id}/compactions/",
        "/api/sessions/{session_id}/compactions/{record_id}/",
        "/api/sessions/{session_id}/compactions/{record_id}/undo/",
    ):
        assert path in paths, path
    message = paths["/api/sessions/{session_id}/messages/{message_id}/"]
    assert set(message) == {"get", "patch"}
    channel = schema["components"]["schemas"]["ModelChannel"]["properties"]
    assert channel["api_key"]["writeOnly"] is True
    assert set(paths["/api/agents/{agent_id}/"]) == {"get", "patch"}


def test_schema_yaml_by_default(alice_api) -> None:
    response = alice_api.get("/api/schema/")
    assert response.status_code == 200
    assert b"/api/sessions/{session_id}/compact/:" in response.content
