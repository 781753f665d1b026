"""Token login, and that every endpoint answers anonymous requests itself (JSON 401/403)."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client
from rest_framework.authtoken.models import Token

from tests.factories import make_session
from tests.support.api_clients import ENGLISH, client_for

pytestmark = pytest.mark.django_db

SID = str(uuid.uuid4())
ENDPOINTS = [
    ("get", "/api/sessions/"),
    ("post", "/api/sessions/"),
    ("get", f"/api/sessions/{SID}/"),
    ("get", f"/api/sessions/{SID}/messages/"),
    ("post", f"/api/sessions/{SID}/compact/"),
    ("get", "/api/agents/"),
    ("post", "/api/agents/"),
    ("get", "/api/agents/1/"),
    ("patch", "/api/agents/1/"),
    ("get", "/api/model-channels/"),
    ("post", "/api/model-channels/"),
    ("get", "/api/model-channels/1/"),
    ("patch", "/api/model-channels/1/"),
    ("get", "/api/dict-info/"),
    ("post", "/api/dict-info/"),
    ("get", "/api/dict-info/1/"),
    ("patch", "/api/dict-info/1/"),
    ("get", "/api/schema/?format=json"),
]


def test_token_login_returns_a_token_that_authenticates(alice) -> None:
    response = client_for().post(
        "/api/auth/token/", {"username": "alice", "password": "pw-for-tests-123"}, format="json"
    )
    assert response.status_code == 200
    key = response.json()["token"]
    assert key == Token.objects.get(user=alice).key
    listed = client_for().get("/api/sessions/", HTTP_AUTHORIZATION=f"Token {key}")
    assert listed.status_code == 200 and listed.json() == []


def test_token_login_bad_credentials_is_400_with_a_clear_error(alice) -> None:
    response = client_for().post(
        "/api/auth/token/", {"username": "alice", "password": "wrong"}, format="json"
    )
    assert response.status_code == 400
    assert response.json() == {"non_field_errors": ["Unable to log in with provided credentials."]}
    assert not Token.objects.filter(user=alice).exists()


def test_token_login_missing_fields_is_400(db) -> None:
    response = client_for().post("/api/auth/token/", {}, format="json")
    assert response.status_code == 400
    assert response.json() == {
        "username": ["This field is required."],
        "password": ["This field is required."],
    }


def test_token_login_needs_no_csrf_token(alice) -> None:
    client = Client(enforce_csrf_checks=True, **ENGLISH)
    response = client.post(
        "/api/auth/token/",
        {"username": "alice", "password": "pw-for-tests-123"},
        content_type="application/json",
    )
    assert response.status_code == 200


@pytest.mark.parametrize(("method", "url"), ENDPOINTS)
def test_every_endpoint_refuses_anonymous_requests_with_json(method: str, url: str) -> None:
    response = getattr(client_for(), method)(url, {}, format="json")
    assert response.status_code in (401, 403), response.status_code
    assert "json" in response["Content-Type"]
    body = response.json()
    assert "login" not in response.get("Location", "")
    assert body.get("detail") or body.get("error")


@pytest.mark.parametrize(("method", "url"), ENDPOINTS)
def test_a_wrong_token_is_refused(method: str, url: str) -> None:
    response = getattr(client_for(), method)(
        url, {}, format="json", HTTP_AUTHORIZATION="Token not-a-real-token"
    )
    assert response.status_code in (401, 403)


def test_anonymous_compact_says_why_in_the_error_shape() -> None:
    response = client_for().post(f"/api/sessions/{SID}/compact/", {}, format="json")
    assert response.status_code == 403
    assert response.json() == {
        "error": "Authentication credentials were not provided.",
        "reason": "not_authenticated",
    }


def test_inactive_users_token_is_refused(alice) -> None:
    token = Token.objects.create(user=alice)
    alice.is_active = False
    alice.save()
    response = client_for().get("/api/sessions/", HTTP_AUTHORIZATION=f"Token {token.key}")
    assert response.status_code in (401, 403)


def test_session_cookie_login_works_for_reads(alice) -> None:
    client = Client(**ENGLISH)
    client.force_login(alice)
    make_session(owner=alice)
    response = client.get("/api/sessions/")
    assert response.status_code == 200 and len(response.json()) == 1
