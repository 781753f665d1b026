"""Tokens expire and die with a password change; the API answers in JSON whatever goes
wrong; the API and the pages accept the same settings (issue 15, item 6)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from agents.models import Agent, ModelChannel
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.support.api_clients import ENGLISH, token_client

pytestmark = pytest.mark.django_db

PASSWORD = "pw-for-tokens-1234"


def _login(username: str) -> str:
    response = APIClient(**ENGLISH).post(
        "/api/auth/token/", {"username": username, "password": PASSWORD}, format="json"
    )
    assert response.status_code == 200, response.content
    return response.json()["token"]


def _with(token: str) -> APIClient:
    return APIClient(HTTP_AUTHORIZATION=f"Token {token}", **ENGLISH)


# --- tokens ------------------------------------------------------------------------------


def test_a_token_expires_after_the_ttl_and_login_issues_a_new_one(settings) -> None:
    settings.NETACLAW = {**settings.NETACLAW, "TOKEN_TTL_SECONDS": 3600}
    make_user("erin", password=PASSWORD)
    old = _login("erin")
    assert _with(old).get("/api/sessions/").status_code == 200
    issued = Token.objects.get(key=old).created
    Token.objects.filter(key=old).update(created=issued - timedelta(hours=2))
    refused = _with(old).get("/api/sessions/")
    assert refused.status_code in (401, 403)  # 403: the first authenticator is the session
    assert refused.json() == {
        "detail": "The API token has expired; request a new one.",
        "reason": "token_expired",
    }
    new = _login("erin")
    assert new != old and _with(new).get("/api/sessions/").status_code == 200


def test_a_password_change_ends_every_token(settings) -> None:
    user = make_user("frank", password=PASSWORD)
    old = _login("frank")
    user.set_password("another-password-5678")
    user.save()
    assert not Token.objects.filter(user=user).exists()
    assert _with(old).get("/api/sessions/").status_code in (401, 403)
    user.first_name = "Frank"  # other changes keep tokens
    user.save()
    token = Token.objects.create(user=user)
    user.save()
    assert Token.objects.filter(key=token.key).exists()


def test_a_ttl_of_zero_never_expires(settings) -> None:
    settings.NETACLAW = {**settings.NETACLAW, "TOKEN_TTL_SECONDS": 0}
    user = make_user("gina")
    token = Token.objects.create(user=user)
    Token.objects.filter(pk=token.pk).update(created=token.created - timedelta(days=3650))
    assert _with(token.key).get("/api/sessions/").status_code == 200


# --- JSON errors -------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["/api/sessions/", "/api/auth/token/", "/api/agents/"])
def test_a_body_over_the_upload_limit_is_a_json_413(settings, url) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    api = token_client(make_user())
    response = api.post(url, data="x" * 20_000, content_type="application/json")
    assert response.status_code == 413
    assert response["Content-Type"].startswith("application/json")
    assert response.json() == {
        "detail": "The request body is too large.",
        "reason": "request_too_large",
    }


def test_the_compact_endpoint_answers_a_large_body_in_its_own_shape(settings) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    user = make_user()
    session = make_session(owner=user)
    response = token_client(user).post(
        f"/api/sessions/{session.pk}/compact/", data="x" * 20_000, content_type="application/json"
    )
    assert response.status_code == 413
    assert response.json() == {
        "error": "The request body is too large.",
        "reason": "request_too_large",
    }


@pytest.mark.parametrize("url", ["/api/sessions/", "/api/agents/", "/api/auth/token/"])
def test_json_nested_too_deeply_is_a_400_not_a_500(url) -> None:
    api = token_client(make_user())
    response = api.post(url, data="[" * 100_000 + "]" * 100_000, content_type="application/json")
    assert response.status_code == 400
    assert "nested too deeply" in response.json()["detail"]


# --- one validation for the API and the pages -------------------------------------------


@pytest.mark.parametrize("threshold", [31, 94])
def test_a_threshold_off_the_step_is_refused_by_the_api_like_the_page(alice_api, threshold):
    response = alice_api.post(
        "/api/agents/",
        {"name": "stepper", "compaction_threshold_percent": threshold},
        format="json",
    )
    assert response.status_code == 400, response.content
    assert response.json()["compaction_threshold_percent"] == [
        "The trigger threshold must be between 30% and 95%, in steps of 5%."
    ]
    assert not Agent.objects.filter(name="stepper").exists()


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (
            {"context_window": 1},
            "context_window",
            "The context window must be at least 1024 tokens (or blank for the model's own).",
        ),
        (
            {"base_url": "ftp://files.example.com/v1"},
            "base_url",
            "Enter an http:// or https:// URL.",
        ),
    ],
    ids=["1-token-window", "ftp-base-url"],
)
def test_the_api_and_the_page_refuse_the_same_channel_values(
    staff, staff_api, client, change, field, message
) -> None:
    channel = make_channel(api_key="")
    before = ModelChannel.objects.filter(pk=channel.pk).values().get()
    response = staff_api.patch(f"/api/model-channels/{channel.pk}/", change, format="json")
    assert response.status_code == 400, response.content
    assert response.json()[field] == [message]
    created = staff_api.post(
        "/api/model-channels/",
        {"name": "n", "provider": "openai_compatible", "model": "m", "base_url": "http://x/v1"}
        | change,
        format="json",
    )
    assert created.status_code == 400 and created.json()[field] == [message]

    client.force_login(staff)
    data = {
        "name": channel.name,
        "provider": channel.provider,
        "base_url": channel.base_url,
        "model": channel.model,
        "context_window": "8000",
        "enabled": "on",
    } | {k: str(v) for k, v in change.items()}
    page = client.post(
        reverse("config:channel_edit", args=[channel.pk]), data, HTTP_ACCEPT_LANGUAGE="en"
    )
    assert page.status_code == 200 and message.replace("'", "&#x27;") in page.content.decode()
    assert ModelChannel.objects.filter(pk=channel.pk).values().get() == before


def test_the_domain_refuses_what_no_form_checked() -> None:
    from django.core.exceptions import ValidationError

    from agents.configuration import agent_update, channel_update

    agent = make_agent()
    with pytest.raises(ValidationError) as info:
        agent_update(agent=agent, compaction_threshold_percent=33)
    assert "compaction_threshold_percent" in info.value.message_dict
    with pytest.raises(ValidationError) as info:
        channel_update(channel=make_channel(api_key=""), base_url="ftp://x.example/v1")
    assert "base_url" in info.value.message_dict
