"""Login throttling per account and per address (issue 15, item 3; django-axes).

After ``AXES_FAILURE_LIMIT`` wrong passwords the login page and ``POST /api/auth/token/``
refuse even the right password with a clear message (429), lockouts are in the admin, and
the lock lifts after the cool-off."""

from __future__ import annotations

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from tests.factories import make_user
from tests.support.api_clients import client_for

pytestmark = pytest.mark.django_db

PASSWORD = "the-right-password-93"
LIMIT = settings.AXES_FAILURE_LIMIT


@pytest.fixture
def carol(db):
    return make_user("carol", password=PASSWORD)


def _token(username: str, password: str, address: str = "10.0.0.1"):
    return client_for().post(
        "/api/auth/token/",
        {"username": username, "password": password},
        format="json",
        REMOTE_ADDR=address,
    )


def _page_login(client, username: str, password: str, address: str = "10.0.0.1"):
    return client.post(
        reverse("login"),
        {"username": username, "password": password},
        REMOTE_ADDR=address,
        HTTP_ACCEPT_LANGUAGE="en",
    )


def _expire_cool_off() -> None:
    AccessAttempt.objects.update(
        attempt_time=timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(seconds=1)
    )


def test_wrong_passwords_lock_the_token_endpoint_even_for_the_right_one(carol) -> None:
    assert LIMIT <= 10
    for _ in range(LIMIT - 1):
        assert _token("carol", "wrong").status_code == 400
    locked = _token("carol", "wrong")
    assert locked.status_code == 429
    refused = _token("carol", PASSWORD)
    assert refused.status_code == 429
    body = refused.json()
    assert body["reason"] == "login_locked"
    assert "Too many failed logins" in body["detail"] and "minutes" in body["detail"]
    assert int(refused["Retry-After"]) == body["retry_after"] > 0
    assert "token" not in body


def test_the_login_page_locks_too_with_a_clear_message(client, carol) -> None:
    for _ in range(LIMIT):
        _page_login(client, "carol", "wrong")
    response = _page_login(client, "carol", PASSWORD)
    assert response.status_code == 429
    html = response.content.decode()
    assert 'data-reason="login_locked"' in html and "Too many failed logins" in html
    assert "_auth_user_id" not in client.session


def test_the_lock_is_per_account_from_any_address(carol) -> None:
    for n in range(LIMIT):
        _token("carol", "wrong", address=f"10.0.1.{n}")
    assert _token("carol", PASSWORD, address="10.9.9.9").status_code == 429


def test_the_lock_is_per_address_for_any_account(carol) -> None:
    make_user("dave", password=PASSWORD)
    for n in range(LIMIT):
        _token(f"nobody{n}", "wrong", address="10.0.2.2")
    assert _token("dave", PASSWORD, address="10.0.2.2").status_code == 429
    assert _token("dave", PASSWORD, address="10.0.2.3").status_code == 200


def test_the_lock_lifts_after_the_cool_off(client, carol) -> None:
    for _ in range(LIMIT):
        _token("carol", "wrong")
    assert _token("carol", PASSWORD).status_code == 429
    _expire_cool_off()
    assert _token("carol", PASSWORD).status_code == 200
    assert _page_login(client, "carol", PASSWORD).status_code == 302


def test_lockouts_are_listed_in_the_admin(client, carol) -> None:
    for _ in range(LIMIT):
        _token("carol", "wrong", address="10.0.3.3")
    client.force_login(make_user("root-admin", is_staff=True, is_superuser=True))
    response = client.get(reverse("admin:axes_accessattempt_changelist"))
    assert response.status_code == 200
    html = response.content.decode()
    assert "carol" in html and "10.0.3.3" in html


@pytest.mark.django_db(transaction=True)
async def test_the_lockout_holds_on_the_async_stack_daphne_runs(carol) -> None:
    """Daphne serves through Django's async handler, where axes' middleware takes its
    async path: the lockout answer is the same."""
    from django.test import AsyncClient

    client = AsyncClient()
    for _ in range(LIMIT):
        await client.post(reverse("login"), {"username": "carol", "password": "wrong"})
    page = await client.post(reverse("login"), {"username": "carol", "password": PASSWORD})
    assert page.status_code == 429 and 'data-reason="login_locked"' in page.content.decode()
    api = await client.post(
        "/api/auth/token/",
        {"username": "carol", "password": PASSWORD},
        content_type="application/json",
    )
    assert api.status_code == 429 and api.json()["reason"] == "login_locked"
