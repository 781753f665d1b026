"""The model channel page (seed §8.6): write-only key, base URL rule, auxiliary flag."""

from __future__ import annotations

from typing import Any

import pytest

from agents.models import ModelChannel
from tests.ui.html import parse

pytestmark = pytest.mark.django_db

SECRET = "sk-live-THIS-MUST-NEVER-BE-RENDERED-123"


@pytest.fixture
def staff_client(client, staff):
    client.force_login(staff)
    return client


def _data(**overrides: Any) -> dict[str, str]:
    data = {
        "name": "Cloud",
        "provider": "openai",
        "base_url": "",
        "api_key": "",
        "model": "gpt-4o-mini",
        "context_window": "",
        "is_auxiliary": "",
        "enabled": "on",
    }
    data.update({k: str(v) for k, v in overrides.items()})
    return {k: v for k, v in data.items() if v != ""}


def test_create_stores_the_key_and_never_renders_it(staff_client) -> None:
    response = staff_client.post("/channels/new/", _data(api_key=SECRET, is_auxiliary="on"))
    channel = ModelChannel.objects.get(name="Cloud")
    assert response.status_code == 302 and response["Location"] == f"/channels/{channel.pk}/"
    assert channel.api_key == SECRET and channel.is_auxiliary and channel.enabled
    for url in [f"/channels/{channel.pk}/", "/channels/"]:
        html = staff_client.get(url).content.decode()
        assert SECRET not in html and SECRET[:12] not in html, url
        assert "已设置密钥" in html
    key_input = parse(staff_client.get(f"/channels/{channel.pk}/").content).by_id("id_api_key")
    assert key_input.get("type") == "password" and key_input.get("value") is None


def test_blank_key_keeps_the_stored_one(staff_client) -> None:
    staff_client.post("/channels/new/", _data(api_key=SECRET))
    channel = ModelChannel.objects.get(name="Cloud")
    response = staff_client.post(f"/channels/{channel.pk}/", _data(model="gpt-4o", api_key=""))
    assert response.status_code == 302
    channel.refresh_from_db()
    assert channel.api_key == SECRET and channel.model == "gpt-4o"
    staff_client.post(f"/channels/{channel.pk}/", _data(api_key="sk-new"))
    channel.refresh_from_db()
    assert channel.api_key == "sk-new"


def test_a_form_error_never_echoes_the_key(staff_client) -> None:
    response = staff_client.post("/channels/new/", _data(api_key=SECRET, model=""))
    assert response.status_code == 200
    assert SECRET not in response.content.decode()
    assert not ModelChannel.objects.exists()


def test_clearing_the_key(staff_client) -> None:
    staff_client.post(
        "/channels/new/",
        _data(provider="openai_compatible", base_url="http://127.0.0.1:11434/v1", api_key=SECRET),
    )
    channel = ModelChannel.objects.get()
    staff_client.post(
        f"/channels/{channel.pk}/",
        _data(
            provider="openai_compatible", base_url="http://127.0.0.1:11434/v1", clear_api_key="on"
        ),
    )
    channel.refresh_from_db()
    assert channel.api_key == ""


def test_base_url_is_required_for_openai_compatible(staff_client) -> None:
    response = staff_client.post(
        "/channels/new/", _data(provider="openai_compatible", model="qwen2.5")
    )
    assert response.status_code == 200
    doc = parse(response.content)
    field = doc.by_id("id_base_url").parent
    assert "has-error" in field.classes
    assert [e.text() for e in field.has_class("field-error")] == [
        "OpenAI 兼容渠道必须填写 Base URL，例如 Ollama 的 http://127.0.0.1:11434/v1。"
    ]
    assert not ModelChannel.objects.exists()
    ok = staff_client.post(
        "/channels/new/",
        _data(provider="openai_compatible", model="qwen2.5", base_url="http://127.0.0.1:11434/v1"),
    )
    assert ok.status_code == 302
    assert ModelChannel.objects.get().base_url == "http://127.0.0.1:11434/v1"


def test_cloud_providers_need_a_key(staff_client) -> None:
    response = staff_client.post(
        "/channels/new/", _data(provider="anthropic", model="claude-sonnet-4-5")
    )
    assert "该提供商需要 API Key。" in response.content.decode()
    assert not ModelChannel.objects.exists()


def test_auxiliary_checkbox_and_provider_select(staff_client, channel) -> None:
    doc = parse(staff_client.get(f"/channels/{channel.pk}/").content)
    checkbox = doc.by_id("id_is_auxiliary")
    assert checkbox.get("type") == "checkbox"
    providers = [o.get("value") for o in doc.by_id("id_provider").select("option")]
    assert providers == ["anthropic", "openai", "deepseek", "openai_compatible"]
    staff_client.post(
        f"/channels/{channel.pk}/",
        _data(
            provider="openai_compatible", base_url=channel.base_url, model="m", is_auxiliary="on"
        ),
    )
    channel.refresh_from_db()
    assert channel.is_auxiliary and channel.api_key == "sk-test-key"


def test_context_window_must_be_plausible(staff_client) -> None:
    response = staff_client.post("/channels/new/", _data(api_key="k", context_window="12"))
    assert response.status_code == 200 and not ModelChannel.objects.exists()
