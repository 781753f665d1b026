"""The agent's search_history switch: on by default, in the REST API, the agent page and
the tools a turn gets."""

from __future__ import annotations

import re

import pytest

from agents.models import Agent
from tests.factories import make_agent, make_user
from tests.support.api_clients import token_client

pytestmark = pytest.mark.django_db


def test_the_api_reads_and_writes_the_switch() -> None:
    owner = make_user()
    api = token_client(owner)
    created = api.post("/api/agents/", {"name": "recaller"}, format="json").json()
    assert created["search_history_enabled"] is True
    path = f"/api/agents/{created['id']}/"
    changed = api.patch(path, {"search_history_enabled": False}, format="json")
    assert changed.status_code == 200 and changed.json()["search_history_enabled"] is False
    assert Agent.objects.get(pk=created["id"]).search_history_enabled is False


def test_the_agent_page_shows_and_saves_the_switch(client) -> None:
    owner = make_user()
    agent = make_agent(owner=owner)
    client.force_login(owner)
    page = client.get(f"/agents/{agent.pk}/").content.decode()
    box = re.search(r'<input[^>]*name="search_history_enabled"[^>]*>', page)
    assert box is not None and "checked" in box.group(0)
    form = {
        "name": agent.name,
        "compaction_strategy": "lossy",
        "compaction_threshold_percent": "70",
        "compaction_protect_first_n": "3",
    }
    assert client.post(f"/agents/{agent.pk}/", form).status_code == 302  # box unticked
    agent.refresh_from_db()
    assert agent.search_history_enabled is False
    form["search_history_enabled"] = "on"
    assert client.post(f"/agents/{agent.pk}/", form).status_code == 302
    agent.refresh_from_db()
    assert agent.search_history_enabled is True
