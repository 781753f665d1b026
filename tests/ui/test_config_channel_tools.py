"""Issue 16 item 5: a channel page shows the context window in use and where it came from,
and tests the connection before the first chat (the server's model list, through the SDK,
against the wire-level scripted server)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from agents.channel_check import channel_test, window_in_use
from agents.meter import context_window
from agents.models import ModelChannel
from scripted_llm import Fail, Hang, NonJSON
from tests.factories import make_channel
from tests.ui.html import parse

pytestmark = pytest.mark.django_db

SECRET = "sk-live-CHANNEL-TEST-SECRET-42"


@pytest.fixture
def staff_client(client, staff):
    client.force_login(staff)
    return client


def _server_channel(server: Any, provider: str = "openai_compatible", **fields: Any):
    values: dict[str, Any] = {
        "name": "Scripted",
        "provider": provider,
        "base_url": server.base_url_for(provider),
        "api_key": SECRET,
        "model": "qwen2.5:7b",
        "context_window": None,
    }
    values.update(fields)
    return make_channel(**values)


def _result(response) -> Any:
    return parse(response.content).by_id("channel-test-result")


# --- the window in use ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "window", "tokens", "source"),
    [
        ("my-own-model", 50_000, 50_000, "channel"),
        ("gpt-4o", None, 128_000, "known_model"),
        ("ollama/llama3.1:8b", None, 131_072, "known_model"),
        ("my-own-model", None, 32_768, "default"),
    ],
)
def test_window_in_use_is_what_the_meter_counts(model, window, tokens, source) -> None:
    channel = make_channel(model=model, context_window=window)
    assert window_in_use(channel).tokens == tokens == context_window(channel)
    assert window_in_use(channel).source == source


def test_channel_page_and_list_say_where_the_window_comes_from(staff_client) -> None:
    known = make_channel(name="Known", model="gpt-4o", context_window=None)
    unknown = make_channel(name="Unknown", model="my-own-model", context_window=None)
    set_ = make_channel(name="Set", model="my-own-model", context_window=50_000)
    expected = {
        known: ("known_model", "当前使用：128,000 tokens，即「gpt-4o」的已知窗口。"),
        unknown: ("default", "当前使用：32,768 tokens，这是兜底值：「my-own-model」不是已知模型。"),
        set_: ("channel", "当前使用：50,000 tokens，即本渠道设置的值。"),
    }
    for channel, (source, words) in expected.items():
        page = parse(staff_client.get(f"/channels/{channel.pk}/").content)
        [line] = page.find_all(lambda n: "data-window-source" in n.attrs)
        assert line.get("data-window-source") == source
        assert words in " ".join(line.text().split())
    listing = parse(staff_client.get("/channels/").content)
    cells = {
        row.get("data-channel"): row.find_all(lambda n: "data-window-source" in n.attrs)[0]
        for row in listing.select("tr")
        if row.get("data-channel")
    }
    assert cells[str(unknown.pk)].get("data-window-source") == "default"
    assert "兜底值" in cells[str(unknown.pk)].text()
    assert "已知模型" in cells[str(known.pk)].text()


def test_saving_an_unknown_model_without_a_window_warns(staff_client) -> None:
    response = staff_client.post(
        "/channels/new/",
        {
            "name": "Mystery",
            "provider": "openai_compatible",
            "base_url": "http://127.0.0.1:11434/v1",
            "model": "my-own-model",
            "enabled": "on",
        },
        follow=True,
    )
    assert "模型「my-own-model」不在已知模型表中，其上下文窗口按 32,768 tokens 计算" in (
        response.content.decode()
    )
    channel = ModelChannel.objects.get()
    response = staff_client.post(
        f"/channels/{channel.pk}/",
        {
            "name": "Mystery",
            "provider": "openai_compatible",
            "base_url": "http://127.0.0.1:11434/v1",
            "model": "my-own-model",
            "context_window": "65536",
            "enabled": "on",
        },
        follow=True,
    )
    assert "不在已知模型表中" not in response.content.decode()


# --- test connection ------------------------------------------------------------------


def test_test_connection_lists_the_servers_models(staff_client, llm_server) -> None:
    llm_server.models = ("llama3.1:8b", "qwen2.5:7b")
    channel = _server_channel(llm_server)
    page = parse(staff_client.get(f"/channels/{channel.pk}/").content)
    [form] = [f for f in page.select("form") if f.get("hx-post") == f"/channels/{channel.pk}/test/"]
    assert form.get("method") == "post" and form.get("action") == f"/channels/{channel.pk}/test/"
    assert form.find_all(lambda n: "data-channel-test" in n.attrs)[0].text() == "测试连接"

    response = staff_client.post(f"/channels/{channel.pk}/test/", HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    result = _result(response)
    assert result.get("data-test-outcome") == "ok"
    text = " ".join(result.text().split())
    assert "连接正常 服务器列出了 2 个模型。 其中包括「qwen2.5:7b」。" in text
    assert [li.text() for li in result.select("li")] == ["llama3.1:8b", "qwen2.5:7b"]
    [request] = llm_server.requests
    assert (request.path, request.headers["authorization"]) == ("/v1/models", f"Bearer {SECRET}")
    assert SECRET not in response.content.decode()


def test_a_model_the_server_does_not_list_is_pointed_out(staff_client, llm_server) -> None:
    llm_server.models = ("llama3.1:8b",)
    channel = _server_channel(llm_server, model="qwen2.5:7b")
    response = staff_client.post(f"/channels/{channel.pk}/test/", HTTP_HX_REQUEST="true")
    assert "其中没有「qwen2.5:7b」：请检查模型名称。" in _result(response).text()


def test_anthropic_channels_are_tested_on_their_own_wire(staff_client, llm_server) -> None:
    llm_server.models = ("claude-sonnet-4-5",)
    channel = _server_channel(llm_server, provider="anthropic", model="claude-sonnet-4-5")
    response = staff_client.post(f"/channels/{channel.pk}/test/", HTTP_HX_REQUEST="true")
    assert _result(response).get("data-test-outcome") == "ok"
    [request] = llm_server.requests
    assert request.wire == "anthropic" and request.headers["x-api-key"] == SECRET


def test_a_refused_key_is_said_in_plain_words(staff_client, llm_server) -> None:
    llm_server.enqueue(
        Fail(401, {"error": {"message": f"Incorrect API key provided: {SECRET}", "code": None}})
    )
    channel = _server_channel(llm_server)
    response = staff_client.post(f"/channels/{channel.pk}/test/", HTTP_HX_REQUEST="true")
    result = _result(response)
    assert result.get("data-test-outcome") == "failed"
    assert " ".join(result.text().split()) == (
        "失败 模型服务商拒绝了 API Key（HTTP 401）：Incorrect API key provided: ***"
    )
    assert SECRET not in response.content.decode()


def test_an_unreachable_server_names_no_exception_class(staff_client, llm_server) -> None:
    channel = _server_channel(llm_server, base_url="http://127.0.0.1:9/v1")
    response = staff_client.post(f"/channels/{channel.pk}/test/", HTTP_HX_REQUEST="true")
    text = " ".join(_result(response).text().split())
    assert text == "失败 无法连接模型服务商"
    assert "Error" not in response.content.decode().split("channel-test-result")[1][:400]


def test_a_missing_model_list_says_check_the_base_url(staff_client, llm_server) -> None:
    channel = _server_channel(llm_server, base_url=llm_server.url)  # without /v1
    response = staff_client.post(f"/channels/{channel.pk}/test/", HTTP_HX_REQUEST="true")
    result = _result(response)
    assert result.get("data-test-outcome") == "no_listing"
    assert "HTTP 404" in result.text() and "/v1" in result.text()


def test_the_test_times_out_quickly(llm_server) -> None:
    llm_server.enqueue(Hang(5))
    channel = _server_channel(llm_server)
    result = channel_test(channel=channel, timeout_seconds=0.3)
    assert result.outcome == "failed" and result.failure is not None
    assert result.failure.reason == "timeout"
    llm_server.enqueue(NonJSON())
    result = channel_test(channel=channel, timeout_seconds=2)
    assert result.outcome == "failed" and result.failure.reason == "invalid_response"


def test_without_htmx_the_result_is_on_the_whole_page(staff_client, llm_server) -> None:
    channel = _server_channel(llm_server)
    response = staff_client.post(f"/channels/{channel.pk}/test/")
    doc = parse(response.content)
    assert doc.select("h1")[0].text() == "编辑模型渠道「Scripted」"
    assert _result(response).get("data-test-outcome") == "ok"


def test_in_english(staff_client, llm_server) -> None:
    staff_client.cookies["django_language"] = "en"
    llm_server.enqueue(Fail(429, should_retry=False))
    channel = _server_channel(llm_server)
    response = staff_client.post(f"/channels/{channel.pk}/test/", HTTP_HX_REQUEST="true")
    assert " ".join(_result(response).text().split()) == (
        "Failed The model provider is rate limiting requests (HTTP 429): Scripted failure 429"
    )
    response = staff_client.post(f"/channels/{channel.pk}/test/", HTTP_HX_REQUEST="true")
    assert " ".join(_result(response).text().split()).startswith(
        "Connection works The server lists 1 model."
    )


def test_only_staff_test_and_csrf_stays_on(client, user, staff, llm_server) -> None:
    channel = _server_channel(llm_server)
    client.force_login(user)
    assert client.post(f"/channels/{channel.pk}/test/").status_code == 403
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(staff)
    assert strict.post(f"/channels/{channel.pk}/test/").status_code == 403
    staff_page = Client()
    staff_page.force_login(staff)
    assert staff_page.get(f"/channels/{channel.pk}/test/").status_code == 405
    assert staff_page.post("/channels/999999/test/").status_code == 404
    assert llm_server.requests == []
