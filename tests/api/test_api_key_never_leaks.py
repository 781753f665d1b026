"""A model channel's api_key appears in no response body of any endpoint."""

from __future__ import annotations

import pytest

from agents import services
from agents.models import Role
from system.dictionary import DEFAULT_AUXILIARY_CHANNEL, NETACLAW_TYPE_KEY, dict_set
from tests.factories import make_agent, make_channel, make_session

pytestmark = pytest.mark.django_db

CANARY = "sk-LEAK-CANARY-7f3a9c"


def test_no_response_contains_the_key(staff, staff_api, alice_api) -> None:
    channel = make_channel(api_key=CANARY, is_auxiliary=True)
    agent = make_agent(model_channel=channel, auxiliary_model_channel=channel)
    session = make_session(owner=staff, agent=agent)
    services.message_append(session=session, role=Role.USER, content="hello")
    entry = dict_set(
        type_key=NETACLAW_TYPE_KEY, name=DEFAULT_AUXILIARY_CHANNEL, value=str(channel.pk)
    )
    ch = f"/api/model-channels/{channel.pk}/"
    responses = [
        staff_api.get("/api/model-channels/"),
        staff_api.get(ch),
        staff_api.patch(ch, {"api_key": CANARY, "name": "renamed"}, format="json"),
        staff_api.patch(ch, {"api_key": CANARY, "provider": "bogus"}, format="json"),
        staff_api.post(
            "/api/model-channels/",
            {"name": "n", "provider": "openai", "model": "m", "api_key": CANARY + "-2"},
            format="json",
        ),
        staff_api.post(
            "/api/model-channels/",
            {"name": "n", "provider": "openai_compatible", "model": "m", "api_key": CANARY},
            format="json",
        ),
        staff_api.get("/api/agents/"),
        staff_api.get(f"/api/agents/{agent.pk}/"),
        staff_api.patch(f"/api/agents/{agent.pk}/", {"name": "a"}, format="json"),
        staff_api.post("/api/agents/", {"name": "b", "model_channel": channel.pk}, format="json"),
        alice_api.get("/api/agents/"),
        alice_api.get(ch),
        staff_api.get("/api/sessions/"),
        staff_api.get(f"/api/sessions/{session.pk}/"),
        staff_api.get(f"/api/sessions/{session.pk}/messages/"),
        staff_api.get(f"/api/sessions/{session.pk}/messages/?view=full"),
        staff_api.post("/api/sessions/", {"agent": agent.pk}, format="json"),
        staff_api.get("/api/dict-info/"),
        staff_api.get(f"/api/dict-info/{entry.pk}/"),
        staff_api.patch(f"/api/dict-info/{entry.pk}/", {"remark": "r"}, format="json"),
        staff_api.get("/api/schema/"),
        staff_api.get("/api/schema/?format=json"),
    ]
    statuses = [r.status_code for r in responses]
    assert (
        statuses
        == [200, 200, 200, 400, 201, 400, 200, 200, 200, 201, 200, 403]
        + [200] * 4
        + [201]
        + [200] * 5
    )
    for response in responses:
        assert CANARY not in response.content.decode(), response.wsgi_request.path
