from __future__ import annotations

import pytest
from django.contrib import admin
from django.test import RequestFactory
from django.urls import reverse

from agents.models import ModelChannel
from agents.services import message_append
from tests.factories import make_agent, make_channel, make_session, make_user

pytestmark = pytest.mark.django_db

SECRET = "sk-live-DO-NOT-LEAK-4242"


@pytest.fixture
def staff_client(client):
    user = make_user("boss", is_staff=True, is_superuser=True)
    client.force_login(user)
    client.user = user
    return client


@pytest.fixture
def populated():
    channel = make_channel(api_key=SECRET, is_auxiliary=True)
    agent = make_agent(model_channel=channel, auxiliary_model_channel=channel)
    session = make_session(agent=agent, title="long chat")
    message_append(session=session, role="user", content="hello there")
    message_append(session=session, role="assistant", content="hi")
    return channel, agent, session


def _admin_urls(obj_by_model, user):
    request = RequestFactory().get("/admin/")
    request.user = user
    for model, model_admin in admin.site._registry.items():
        info = (model._meta.app_label, model._meta.model_name)
        yield reverse("admin:{}_{}_changelist".format(*info))
        if model_admin.has_add_permission(request):  # axes' records are never added by hand
            yield reverse("admin:{}_{}_add".format(*info))
        obj = obj_by_model.get(model) or model._default_manager.first()
        if obj is not None:
            yield reverse("admin:{}_{}_change".format(*info), args=[obj.pk])


def test_every_admin_page_renders_and_never_shows_the_key(staff_client, populated) -> None:
    urls = list(_admin_urls({}, staff_client.user))
    assert len(urls) >= 15
    for url in urls:
        response = staff_client.get(url)
        assert response.status_code == 200, url
        assert SECRET not in response.content.decode(), url


def test_session_admin_page_shows_messages_with_compaction_state(staff_client, populated) -> None:
    _, _, session = populated
    response = staff_client.get(reverse("admin:agents_chatsession_change", args=[session.pk]))
    html = response.content.decode()
    assert "hello there" in html
    assert "compacted" in html.lower()


def test_saving_a_channel_without_typing_the_key_keeps_it(staff_client, populated) -> None:
    channel, _, _ = populated
    url = reverse("admin:agents_modelchannel_change", args=[channel.pk])
    data = {
        "name": "renamed",
        "provider": channel.provider,
        "base_url": channel.base_url,
        "api_key": "",
        "model": channel.model,
        "context_window": "8000",
        "is_auxiliary": "on",
        "enabled": "on",
    }
    response = staff_client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:2000]
    channel.refresh_from_db()
    assert (channel.name, channel.api_key) == ("renamed", SECRET)

    data["clear_api_key"] = "on"
    staff_client.post(url, data)
    assert ModelChannel.objects.get(pk=channel.pk).api_key == ""


def test_admin_requires_staff(client) -> None:
    client.force_login(make_user())
    response = client.get(reverse("admin:agents_modelchannel_changelist"))
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]
