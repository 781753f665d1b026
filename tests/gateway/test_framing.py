"""Outgoing frames fit the frame limit (``channels_app.framing``), and the whole of a large
message is one HTTP request away (issue 14, item 5). The live-server half is
``test_frame_sizes.py``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.core.checks import run_checks
from django.test import Client

from agents import services
from agents.events import CompactionFailed, Delta, ErrorEvent, MessageStored, TurnDone
from agents.message_format import message_to_json
from agents.models import Role
from channels_app.framing import PREVIEW_CHARS, frames, message_preview, outgoing_limit
from channels_app.html_encoder import render_event_html
from netaclaw.management.commands.run_local import daphne_command
from tests.factories import make_session, make_user

ROOT = Path(__file__).resolve().parents[2]
SID = "5b0c8f5e-9d7e-4a57-9b8e-3f1f1b7c2a10"
LIMIT = 64 * 1024


def _json(event) -> str:
    return json.dumps(event.to_json(), ensure_ascii=False)


def _html(event) -> str:
    return render_event_html(event, language="en")


def _sizes(texts: list[str]) -> list[int]:
    return [len(t.encode()) for t in texts]


@pytest.mark.parametrize("encode", [_json, _html], ids=["json", "html"])
@pytest.mark.parametrize("text", ["'" * 300_000, "\x01" * 100_000, "汉字😀" * 50_000])
def test_a_large_delta_goes_out_as_several_deltas_of_the_same_text(encode, text) -> None:
    out = frames(Delta(SID, text), encode, LIMIT)
    assert len(out) > 1 and max(_sizes(out)) <= LIMIT
    if encode is _json:
        assert "".join(json.loads(f)["text"] for f in out) == text


def test_small_events_go_out_unchanged() -> None:
    for event in (TurnDone(SID), Delta(SID, "hi"), ErrorEvent("bad", "bad_json")):
        assert frames(event, _json, LIMIT) == [_json(event)]


def test_a_large_message_goes_out_as_a_flagged_preview_with_the_url_of_the_whole() -> None:
    message = {
        "id": 42,
        "role": "assistant",
        "content": "a" * 500_000,
        "tool_calls": [{"id": "c1", "name": "write_file", "arguments": "{" + "b" * 900_000}],
        "metadata": {},
    }
    for encode in (_json, _html):
        (frame,) = frames(MessageStored(SID, message), encode, LIMIT)
        assert len(frame.encode()) <= LIMIT
    sent = json.loads(frames(MessageStored(SID, message), _json, LIMIT)[0])["message"]
    assert sent["truncated"] is True
    assert sent["full_url"] == f"/api/sessions/{SID}/messages/42/"
    assert len(sent["content"]) + len(sent["tool_calls"][0]["arguments"]) <= PREVIEW_CHARS
    assert sent["content"] == "a" * len(sent["content"])
    html = frames(MessageStored(SID, message), _html, LIMIT)[0]
    assert f"/chat/{SID}/messages/42/" in html and "data-truncated" in html


def test_a_message_under_the_limit_is_never_cut() -> None:
    message = {"id": 1, "role": "user", "content": "x" * 1000, "metadata": {}}
    assert message_preview(message, PREVIEW_CHARS, SID) is message


def test_a_long_error_text_is_cut() -> None:
    event = CompactionFailed(SID, "upstream said: " + "e" * 400_000, "upstream_error")
    (frame,) = frames(event, _json, LIMIT)
    body = json.loads(frame)
    assert body["reason"] == "upstream_error" and body["error"].startswith("upstream said: ")


def test_the_outgoing_limit_stays_under_what_clients_take() -> None:
    assert outgoing_limit(256 * 1024) == 256 * 1024
    assert outgoing_limit(4 * 1024 * 1024) == 512 * 1024


def test_make_run_passes_the_settings_daphne_limits() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert "manage.py run_local --host $(HOST) --port $(PORT)" in makefile
    line = " ".join(daphne_command("127.0.0.1", 8000))
    assert " -m netaclaw.serve " in line  # a frame over Daphne's limit closes with 1009
    numbers = dict(re.findall(r"--websocket-max-(message|frame)-size (\d+)", line))
    assert int(numbers["message"]) == settings.DAPHNE_WEBSOCKET_MAX_MESSAGE_SIZE
    assert int(numbers["frame"]) == settings.DAPHNE_WEBSOCKET_MAX_FRAME_SIZE
    assert settings.NETACLAW["MAX_FRAME_BYTES"] * 4 <= settings.DAPHNE_WEBSOCKET_MAX_MESSAGE_SIZE


def test_a_frame_limit_at_daphnes_limit_is_a_system_check_error(settings) -> None:
    settings.NETACLAW = {**settings.NETACLAW, "MAX_FRAME_BYTES": 8 * 1024 * 1024}
    assert "netaclaw.E002" in {m.id for m in run_checks()}
    settings.NETACLAW = {**settings.NETACLAW, "MAX_FRAME_BYTES": 256 * 1024}
    assert "netaclaw.E002" not in {m.id for m in run_checks()}


@pytest.mark.django_db
def test_the_page_loads_the_whole_message_for_its_owner_only() -> None:
    owner = make_user()
    session = make_session(owner=owner)
    big = services.message_append(session=session, role=Role.USER, content="'" * 200_000)
    url = f"/chat/{session.pk}/messages/{big.pk}/"
    client = Client()
    client.force_login(owner)
    response = client.get(url, headers={"HX-Request": "true"})
    assert response.status_code == 200
    page = response.content.decode()
    assert f'id="msg-{big.pk}"' in page and "&#x27;" * 200_000 in page
    assert "data-truncated" not in page
    stranger = Client()
    stranger.force_login(make_user())
    assert stranger.get(url).status_code == 404
    assert client.get(f"/chat/{session.pk}/messages/{big.pk + 99}/").status_code == 404


@pytest.mark.django_db
def test_the_preview_names_the_page_url_of_the_stored_message() -> None:
    session = make_session()
    big = services.message_append(session=session, role=Role.TOOL, content="z" * 100_000)
    event = MessageStored(str(session.pk), message_to_json(big))
    (frame,) = frames(event, _html, LIMIT)
    assert f"/chat/{session.pk}/messages/{big.pk}/" in frame
