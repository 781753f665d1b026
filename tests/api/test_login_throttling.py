"""Login throttling per account and address (issue 15, item 3; issue 27 item 7; django-axes).

After ``AXES_FAILURE_LIMIT`` wrong passwords the login page and ``POST /api/auth/token/``
refuse even the right password with a clear message (429), lockouts are in the admin, and
the lock lifts after the cool-off."""

from __future__ import annotations

import re
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from tests.factories import make_user
from tests.support.api_clients import client_for

pytestmark = pytest.mark.django_db

PASSWORD = "the-right-password-93"
LIMIT = settings.AXES_FAILURE_LIMIT
README = Path(__file__).resolve().parents[2] / "README.md"


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


def test_five_anonymous_requests_lock_out_no_one_else(carol) -> None:
    """Issue 27 item 7: keyed to account + address, a stranger's wrong passwords lock out
    only that stranger's attempts at that account — not the admin from their own address,
    not every account behind the stranger's address."""
    admin = make_user("root-admin", password=PASSWORD, is_staff=True, is_superuser=True)
    for _ in range(LIMIT):
        _token(admin.username, "wrong", address="10.0.1.1")
    assert _token(admin.username, PASSWORD, address="10.0.1.1").status_code == 429
    assert _token(admin.username, PASSWORD, address="10.9.9.9").status_code == 200
    for n in range(LIMIT):
        _token(f"nobody{n}", "wrong", address="10.0.2.2")
    assert _token("carol", PASSWORD, address="10.0.2.2").status_code == 200


def test_the_stricter_lockout_is_per_account_and_per_address(carol, settings) -> None:
    """``NETACLAW_LOGIN_LOCKOUT=account_or_address``: the lockout of before, for a site that
    would rather lock an account out than let it be guessed from many addresses."""
    settings.AXES_LOCKOUT_PARAMETERS = settings.LOGIN_LOCKOUTS["account_or_address"]
    make_user("dave", password=PASSWORD)
    for n in range(LIMIT):
        _token("carol", "wrong", address=f"10.0.1.{n}")
    assert _token("carol", PASSWORD, address="10.9.9.9").status_code == 429
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


def _lock(username: str, address: str = "10.0.4.4") -> None:
    for _ in range(LIMIT):
        _token(username, "wrong", address=address)
    assert _token(username, PASSWORD, address=address).status_code == 429


def test_the_admin_unlocks_a_user(client, carol) -> None:
    _lock("carol")
    client.force_login(make_user("root-admin", is_staff=True, is_superuser=True))
    response = client.post(
        reverse("admin:auth_user_changelist"),
        {"action": "unlock_logins", "_selected_action": [str(carol.pk)]},
        HTTP_ACCEPT_LANGUAGE="en",
        follow=True,
    )
    assert response.status_code == 200 and "Cleared 1 failed logins." in response.content.decode()
    assert _token("carol", PASSWORD, address="10.0.4.4").status_code == 200


def test_the_admin_unlocks_the_selected_attempts(client, carol) -> None:
    _lock("carol")
    make_user("dave", password=PASSWORD)
    _lock("dave")
    client.force_login(make_user("root-admin", is_staff=True, is_superuser=True))
    attempt = AccessAttempt.objects.get(username="carol")
    response = client.post(
        reverse("admin:axes_accessattempt_changelist"),
        {"action": "unlock", "_selected_action": [str(attempt.pk)]},
        follow=True,
    )
    assert response.status_code == 200
    assert _token("carol", PASSWORD, address="10.0.4.4").status_code == 200
    assert _token("dave", PASSWORD, address="10.0.4.4").status_code == 429


@pytest.mark.parametrize(
    ("command", "args"),
    [
        ("axes_reset", []),
        ("axes_reset_username", ["carol"]),
        ("axes_reset_ip", ["10.0.4.4"]),
        ("axes_reset_ip_username", ["10.0.4.4", "carol"]),
    ],
)
def test_the_commands_readme_names_unlock(carol, command, args) -> None:
    _lock("carol")
    call_command(command, *args, stdout=StringIO())
    assert _token("carol", PASSWORD, address="10.0.4.4").status_code == 200
    security = README.read_text().split("\n## Security\n", 1)[1].split("\n## ", 1)[0]
    assert re.search(rf"\b{command}\b", security)
