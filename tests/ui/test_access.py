"""Every page needs a login; someone else's chat is a 404, channels are staff-only."""

from __future__ import annotations

import uuid

import pytest

from agents.models import ChatSession
from agents.services import compaction_apply, message_append
from tests.factories import make_agent, make_session

pytestmark = pytest.mark.django_db


def _summary(session: ChatSession) -> int:
    messages = [message_append(session=session, role="user", content=f"m{i}") for i in range(4)]
    applied = compaction_apply(
        session=session,
        compacted_ids=[m.pk for m in messages[:2]],
        pruned_ids=[],
        summary_content="## 目标\nsecret plan",
        pruned_token_estimate=0,
        event_content="done",
        event_payload={"status": "done", "removedCount": 2},
    )
    assert applied.summary_message is not None
    return applied.summary_message.pk


def _page_urls(session: ChatSession, agent_id: int, channel_id: int) -> list[str]:
    sid = session.pk
    return [
        "/chat/",
        f"/chat/{sid}/",
        f"/chat/{sid}/?view=full",
        f"/chat/{sid}/messages/?before=1",
        f"/chat/{sid}/summary/1/",
        "/agents/",
        f"/agents/{agent_id}/",
        "/channels/",
        "/channels/new/",
        f"/channels/{channel_id}/",
    ]


def test_every_page_requires_login(client, session, agent, channel) -> None:
    for url in _page_urls(session, agent.pk, channel.pk):
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith("/accounts/login/?next="), url
    response = client.post("/chat/new/", {"agent": agent.pk})
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert not ChatSession.objects.exclude(pk=session.pk).exists()


def test_another_users_session_is_404_everywhere(client, other_user, session) -> None:
    summary_id = _summary(session)
    first_id = session.messages.order_by("id").first().pk
    client.force_login(other_user)
    sid = session.pk
    for url in [
        f"/chat/{sid}/",
        f"/chat/{sid}/?view=full",
        f"/chat/{sid}/summary/{summary_id}/",
        f"/chat/{sid}/messages/?before={first_id}",
    ]:
        assert client.get(url).status_code == 404, url
        assert client.get(url, headers={"HX-Request": "true"}).status_code == 404, url
    assert client.post("/chat/new/", {"from_session": str(sid)}).status_code == 404
    assert b"secret plan" not in client.get(f"/chat/{sid}/summary/{summary_id}/").content


def test_unknown_session_and_malformed_ids_are_404(zh_client, session) -> None:
    assert zh_client.get(f"/chat/{uuid.uuid4()}/").status_code == 404
    assert zh_client.get("/chat/not-a-uuid/").status_code == 404
    assert zh_client.get(f"/chat/{session.pk}/messages/?before=abc").status_code == 404
    assert zh_client.get(f"/chat/{session.pk}/messages/?before=999999").status_code == 404


def test_summary_of_another_session_is_404(zh_client, user, session) -> None:
    mine_too = make_session(owner=user, agent=session.agent)
    summary_id = _summary(mine_too)
    assert zh_client.get(f"/chat/{session.pk}/summary/{summary_id}/").status_code == 404
    assert zh_client.get(f"/chat/{mine_too.pk}/summary/{summary_id}/").status_code == 200


def test_a_message_that_is_no_summary_is_404(zh_client, session) -> None:
    plain = message_append(session=session, role="user", content="hello")
    assert zh_client.get(f"/chat/{session.pk}/summary/{plain.pk}/").status_code == 404


def test_channel_pages_are_staff_only(zh_client, channel) -> None:
    for url in ["/channels/", "/channels/new/", f"/channels/{channel.pk}/"]:
        assert zh_client.get(url).status_code == 403, url
    assert zh_client.post("/channels/new/", {"name": "x"}).status_code == 403


def test_agent_edit_needs_owner_or_staff(client, user, other_user, staff, agent) -> None:
    shared = agent  # no owner: shared with everyone, changed by staff only
    own = make_agent(name="Mine", owner=user)
    foreign = make_agent(name="Theirs", owner=other_user)
    client.force_login(user)
    assert client.get(f"/agents/{shared.pk}/").status_code == 403
    assert client.post(f"/agents/{shared.pk}/", {"name": "hijack"}).status_code == 403
    assert client.get(f"/agents/{own.pk}/").status_code == 200
    assert client.get(f"/agents/{foreign.pk}/").status_code == 404
    client.force_login(staff)
    assert client.get(f"/agents/{shared.pk}/").status_code == 200


def test_methods_are_restricted(zh_client, session) -> None:
    assert zh_client.post(f"/chat/{session.pk}/").status_code == 405
    assert zh_client.put("/chat/new/").status_code == 405  # GET: the page of a new chat
    assert zh_client.post(f"/chat/{session.pk}/messages/?before=1").status_code == 405
