"""A stored API key is never led to another host (issue 15, item 2).

Staff who are not superusers may edit channels; changing a channel's provider or base URL
must take a newly entered key (or remove the stored one) — through the API, the channel
page and the admin alike — so the next model call never sends the old key elsewhere."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from agents.models import ModelChannel
from tests.factories import make_channel, make_user

pytestmark = pytest.mark.django_db

SECRET = "sk-live-KEEP-ME-HOME-7731"
HOME = "https://api.openai.com/v1"
ELSEWHERE = "https://collector.attacker.example/v1"


@pytest.fixture
def channel():
    return make_channel(provider="openai", base_url=HOME, api_key=SECRET, model="gpt-4o")


def _unchanged(channel: ModelChannel) -> None:
    fresh = ModelChannel.objects.get(pk=channel.pk)
    assert (fresh.provider, fresh.base_url, fresh.api_key) == ("openai", HOME, SECRET)


@pytest.mark.parametrize(
    "change",
    [
        {"base_url": ELSEWHERE},
        {"provider": "openai_compatible", "base_url": ELSEWHERE},
        {"provider": "deepseek"},
        {"base_url": ELSEWHERE, "api_key": ""},
    ],
    ids=["base-url", "provider-and-url", "provider", "blank-key"],
)
def test_the_api_refuses_to_move_a_stored_key(staff_api, channel, change) -> None:
    response = staff_api.patch(f"/api/model-channels/{channel.pk}/", change, format="json")
    assert response.status_code == 400, response.content
    message = response.json()["api_key"][0]
    assert "enter the API key again" in message
    assert SECRET not in response.content.decode()
    _unchanged(channel)


def test_the_api_moves_a_channel_with_a_new_key_or_without_any(staff_api, channel) -> None:
    url = f"/api/model-channels/{channel.pk}/"
    response = staff_api.patch(url, {"base_url": ELSEWHERE, "api_key": "sk-new"}, format="json")
    assert response.status_code == 200, response.content
    channel.refresh_from_db()
    assert (channel.base_url, channel.api_key) == (ELSEWHERE, "sk-new")

    channel = make_channel(provider="openai", base_url=HOME, api_key=SECRET)
    url = f"/api/model-channels/{channel.pk}/"
    change = {"provider": "openai_compatible", "base_url": ELSEWHERE, "clear_api_key": True}
    response = staff_api.patch(url, change, format="json")
    assert response.status_code == 200, response.content
    channel.refresh_from_db()
    assert (channel.base_url, channel.api_key) == (ELSEWHERE, "")


def test_other_changes_and_the_same_address_keep_the_key(staff_api, channel) -> None:
    url = f"/api/model-channels/{channel.pk}/"
    change = {"name": "renamed", "model": "gpt-4.1", "base_url": HOME, "provider": "openai"}
    response = staff_api.patch(url, change, format="json")
    assert response.status_code == 200, response.content
    channel.refresh_from_db()
    assert (channel.name, channel.api_key) == ("renamed", SECRET)


def _form_data(channel: ModelChannel, **changes: str) -> dict[str, str]:
    data = {
        "name": channel.name,
        "provider": channel.provider,
        "base_url": channel.base_url,
        "api_key": "",
        "model": channel.model,
        "context_window": str(channel.context_window or ""),
        "enabled": "on",
    }
    data.update(changes)
    return data


def test_the_channel_page_refuses_to_move_a_stored_key(client, channel) -> None:
    client.force_login(make_user("staffer", is_staff=True))
    url = reverse("config:channel_edit", args=[channel.pk])
    response = client.post(url, _form_data(channel, base_url=ELSEWHERE), HTTP_ACCEPT_LANGUAGE="en")
    assert response.status_code == 200
    html = response.content.decode()
    assert "enter the API key again" in html and SECRET not in html
    _unchanged(channel)
    response = client.post(url, _form_data(channel, base_url=ELSEWHERE, api_key="sk-typed"))
    assert response.status_code == 302
    channel.refresh_from_db()
    assert (channel.base_url, channel.api_key) == (ELSEWHERE, "sk-typed")


def test_the_admin_refuses_to_move_a_stored_key(client, channel) -> None:
    staffer = make_user("admin-staffer", is_staff=True)
    staffer.user_permissions.add(
        *Permission.objects.filter(codename__in=["change_modelchannel", "view_modelchannel"])
    )
    client.force_login(staffer)
    url = reverse("admin:agents_modelchannel_change", args=[channel.pk])
    response = client.post(url, _form_data(channel, base_url=ELSEWHERE), HTTP_ACCEPT_LANGUAGE="en")
    assert response.status_code == 200
    assert "enter the API key again" in response.content.decode()
    _unchanged(channel)
