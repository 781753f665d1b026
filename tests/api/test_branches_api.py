"""Regenerate, edit and the version switch over REST (issue 26 item 1)."""

from __future__ import annotations

import time

import pytest

from agents.selectors import llm_history_load
from agents.services import messages_bulk_append
from scripted_llm import Reply
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.support.api_clients import token_client

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def chat(llm_server):
    user = make_user()
    channel = make_channel(base_url=llm_server.openai_base_url, context_window=200_000)
    session = make_session(owner=user, agent=make_agent(model_channel=channel))
    stored = messages_bulk_append(
        session=session,
        rows=[
            {"role": "user", "content": "question"},
            {"role": "assistant", "content": "answer"},
        ],
    )
    return session, [m.pk for m in stored], token_client(user)


def _history(session) -> list[str]:
    return [m.content for m in llm_history_load(session=session)]


def _wait_for(session, count: int, seconds: float = 15.0) -> list[str]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = _history(session)
        if len(found) >= count:
            return found
        time.sleep(0.05)
    return _history(session)


def test_regenerate_edit_and_select_over_rest(llm_server, chat) -> None:
    session, (question, answer), client = chat
    base = f"/api/sessions/{session.pk}"
    llm_server.enqueue(Reply(text="another answer"), Reply(text="answer to the edit"))

    made = client.post(f"{base}/messages/{answer}/regenerate/")
    assert made.status_code == 202, made.content
    body = made.json()
    assert (body["kind"], body["version"], body["versions"], body["turn"]) == (
        "regenerate",
        2,
        2,
        True,
    )
    assert body["messageId"] == question and body["setAsideFrom"] == answer
    assert _wait_for(session, 2) == ["question", "another answer"]

    forks = client.get(f"{base}/forks/").json()
    assert forks == [
        {
            "forkId": body["forkId"],
            "kind": "regenerate",
            "version": 2,
            "versions": 2,
            "messageId": question,
            "active": True,
        }
    ]
    page = client.get(f"{base}/messages/?view=full").json()["results"]
    marked = next(m for m in page if m["id"] == question)["answers"]
    assert marked["version"] == 2
    assert [m["content"] for m in marked["otherVersions"][0]["messages"]] == ["answer"]

    back = client.post(f"{base}/forks/{body['forkId']}/select/", {"version": 1}, format="json")
    assert back.status_code == 200 and back.json()["turn"] is False
    assert _history(session) == ["question", "answer"]

    edited = client.post(
        f"{base}/messages/{question}/edit/", {"content": "better question"}, format="json"
    )
    assert edited.status_code == 202 and edited.json()["kind"] == "edit"
    assert _wait_for(session, 2)[0] == "better question"
    assert _wait_for(session, 2) == ["better question", "answer to the edit"]


def test_bad_requests_are_refused_and_change_nothing(llm_server, chat) -> None:
    session, (question, answer), client = chat
    base = f"/api/sessions/{session.pk}"
    cases = [
        (client.post(f"{base}/messages/{question}/regenerate/"), 400, "not_regenerable"),
        (
            client.post(f"{base}/messages/{answer}/edit/", {"content": "x"}, format="json"),
            400,
            "not_editable",
        ),
        (client.post(f"{base}/messages/999999/regenerate/"), 422, "unknown_message"),
        (
            client.post(f"{base}/forks/999999/select/", {"version": 1}, format="json"),
            404,
            "unknown_fork",
        ),
    ]
    for response, code, reason in cases:
        assert (response.status_code, response.json()["reason"]) == (code, reason)
    empty = client.post(f"{base}/messages/{question}/edit/", {"content": "   "}, format="json")
    assert empty.status_code == 400
    stranger = token_client(make_user())
    assert stranger.post(f"{base}/messages/{answer}/regenerate/").status_code == 404
    assert stranger.get(f"{base}/forks/").status_code == 404
    assert _history(session) == ["question", "answer"]
    assert llm_server.requests == []
