"""Issue 16 items 1 and 5 over REST (staff only, like every channel endpoint): make a channel
the default auxiliary model, test its connection, and the first auxiliary channel created
through the API becomes the default."""

from __future__ import annotations

import pytest

from agents.auxiliary import default_auxiliary_channel
from scripted_llm import Fail
from tests.factories import make_channel
from tests.support.api_clients import client_for

pytestmark = pytest.mark.django_db

SECRET = "sk-live-API-CHANNEL-TEST-SECRET"


def test_the_first_auxiliary_channel_created_by_the_api_is_the_default(staff) -> None:
    api = client_for(staff)
    body = {"name": "Plain", "provider": "openai", "api_key": "sk-x", "model": "gpt-4o"}
    assert api.post("/api/model-channels/", body, format="json").status_code == 201
    assert default_auxiliary_channel() is None
    response = api.post(
        "/api/model-channels/", {**body, "name": "Aux", "is_auxiliary": True}, format="json"
    )
    assert response.status_code == 201
    assert default_auxiliary_channel().pk == response.json()["id"]
    # unmarked through PATCH: no usable auxiliary channel is left, so no default either
    url = f"/api/model-channels/{response.json()['id']}/"
    assert api.patch(url, {"is_auxiliary": False}, format="json").status_code == 200
    assert default_auxiliary_channel() is None


def test_the_api_makes_a_channel_the_default(staff, alice) -> None:
    channel = make_channel(name="Api", is_auxiliary=False)
    url = f"/api/model-channels/{channel.pk}/default-auxiliary/"
    assert client_for(alice).post(url).status_code == 403
    assert client_for().post(url).status_code in (401, 403)
    response = client_for(staff).post(url)
    assert response.status_code == 200 and response.json()["is_auxiliary"] is True
    assert default_auxiliary_channel() == channel
    off = make_channel(name="Off", enabled=False)
    response = client_for(staff).post(f"/api/model-channels/{off.pk}/default-auxiliary/")
    assert response.status_code == 400
    assert response.json()["enabled"] == [
        "A disabled channel cannot be the default auxiliary model; enable it first."
    ]
    assert default_auxiliary_channel() == channel
    assert (
        client_for(staff).post("/api/model-channels/999999/default-auxiliary/").status_code == 404
    )


def test_the_api_tests_a_channel(staff, alice, llm_server) -> None:
    llm_server.models = ("qwen2.5:7b",)
    channel = make_channel(
        provider="openai_compatible",
        base_url=llm_server.openai_base_url,
        api_key=SECRET,
        model="qwen2.5:7b",
    )
    url = f"/api/model-channels/{channel.pk}/test/"
    assert client_for(alice).post(url).status_code == 403
    assert llm_server.requests == []
    body = client_for(staff).post(url).json()
    assert body == {
        "outcome": "ok",
        "models": ["qwen2.5:7b"],
        "model_listed": True,
        "reason": None,
        "status": None,
        "error": None,
    }
    llm_server.enqueue(
        Fail(401, {"error": {"message": f"Incorrect API key provided: {SECRET}", "code": None}})
    )
    response = client_for(staff).post(url)
    body = response.json()
    assert (body["outcome"], body["reason"], body["status"]) == ("failed", "auth_error", 401)
    assert body["error"] == (
        "The model provider refused the API key (HTTP 401): Incorrect API key provided: ***"
    )
    assert SECRET not in response.content.decode()
