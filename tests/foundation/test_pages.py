from __future__ import annotations

import pytest
from django.core.checks import Warning
from django.test import override_settings

from netaclaw.checks import check_production_settings
from tests.factories import make_user

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("url", ["/chat/", "/admin/", "/"])
def test_pages_require_login(client, url: str) -> None:
    response = client.get(url, follow=True)
    assert response.redirect_chain, url
    final = response.redirect_chain[-1][0]
    assert "login" in final


def test_login_page_renders_and_logs_in(client) -> None:
    assert client.get("/accounts/login/").status_code == 200
    make_user("alice", password="correct horse battery")
    response = client.post(
        "/accounts/login/", {"username": "alice", "password": "correct horse battery"}
    )
    assert response.status_code == 302 and response["Location"] == "/chat/"
    assert client.get("/chat/").status_code == 200


def test_wrong_password_shows_an_error(client) -> None:
    make_user("bob", password="right-password-1")
    response = client.post("/accounts/login/", {"username": "bob", "password": "nope"})
    assert response.status_code == 200
    assert 'role="alert"' in response.content.decode()


def test_logout_is_post_only_and_ends_the_session(client) -> None:
    client.force_login(make_user(username="carol"))
    page = client.get("/accounts/logout/")  # a bookmark or a typed address: the button
    assert page.status_code == 200
    html = page.content.decode()
    assert 'method="post" action="/accounts/logout/"' in html and "carol" in html
    assert client.get("/chat/").status_code == 200, "a GET must not log out"
    response = client.post("/accounts/logout/")
    assert response.status_code == 302 and response["Location"] == "/accounts/login/"
    assert client.get("/chat/").status_code == 302


def test_production_checks_flag_the_in_memory_layer_and_sqlite() -> None:
    """(A generated secret key under DJANGO_DEBUG=0 is refused by the settings themselves:
    ``test_production_settings.py``.)"""
    with override_settings(
        DEBUG=False,
        CHANNEL_LAYERS={"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}},
        DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3"}},
    ):
        found = {c.id: c for c in check_production_settings()}
    assert set(found) == {"netaclaw.W001", "netaclaw.W002"}
    assert all(isinstance(c, Warning) for c in found.values())


def test_production_checks_quiet_when_configured() -> None:
    with override_settings(
        DEBUG=False,
        SECRET_KEY_IS_GENERATED=False,
        CHANNEL_LAYERS={"default": {"BACKEND": "channels_redis.core.RedisChannelLayer"}},
        DATABASES={"default": {"ENGINE": "django.db.backends.postgresql"}},
    ):
        assert check_production_settings() == []
    with override_settings(DEBUG=True, SECRET_KEY_IS_GENERATED=True):
        assert check_production_settings() == []
