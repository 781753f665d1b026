"""Fixtures of the REST API tests: users, their API clients, a few agents and channels."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.factories import make_agent, make_user

ENGLISH = {"HTTP_ACCEPT_LANGUAGE": "en"}  # LANGUAGE_CODE is zh-hans; assert English messages


def client_for(user=None) -> APIClient:
    client = APIClient(**ENGLISH)
    if user is not None:
        client.force_authenticate(user=user)
    return client


def token_client(user) -> APIClient:
    token, _ = Token.objects.get_or_create(user=user)
    return APIClient(HTTP_AUTHORIZATION=f"Token {token.key}", **ENGLISH)


@pytest.fixture(autouse=True)
def _fast_passwords(settings) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def alice(db):
    return make_user("alice")


@pytest.fixture
def bob(db):
    return make_user("bob")


@pytest.fixture
def staff(db):
    return make_user("root", is_staff=True)


@pytest.fixture
def anon() -> APIClient:
    return client_for()


@pytest.fixture
def alice_api(alice) -> APIClient:
    return token_client(alice)


@pytest.fixture
def bob_api(bob) -> APIClient:
    return token_client(bob)


@pytest.fixture
def staff_api(staff) -> APIClient:
    return token_client(staff)


@pytest.fixture
def shared_agent(db):
    return make_agent(name="shared helper")
