"""``PATCH`` / ``DELETE /api/sessions/<id>/`` (CONTRACT §4, issue 16 item 3): rename and
delete one's own chats — a foreign id is 404, a delete takes the messages and the workspace
along, and every socket of the owner hears of both."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from agents.accounts import user_group
from agents.models import ChatSession, Message
from agents.services import message_append
from agents.tools.workspace import session_workspace_root
from tests.factories import make_session

pytestmark = pytest.mark.django_db


def _listening(user) -> str:
    """A channel in the user's group, as each of their sockets is."""
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(user_group(user.pk), channel)
    return channel


def _heard(channel: str) -> dict:
    return async_to_sync(get_channel_layer().receive)(channel)


def test_rename(alice, alice_api, shared_agent, django_capture_on_commit_callbacks) -> None:
    session = make_session(owner=alice, agent=shared_agent, title="old")
    channel = _listening(alice)
    with django_capture_on_commit_callbacks(execute=True):
        response = alice_api.patch(
            f"/api/sessions/{session.pk}/", {"title": "  Release plan  "}, format="json"
        )
    assert response.status_code == 200
    assert response.json()["title"] == "Release plan" and response.json()["id"] == str(session.pk)
    session.refresh_from_db()
    assert session.title == "Release plan"
    assert _heard(channel) == {
        "type": "session.event",
        "event_type": "session_updated",
        "data": {"session_id": str(session.pk), "title": "Release plan"},
    }


@pytest.mark.parametrize(
    ("payload", "errors"),
    [
        ({}, {"non_field_errors": ["Give a title or a modelChannel."]}),
        ({"title": "   "}, {"title": ["This field may not be blank."]}),
        ({"title": "x" * 201}, {"title": ["Ensure this field has no more than 200 characters."]}),
    ],
)
def test_a_bad_title_is_400(alice, alice_api, shared_agent, payload, errors) -> None:
    session = make_session(owner=alice, agent=shared_agent, title="old")
    response = alice_api.patch(f"/api/sessions/{session.pk}/", payload, format="json")
    assert response.status_code == 400 and response.json() == errors
    session.refresh_from_db()
    assert session.title == "old"


def test_delete_takes_messages_and_workspace(
    alice, alice_api, shared_agent, django_capture_on_commit_callbacks
) -> None:
    session = make_session(owner=alice, agent=shared_agent, title="gone")
    message_append(session=session, role="user", content="hello")
    workspace = session_workspace_root(session.pk)
    workspace.mkdir(parents=True)
    (workspace / "notes.md").write_text("draft")
    keep = make_session(owner=alice, agent=shared_agent, title="kept")
    channel = _listening(alice)
    with django_capture_on_commit_callbacks(execute=True):
        response = alice_api.delete(f"/api/sessions/{session.pk}/")
    assert response.status_code == 204 and response.content == b""
    assert list(ChatSession.objects.filter(owner=alice)) == [keep]
    assert not Message.objects.filter(session_id=session.pk).exists()
    assert not workspace.exists()
    assert _heard(channel)["data"] == {"session_id": str(session.pk)}
    assert alice_api.get(f"/api/sessions/{session.pk}/").status_code == 404
    assert alice_api.delete(f"/api/sessions/{session.pk}/").status_code == 404


def test_someone_elses_chat_is_404_and_untouched(alice, bob_api, shared_agent) -> None:
    session = make_session(owner=alice, agent=shared_agent, title="mine")
    url = f"/api/sessions/{session.pk}/"
    assert bob_api.patch(url, {"title": "taken"}, format="json").status_code == 404
    assert bob_api.delete(url).status_code == 404
    session.refresh_from_db()
    assert session.title == "mine"


def test_anonymous_is_refused(anon, alice, shared_agent) -> None:
    session = make_session(owner=alice, agent=shared_agent, title="mine")
    assert anon.patch(f"/api/sessions/{session.pk}/", {"title": "x"}).status_code in {401, 403}
    assert anon.delete(f"/api/sessions/{session.pk}/").status_code in {401, 403}
    assert ChatSession.objects.filter(pk=session.pk, title="mine").exists()


def test_the_schema_documents_rename_and_delete(alice_api) -> None:
    schema = alice_api.get("/api/schema/", {"format": "json"}).json()
    detail = schema["paths"]["/api/sessions/{session_id}/"]
    assert {"get", "patch", "delete"} <= set(detail)
    assert "204" in detail["delete"]["responses"]
