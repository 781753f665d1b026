"""Attachments (issue 26 item 4): files go into the chat's workspace within its limits, the
message records them, the agent is told where they are, and an image reaches a model that
takes images as an image — only such a model."""

from __future__ import annotations

import base64
import json

import pytest
from asgiref.sync import async_to_sync
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings

from agents.attachments import (
    AttachmentRefused,
    attachment_store,
    attachments_store,
    safe_name,
)
from agents.models import Message
from agents.tools.workspace import session_workspace_root
from llm.vision import takes_images
from scripted_llm import Reply
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.support.api_clients import token_client
from tests.support.sockets import connect, receive, send, token_for

pytestmark = pytest.mark.django_db(transaction=True)

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


@pytest.fixture
def workspaces(tmp_path, settings):
    settings.NETACLAW = {**settings.NETACLAW, "WORKSPACE_ROOT": tmp_path / "workspaces"}
    return tmp_path / "workspaces"


def _chat(server, *, provider="openai_compatible", model="scripted-model"):
    user = make_user()
    base = server.anthropic_base_url if provider == "anthropic" else server.openai_base_url
    channel = make_channel(provider=provider, base_url=base, model=model, context_window=200_000)
    return make_session(owner=user, agent=make_agent(model_channel=channel))


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("report.pdf", "report.pdf"),
        ("../../etc/passwd", "passwd"),
        ("C:\\Users\\me\\plan.txt", "plan.txt"),
        ("a\x00b<c>.md", "a_b_c_.md"),
        ("...", "file"),
        ("名字 很长" * 40 + ".txt", ("名字 很长" * 40)[:116] + ".txt"),
    ],
)
def test_a_name_is_a_name_only(given, kept) -> None:
    assert safe_name(given) == kept


def test_an_upload_lands_in_the_workspace_within_its_limits(workspaces) -> None:
    session = make_session()
    first = attachment_store(session=session, name="notes.md", data=b"# plan")
    again = attachment_store(session=session, name="notes.md", data=b"# plan 2")
    assert (first.path, again.path) == ("attachments/notes.md", "attachments/notes-2.md")
    root = session_workspace_root(session.pk)
    assert (root / "attachments/notes-2.md").read_bytes() == b"# plan 2"
    assert first.type == "text/markdown" and first.size == 6

    with override_settings(NETACLAW={**_netaclaw(workspaces), "ATTACHMENT_MAX_BYTES": 10}):
        with pytest.raises(AttachmentRefused) as refused:
            attachment_store(session=session, name="big.bin", data=b"x" * 11)
        assert refused.value.reason == "attachment_too_large"
    with override_settings(NETACLAW={**_netaclaw(workspaces), "WORKSPACE_QUOTA_BYTES": 9_000}):
        # all or none: the second file is over the quota, so the first goes too
        with pytest.raises(AttachmentRefused) as refused:
            attachments_store(
                session=session, files=[("a.txt", b"a" * 100), ("b.txt", b"b" * 5000)]
            )
        assert refused.value.reason == "workspace_full"
        assert "quota" in refused.value.detail
    assert not (root / "attachments/a.txt").exists() and not (root / "attachments/b.txt").exists()


def _netaclaw(workspaces):
    return {**settings.NETACLAW, "WORKSPACE_ROOT": workspaces}


def test_the_rest_upload_answers_the_paths_or_why_not(workspaces) -> None:
    session = make_session()
    client = token_client(session.owner)
    url = f"/api/sessions/{session.pk}/attachments/"
    files = [SimpleUploadedFile("a.csv", b"x,y\n1,2\n"), SimpleUploadedFile("b.png", PNG)]
    made = client.post(url, {"file": files}, format="multipart")
    assert made.status_code == 201, made.content
    assert made.json() == {
        "attachments": [
            {"name": "a.csv", "path": "attachments/a.csv", "size": 8, "type": "text/csv"},
            {"name": "b.png", "path": "attachments/b.png", "size": len(PNG), "type": "image/png"},
        ]
    }
    assert client.post(url, {}, format="multipart").json()["reason"] == "no_file"
    with override_settings(NETACLAW={**_netaclaw(workspaces), "ATTACHMENT_MAX_BYTES": 4}):
        big = client.post(url, {"file": SimpleUploadedFile("c.txt", b"12345")}, format="multipart")
        assert (big.status_code, big.json()["reason"]) == (413, "attachment_too_large")
    stranger = token_client(make_user())
    other = stranger.post(url, {"file": SimpleUploadedFile("d.txt", b"1")}, format="multipart")
    assert other.status_code == 404
    assert not (session_workspace_root(session.pk) / "attachments/d.txt").exists()


