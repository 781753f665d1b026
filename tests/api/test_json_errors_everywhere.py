"""Every error under ``/api/`` is JSON (issue 27 item 10): an exception no view expected, an
unknown address, and Test connection against a server whose model list is ``[]`` or
``null`` (which crashed inside the SDK) answered with Django's HTML 500 or 404 page."""

from __future__ import annotations

import pytest

from agents import channel_check
from scripted_llm import NonJSON
from tests.factories import make_channel, make_user
from tests.support.api_clients import client_for, token_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_api():
    api = token_client(make_user("root", is_staff=True))
    api.raise_request_exception = False  # as a real client sees it
    return api


@pytest.mark.parametrize("provider", ["openai_compatible", "anthropic"])
@pytest.mark.parametrize("listing", ["[]", "null", '"models"'])
def test_test_connection_reports_an_unreadable_model_list(
    staff_api, llm_server, provider, listing
) -> None:
    channel = make_channel(
        provider=provider, base_url=llm_server.base_url_for(provider), api_key="k", model="m"
    )
    llm_server.enqueue(NonJSON(body=listing))
    response = staff_api.post(f"/api/model-channels/{channel.pk}/test/")
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    body = response.json()
    assert (body["outcome"], body["reason"]) == ("failed", "invalid_response")
    assert body["error"] == "The model provider sent a response that could not be read"


@pytest.mark.parametrize("debug", [False, True])
def test_an_unexpected_exception_is_a_json_500(staff_api, monkeypatch, settings, debug) -> None:
    settings.DEBUG = debug

    def broken(**kwargs):
        raise RuntimeError("a bug nobody expected")

    monkeypatch.setattr("web.api.channel_test", broken)
    assert channel_check.channel_test is not broken  # only the view's reference
    channel = make_channel()
    response = staff_api.post(f"/api/model-channels/{channel.pk}/test/")
    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "detail": "The server could not answer this request; try again later.",
        "reason": "server_error",
    }
    assert b"RuntimeError" not in response.content and b"nobody" not in response.content


@pytest.mark.parametrize("debug", [False, True])
def test_an_unknown_api_address_is_a_json_404(settings, debug) -> None:
    settings.DEBUG = debug
    api = token_client(make_user("alice"))
    response = api.get("/api/no-such-thing/")
    assert (response.status_code, response["Content-Type"]) == (404, "application/json")
    assert response.json() == {"detail": "Not found."}


def test_pages_keep_their_html_errors_and_drf_its_browsable_ones(client) -> None:
    client.force_login(make_user("bob"))
    page = client.get("/chat/no-such-chat/")
    assert page.status_code == 404 and page["Content-Type"].startswith("text/html")
    browsable = client_for().get("/api/sessions/", HTTP_ACCEPT="text/html")
    assert browsable.status_code in (401, 403)
    assert browsable["Content-Type"].startswith("text/html")  # DRF's own page, as before
