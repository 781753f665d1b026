"""Agents: staff see all, others shared + own; non-staff edit only their own; ranges."""

from __future__ import annotations

import pytest

from agents.models import Agent
from tests.factories import make_agent, make_channel

pytestmark = pytest.mark.django_db

AGENT_FIELDS = {
    "id",
    "name",
    "system_prompt",
    "owner",
    "shared",
    "model_channel",
    "auxiliary_model_channel",
    "compaction_strategy",
    "compaction_threshold_percent",
    "compaction_protect_first_n",
    "compaction_target_percent",
    "compaction_reground",
    "compaction_notes",
    "search_history_enabled",
    "compaction_mode",
    "compaction_instructions",
    "compaction_token_cap",
    "created_at",
    "updated_at",
}


def test_list_shows_shared_and_own_agents(alice, bob, alice_api, staff_api, shared_agent) -> None:
    own = make_agent(owner=alice, name="a-own")
    theirs = make_agent(owner=bob, name="b-own")
    listed = {a["id"] for a in alice_api.get("/api/agents/").json()}
    assert listed == {own.pk, shared_agent.pk}
    assert {a["id"] for a in staff_api.get("/api/agents/").json()} == {
        own.pk,
        theirs.pk,
        shared_agent.pk,
    }


def test_create_agent_is_owned_by_its_creator(alice, alice_api) -> None:
    channel = make_channel()
    aux = make_channel(is_auxiliary=True)
    response = alice_api.post(
        "/api/agents/",
        {
            "name": "Coder",
            "system_prompt": "Write code.",
            "model_channel": channel.pk,
            "auxiliary_model_channel": aux.pk,
            "compaction_threshold_percent": 80,
            "compaction_protect_first_n": 2,
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert set(body) == AGENT_FIELDS
    assert body["owner"] == alice.pk and body["shared"] is False
    agent = Agent.objects.get(pk=body["id"])
    assert (agent.owner, agent.model_channel, agent.auxiliary_model_channel) == (
        alice,
        channel,
        aux,
    )
    assert (agent.compaction_threshold_percent, agent.compaction_protect_first_n) == (80, 2)
    assert agent.compaction_strategy == "lossy"


def test_create_agent_defaults(alice_api) -> None:
    body = alice_api.post("/api/agents/", {"name": "Plain"}, format="json").json()
    assert body["compaction_threshold_percent"] == 70
    assert body["compaction_protect_first_n"] == 3
    assert body["model_channel"] is None and body["auxiliary_model_channel"] is None


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        (
            "compaction_threshold_percent",
            29,
            "compaction_threshold_percent must be between 30 and 95.",
        ),
        (
            "compaction_threshold_percent",
            96,
            "compaction_threshold_percent must be between 30 and 95.",
        ),
        ("compaction_protect_first_n", 0, "compaction_protect_first_n must be between 1 and 10."),
        ("compaction_protect_first_n", 11, "compaction_protect_first_n must be between 1 and 10."),
        ("compaction_strategy", "lossless", '"lossless" is not a valid choice.'),
    ],
)
def test_agent_range_errors_are_field_errors(alice, alice_api, field, value, message) -> None:
    response = alice_api.post("/api/agents/", {"name": "X", field: value}, format="json")
    assert response.status_code == 400
    assert response.json() == {field: [message]}
    agent = make_agent(owner=alice)
    response = alice_api.patch(f"/api/agents/{agent.pk}/", {field: value}, format="json")
    assert response.status_code == 400
    assert response.json() == {field: [message]}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("compaction_threshold_percent", 30),
        ("compaction_threshold_percent", 95),
        ("compaction_protect_first_n", 1),
        ("compaction_protect_first_n", 10),
    ],
)
def test_agent_range_bounds_are_accepted(alice, alice_api, field, value) -> None:
    agent = make_agent(owner=alice)
    response = alice_api.patch(f"/api/agents/{agent.pk}/", {field: value}, format="json")
    assert response.status_code == 200
    agent.refresh_from_db()
    assert getattr(agent, field) == value


def test_auxiliary_channel_must_be_marked_auxiliary(alice, alice_api) -> None:
    plain = make_channel(is_auxiliary=False)
    agent = make_agent(owner=alice)
    response = alice_api.patch(
        f"/api/agents/{agent.pk}/", {"auxiliary_model_channel": plain.pk}, format="json"
    )
    assert response.status_code == 400
    assert response.json() == {
        "auxiliary_model_channel": [f"Channel {plain.pk} is not marked usable as auxiliary model."]
    }
    response = alice_api.patch(
        f"/api/agents/{agent.pk}/", {"auxiliary_model_channel": 999999}, format="json"
    )
    assert response.status_code == 400
    assert response.json() == {
        "auxiliary_model_channel": ['Invalid pk "999999" - object does not exist.']
    }


def test_patch_changes_only_the_given_fields(alice, alice_api) -> None:
    aux = make_channel(is_auxiliary=True)
    agent = make_agent(owner=alice, compaction_threshold_percent=60, auxiliary_model_channel=aux)
    response = alice_api.patch(f"/api/agents/{agent.pk}/", {"name": "Renamed"}, format="json")
    assert response.status_code == 200
    agent.refresh_from_db()
    assert agent.name == "Renamed" and agent.compaction_threshold_percent == 60
    assert agent.auxiliary_model_channel == aux and agent.owner == alice
    response = alice_api.patch(
        f"/api/agents/{agent.pk}/", {"auxiliary_model_channel": None}, format="json"
    )
    agent.refresh_from_db()
    assert response.status_code == 200 and agent.auxiliary_model_channel is None


def test_non_staff_cannot_edit_a_shared_agent(alice_api, shared_agent) -> None:
    response = alice_api.patch(f"/api/agents/{shared_agent.pk}/", {"name": "Mine"}, format="json")
    assert response.status_code == 403
    assert response.json() == {"detail": "Only staff can change a shared agent."}
    shared_agent.refresh_from_db()
    assert shared_agent.name == "shared helper"


def test_someone_elses_agent_is_404(bob, alice_api) -> None:
    private = make_agent(owner=bob)
    assert alice_api.get(f"/api/agents/{private.pk}/").status_code == 404
    response = alice_api.patch(f"/api/agents/{private.pk}/", {"name": "x"}, format="json")
    assert response.status_code == 404
    assert alice_api.get("/api/agents/999999/").status_code == 404


def test_only_staff_may_share_an_agent(alice, alice_api, staff_api) -> None:
    response = alice_api.post("/api/agents/", {"name": "S", "shared": True}, format="json")
    assert response.status_code == 400
    assert response.json() == {"shared": ["Only staff can share an agent with everyone."]}
    response = staff_api.post("/api/agents/", {"name": "S", "shared": True}, format="json")
    assert response.status_code == 201
    assert response.json()["shared"] is True and response.json()["owner"] is None


def test_staff_edits_any_agent(bob, staff_api, shared_agent) -> None:
    private = make_agent(owner=bob)
    for agent in (private, shared_agent):
        response = staff_api.patch(
            f"/api/agents/{agent.pk}/", {"compaction_threshold_percent": 50}, format="json"
        )
        assert response.status_code == 200
        agent.refresh_from_db()
        assert agent.compaction_threshold_percent == 50
    private.refresh_from_db()
    assert private.owner == bob  # editing keeps the owner


def test_unsupported_methods_are_405(alice, alice_api) -> None:
    agent = make_agent(owner=alice)
    assert alice_api.delete(f"/api/agents/{agent.pk}/").status_code == 405
    assert alice_api.put(f"/api/agents/{agent.pk}/", {}, format="json").status_code == 405