def _send(session, frame):
    async def run():
        ws, _ = await connect(token=await token_for(session.owner), origin=None)
        await send(ws, {"type": "chat", "sessionId": str(session.pk), **frame})
        events = []
        while not events or events[-1]["type"] not in {"turn_done", "error"}:
            events.append(await receive(ws, 20))
        await ws.disconnect()
        return events

    return async_to_sync(run)()


def test_the_message_records_its_files_and_the_agent_is_told(llm_server, workspaces) -> None:
    session = _chat(llm_server)
    stored = attachment_store(session=session, name="data.csv", data=b"a,b\n1,2\n")
    image = attachment_store(session=session, name="chart.png", data=PNG)
    llm_server.enqueue(Reply(text="看到了 data.csv。"))
    events = _send(session, {"content": "看看这两个文件", "attachments": [stored.path, image.path]})
    message = next(e["message"] for e in events if e["type"] == "message")
    assert [a["path"] for a in message["metadata"]["attachments"]] == [
        "attachments/data.csv",
        "attachments/chart.png",
    ]
    user = llm_server.requests[-1].body["messages"][-1]
    # a model that does not take images: the image stays a file, named like the others
    assert isinstance(user["content"], str)
    assert "看看这两个文件" in user["content"]
    assert "attachments/data.csv (text/csv, 8 bytes)" in user["content"]
    assert "attachments/chart.png (image/png" in user["content"]
    row = Message.objects.get(pk=message["id"])
    assert row.content == "看看这两个文件"  # the note is the model's, not the bubble's
    assert row.token_estimate > 10


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_an_image_reaches_a_model_that_takes_images(llm_server, workspaces, provider) -> None:
    model = "gpt-4o" if provider == "openai" else "claude-sonnet-4-5"
    session = _chat(llm_server, provider=provider, model=model)
    image = attachment_store(session=session, name="chart.png", data=PNG)
    llm_server.enqueue(Reply(text="一张 1×1 的图。"))
    events = _send(session, {"content": "这是什么图？", "attachments": [image.path]})
    assert events[-1]["type"] == "turn_done"
    body = llm_server.requests[-1].body
    wire = json.dumps(body)
    encoded = base64.b64encode(PNG).decode()
    if provider == "openai":
        parts = body["messages"][-1]["content"]
        assert parts[0]["type"] == "text" and "这是什么图" in parts[0]["text"]
        assert parts[1]["image_url"]["url"] == f"data:image/png;base64,{encoded}"
    else:
        blocks = body["messages"][-1]["content"]
        assert blocks[0] == {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": encoded},
        }
    assert "attachments/chart.png" in wire  # and told where the file is


def test_a_file_not_uploaded_is_refused_and_nothing_is_stored(llm_server, workspaces) -> None:
    session = _chat(llm_server)
    root = session_workspace_root(session.pk)
    root.mkdir(parents=True)
    (root / "notes.md").write_text("not an upload")
    for path in ["attachments/never.txt", "../other/attachments/x.txt", "notes.md"]:
        events = _send(session, {"content": "看", "attachments": [path]})
        assert events[-1]["reason"] == "unknown_attachment", events
    assert not Message.objects.filter(session=session).exists()
    assert llm_server.requests == []


@pytest.mark.parametrize(
    ("provider", "model", "takes"),
    [
        ("anthropic", "claude-sonnet-4-5", True),
        ("anthropic", "claude-3-haiku-20240307", True),
        ("anthropic", "claude-2.1", False),
        ("openai", "gpt-4o-mini", True),
        ("openai", "gpt-4.1", True),
        ("openai", "o3", True),
        ("openai", "gpt-3.5-turbo", False),
        ("deepseek", "deepseek-chat", False),
        ("openai_compatible", "llava:13b", True),
        ("openai_compatible", "qwen2.5-vl-7b-instruct", True),
        ("openai_compatible", "llama3.1:8b", False),
    ],
)
def test_which_models_take_images(provider, model, takes) -> None:
    assert takes_images(provider, model) is takes
