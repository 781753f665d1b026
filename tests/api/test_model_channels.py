"""Model channels: staff only; api_key is write-only and never in a response."""

from __future__ import annotations

import pytest

from agents.models import ModelChannel
from tests.factories import make_channel

pytestmark = pytest.mark.django_db

CHANNEL_FIELDS = {
    "id",
    "name",
    "provider",
    "base_url",
    "has_api_key",
    "model",
    "context_window",
    "is_auxiliary",
    "enabled",
    "input_price_per_million",
    "output_price_per_million",
    "created_at",
    "updated_at",
}


def test_non_staff_get_403(alice_api) -> None:
    channel = make_channel()
    assert alice_api.get("/api/model-channels/").status_code == 403
    assert alice_api.get(f"/api/model-channels/{channel.pk}/").status_code == 403
    response = alice_api.post(
        "/api/model-channels/", {"name": "x", "provider": "openai", "model": "m"}, format="json"
    )
    assert response.status_code == 403
    response = alice_api.patch(f"/api/model-channels/{channel.pk}/", {"name": "y"}, format="json")
    assert response.status_code == 403
    assert response.json() == {"detail": "You do not have permission to perform this action."}


def test_staff_creates_a_channel_and_the_key_stays_hidden(staff_api) -> None:
    response = staff_api.post(
        "/api/model-channels/",
        {
            "name": "Local",
            "provider": "openai_compatible",
            "base_url": "http://127.0.0.1:11434/v1",
            "api_key": "sk-create-SECRET-1",
            "model": "qwen",
            "context_window": 32000,
            "is_auxiliary": True,
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert set(body) == CHANNEL_FIELDS
    assert body["has_api_key"] is True and body["is_auxiliary"] is True
    assert "sk-create-SECRET-1" not in response.content.decode()
    assert ModelChannel.objects.get(pk=body["id"]).api_key == "sk-create-SECRET-1"


def test_channel_without_a_key(staff_api) -> None:
    response = staff_api.post(
        "/api/model-channels/",
        {"name": "Keyless", "provider": "openai", "model": "gpt-4o-mini"},
        format="json",
    )
    assert response.status_code == 201 and response.json()["has_api_key"] is False


@pytest.mark.parametrize("patch", [{}, {"api_key": ""}, {"api_key": "   "}])
def test_blank_or_absent_key_on_patch_keeps_the_stored_key(staff_api, patch) -> None:
    channel = make_channel(api_key="sk-keep-me")
    response = staff_api.patch(
        f"/api/model-channels/{channel.pk}/", {"name": "Renamed", **patch}, format="json"
    )
    assert response.status_code == 200
    channel.refresh_from_db()
    assert channel.api_key == "sk-keep-me" and channel.name == "Renamed"
    assert response.json()["has_api_key"] is True


def test_a_new_key_on_patch_replaces_the_stored_key(staff_api) -> None:
    channel = make_channel(api_key="sk-old")
    response = staff_api.patch(
        f"/api/model-channels/{channel.pk}/", {"api_key": "sk-new"}, format="json"
    )
    assert response.status_code == 200
    channel.refresh_from_db()
    assert channel.api_key == "sk-new"


def test_openai_compatible_needs_a_base_url(staff_api) -> None:
    response = staff_api.post(
        "/api/model-channels/",
        {"name": "Local", "provider": "openai_compatible", "model": "qwen"},
        format="json",
    )
    assert response.status_code == 400
    assert response.json() == {
        "base_url": ["base_url is required for the openai_compatible provider."]
    }
    assert not ModelChannel.objects.exists()


def test_patch_cannot_leave_openai_compatible_without_a_base_url(staff_api) -> None:
    channel = make_channel(provider="openai", base_url="")
    response = staff_api.patch(
        f"/api/model-channels/{channel.pk}/", {"provider": "openai_compatible"}, format="json"
    )
    assert response.status_code == 400
    assert list(response.json()) == ["base_url"]
    compatible = make_channel()
    response = staff_api.patch(
        f"/api/model-channels/{compatible.pk}/", {"base_url": ""}, format="json"
    )
    assert response.status_code == 400 and list(response.json()) == ["base_url"]


def test_unknown_provider_is_a_field_error(staff_api) -> None:
    response = staff_api.post(
        "/api/model-channels/", {"name": "x", "provider": "acme", "model": "m"}, format="json"
    )
    assert response.status_code == 400
    assert response.json() == {"provider": ['"acme" is not a valid choice.']}


def test_unknown_channel_is_404(staff_api) -> None:
    assert staff_api.get("/api/model-channels/999999/").status_code == 404


def test_clear_api_key_removes_the_stored_key(staff_api) -> None:
    channel = make_channel(api_key="sk-drop-me")
    response = staff_api.patch(
        f"/api/model-channels/{channel.pk}/", {"clear_api_key": True}, format="json"
    )
    assert response.status_code == 200 and response.json()["has_api_key"] is False
    channel.refresh_from_db()
    assert channel.api_key == ""
