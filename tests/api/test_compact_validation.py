"""The compact endpoint's refusals before any compaction runs, and its status mapping."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

import pytest
from django.test import AsyncClient
from rest_framework.authtoken.models import Token

from agents.reasons import COMPACTION_OUTCOMES
from tests.factories import make_session, make_user
from web.api import COMPACTION_FAILURE_STATUS, _outcome_response

pytestmark = pytest.mark.django_db(transaction=True)


class TokenAsyncClient(AsyncClient):
    """AsyncClient sending one set of headers on every request.

    (AsyncClient's own constructor ``headers`` do not reach the ASGI scope as headers.)
    """

    def __init__(self, headers: dict[str, str]) -> None:
        super().__init__()
        self._always = headers

    def generic(self, method, path, *args, headers=None, **kwargs):  # type: ignore[override]
        return super().generic(
            method, path, *args, headers={**self._always, **(headers or {})}, **kwargs
        )


def token_async_client(user) -> TokenAsyncClient:
    token, _ = Token.objects.get_or_create(user=user)
    return TokenAsyncClient({"Authorization": f"Token {token.key}", "Accept-Language": "en"})


@pytest.fixture
def owner_client(transactional_db):
    user = make_user("owner")
    return user, token_async_client(user)


def _url(session_id) -> str:
    return f"/api/sessions/{session_id}/compact/"


async def test_someone_elses_session_is_404(owner_client) -> None:
    _, client = owner_client
    from asgiref.sync import sync_to_async

    theirs = await sync_to_async(make_session)(owner=await sync_to_async(make_user)("other"))
    for session_id in (theirs.pk, uuid.uuid4(), "nope"):
        response = await client.post(_url(session_id), {}, content_type="application/json")
        assert response.status_code == 404
        assert response.json() == {"error": "No such session.", "reason": "not_found"}


@pytest.mark.parametrize(
    ("raw", "reason", "error"),
    [
        ("{not json", "bad_json", None),
        ("[1, 2]", "invalid", "body: Invalid data. Expected a dictionary, but got list."),
        (
            json.dumps({"instructions": "x" * 2001}),
            "invalid",
            "instructions: Ensure this field has no more than 2000 characters.",
        ),
        (json.dumps({"instructions": ["a"]}), "invalid", "instructions: Not a valid string."),
    ],
)
async def test_bad_bodies_are_400(owner_client, raw, reason, error) -> None:
    user, client = owner_client
    from asgiref.sync import sync_to_async

    session = await sync_to_async(make_session)(owner=user)
    response = await client.post(_url(session.pk), raw, content_type="application/json")
    assert response.status_code == 400
    body = response.json()
    assert body["reason"] == reason
    if error is None:
        assert body["error"].startswith("JSON parse error")
    else:
        assert body["error"] == error


async def test_only_post_and_only_json(owner_client) -> None:
    user, client = owner_client
    from asgiref.sync import sync_to_async

    session = await sync_to_async(make_session)(owner=user)
    response = await client.get(_url(session.pk))
    assert response.status_code == 405
    assert response.json() == {"error": 'Method "GET" not allowed.', "reason": "method_not_allowed"}
    response = await client.post(_url(session.pk), {"instructions": "x"})  # multipart form
    assert response.status_code == 415
    assert response.json()["reason"] == "unsupported_media_type"


@dataclass
class FakeOutcome:
    status: str
    reason: str | None = None
    error: str | None = None
    removed_count: int = 0
    summary_message_id: int | None = None
    tokens_before: int = 0
    tokens_after: int = 0
    record_id: int | None = None


def test_done_maps_to_the_contract_fields() -> None:
    response = _outcome_response(FakeOutcome("done", None, None, 12, 77, 9000, 2100, 5))
    assert response.status_code == 200
    assert response.data == {
        "removed_count": 12,
        "summary_message_id": 77,
        "tokens_before": 9000,
        "tokens_after": 2100,
        "compaction_id": 5,  # its audit record (CONTRACT §7)
    }


@pytest.mark.parametrize(
    ("outcome", "code", "reason"),
    [
        (FakeOutcome("skipped", "in_progress", "busy"), 409, "in_progress"),
        (FakeOutcome("skipped", None, None), 409, "in_progress"),
        (FakeOutcome("failed", "no_auxiliary_model", "none"), 422, "no_auxiliary_model"),
        (FakeOutcome("nothing", "nothing_to_compact", "nothing"), 422, "nothing_to_compact"),
        (FakeOutcome("nothing", None, None), 422, "nothing_to_compact"),
        (FakeOutcome("failed", "oversized_message", "big"), 422, "oversized_message"),
        (FakeOutcome("failed", "system_prompt_too_long", "long"), 422, "system_prompt_too_long"),
        (FakeOutcome("failed", "summary_too_short", "short"), 502, "summary_too_short"),
        (FakeOutcome("failed", "timeout", "slow"), 502, "timeout"),
        (FakeOutcome("failed", "upstream_error", "5xx"), 502, "upstream_error"),
        (FakeOutcome("failed", "rate_limited", "429"), 502, "rate_limited"),
        (FakeOutcome("failed", "invalid_response", "?"), 502, "invalid_response"),
        (FakeOutcome("failed", "connection_error", "down"), 502, "connection_error"),
        (FakeOutcome("failed", "history_changed", "moved"), 409, "history_changed"),
        (FakeOutcome("failed", "no_gain", "no gain"), 422, "no_gain"),
        (FakeOutcome("failed", "storage_error", "db"), 500, "storage_error"),
        (FakeOutcome("failed", "something_new", "??"), 500, "something_new"),
        (FakeOutcome("failed", None, None), 500, "internal_error"),
    ],
)
def test_failures_map_to_status_and_reason(outcome, code, reason) -> None:
    response = _outcome_response(outcome)
    assert response.status_code == code
    assert response.data["reason"] == reason
    assert response.data["error"]
    assert set(response.data) == {"error", "reason"}
    if reason in COMPACTION_FAILURE_STATUS:
        assert COMPACTION_FAILURE_STATUS[reason] == code


def test_every_reason_a_compaction_ends_with_has_a_status() -> None:
    """Keyed by the one reason table: a new reason needs its status here, and no stale key
    outlives its reason."""
    assert set(COMPACTION_FAILURE_STATUS) == COMPACTION_OUTCOMES
