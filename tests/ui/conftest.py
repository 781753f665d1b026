"""Fixtures for the page, form, encoder and Markdown tests (Django test client)."""

from __future__ import annotations

from typing import Any

import pytest

from agents.models import Agent, ChatSession, ModelChannel
from agents.services import message_append
from tests.factories import make_agent, make_channel, make_session, make_user


@pytest.fixture
def user(db):
    return make_user("alice")


@pytest.fixture
def other_user(db):
    return make_user("mallory")


@pytest.fixture
def staff(db):
    return make_user("root", is_staff=True)


@pytest.fixture
def channel(db) -> ModelChannel:
    return make_channel(name="Main", model="scripted-model", context_window=8000)


@pytest.fixture
def agent(channel) -> Agent:
    return make_agent(name="Helper", model_channel=channel)


@pytest.fixture
def session(user, agent) -> ChatSession:
    return make_session(owner=user, agent=agent, title="First chat")


@pytest.fixture
def zh_client(client, user):
    client.force_login(user)
    return client


@pytest.fixture
def en_client(client, user):
    from django.conf import settings

    client.force_login(user)
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "en"
    return client


def add_messages(session: ChatSession, rows: list[tuple[str, str]], **extra: Any) -> list:
    return [
        message_append(session=session, role=role, content=text, **extra) for role, text in rows
    ]
