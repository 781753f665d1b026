"""Fixtures of the REST API tests: users, their API clients, a few agents and channels."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests.factories import make_agent, make_user
from tests.support.api_clients import client_for, token_client


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
