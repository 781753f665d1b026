"""Small builders for test data; explicit arguments, no magic."""

from __future__ import annotations

import itertools
from typing import Any

from django.contrib.auth import get_user_model

from agents.models import Agent, ChatSession, ModelChannel

_seq = itertools.count(1)


def make_user(username: str | None = None, *, password: str = "pw-for-tests-123", **extra: Any):
    User = get_user_model()
    name = username or f"user{next(_seq)}"
    return User.objects.create_user(username=name, password=password, **extra)


def make_channel(**fields: Any) -> ModelChannel:
    defaults: dict[str, Any] = {
        "name": f"channel {next(_seq)}",
        "provider": "openai_compatible",
        "base_url": "http://127.0.0.1:9/v1",
        "api_key": "sk-test-key",
        "model": "scripted-model",
        "context_window": 8000,
    }
    defaults.update(fields)
    return ModelChannel.objects.create(**defaults)


def make_agent(**fields: Any) -> Agent:
    defaults: dict[str, Any] = {"name": f"agent {next(_seq)}", "system_prompt": "You help."}
    defaults.update(fields)
    return Agent.objects.create(**defaults)


def make_session(*, owner: Any = None, agent: Agent | None = None, title: str = "") -> ChatSession:
    return ChatSession.objects.create(
        owner=owner or make_user(), agent=agent or make_agent(), title=title
    )
