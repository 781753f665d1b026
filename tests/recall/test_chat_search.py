"""Search over a user's own chats (issue 26 item 2): titles and messages, never another
user's, never tool outputs or summaries; on SQLite and on PostgreSQL (CI runs both)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agents.models import Role
from agents.services import message_append
from recall.chats import SearchRefused, search_chats
from tests.factories import make_session, make_user

pytestmark = pytest.mark.django_db


def _chat(owner, title: str, *lines: tuple[str, str]):
    session = make_session(owner=owner, title=title)
    for role, text in lines:
        message_append(session=session, role=role, content=text)
    return session


def test_messages_of_the_users_chats_match_and_others_never_do() -> None:
    me, other = make_user(), make_user()
    mine = _chat(me, "部署", (Role.USER, "How do we rotate the postgres credentials?"))
    _chat(other, "secret", (Role.USER, "rotate the postgres credentials on prod"))
    found = search_chats(user=me, query="rotate credentials")
    assert [(h.session_id, h.role) for h in found.messages] == [(str(mine.pk), "user")]
    assert "<" not in found.messages[0].snippet and "rotate" in found.messages[0].snippet
    assert found.matched == "all words"
    assert search_chats(user=other, query="rotate credentials").messages[0].session_id != str(
        mine.pk
    )


def test_titles_match_as_substrings_case_blind() -> None:
    me = make_user()
    chat = _chat(me, "Kubernetes Upgrade Plan")
    _chat(make_user(), "kubernetes upgrade for someone else")
    found = search_chats(user=me, query="upgrade kuber")
    assert [t.session_id for t in found.titles] == [str(chat.pk)]


def test_chinese_words_are_found() -> None:
    me = make_user()
    chat = _chat(me, "", (Role.ASSISTANT, "我们决定把数据库迁移到新的集群上。"))
    _chat(me, "", (Role.ASSISTANT, "今天的天气很好。"))
    found = search_chats(user=me, query="数据库迁移")
    assert [h.session_id for h in found.messages] == [str(chat.pk)]
    assert [h.session_id for h in search_chats(user=me, query="迁移").messages] == [str(chat.pk)]


def test_tool_outputs_summaries_and_queued_messages_are_not_searched() -> None:
    me = make_user()
    session = _chat(me, "", (Role.USER, "plain question about zebras"))
    message_append(session=session, role=Role.TOOL, content="zebras in a tool output")
    message_append(session=session, role=Role.USER, content="queued zebras", queued=True)
    found = search_chats(user=me, query="zebras")
    assert [h.snippet for h in found.messages] == ["plain question about zebras"]


def test_any_word_when_no_message_has_all() -> None:
    me = make_user()
    _chat(me, "", (Role.USER, "alpha release notes"), (Role.USER, "beta rollout"))
    found = search_chats(user=me, query="alpha rollout")
    assert found.matched == "any word" and len(found.messages) == 2


@pytest.mark.parametrize("query", ["", " ", "a"])
def test_too_short_a_query_is_refused_with_a_reason(query: str) -> None:
    with pytest.raises(SearchRefused, match="at least 2 characters"):
        search_chats(user=make_user(), query=query)


def test_nothing_found_is_an_empty_answer() -> None:
    found = search_chats(user=make_user(), query="nothing at all here")
    assert (found.titles, found.messages, found.matched) == ([], [], "")


def test_the_api_answers_the_callers_hits_and_refuses_a_short_query(client) -> None:
    me = make_user()
    chat = _chat(me, "Backup plan", (Role.USER, "nightly backup to object storage"))
    _chat(make_user(), "Backup plan", (Role.USER, "nightly backup elsewhere"))
    client.force_login(me)
    answer = client.get(reverse("api:search"), {"q": "backup"})
    assert answer.status_code == 200
    body = answer.json()
    assert [t["sessionId"] for t in body["titles"]] == [str(chat.pk)]
    assert [m["sessionId"] for m in body["messages"]] == [str(chat.pk)]
    refused = client.get(reverse("api:search"), {"q": "b"})
    assert refused.status_code == 400 and refused.json()["reason"] == "bad_query"


def test_the_api_and_the_page_need_a_login(client) -> None:
    assert client.get(reverse("api:search"), {"q": "backup"}).status_code in {401, 403}
    page = client.get(reverse("chat:search"), {"q": "backup"})
    assert page.status_code == 302 and "login" in page["Location"]


def test_the_fragment_marks_the_words_and_escapes_the_text(client) -> None:
    me = make_user()
    chat = _chat(me, "", (Role.USER, "<script>alert(1)</script> deploy the canary"))
    client.force_login(me)
    html = client.get(
        reverse("chat:search"), {"q": "canary"}, headers={"X-Fragment": "search"}
    ).content.decode()
    assert "<script>alert" not in html and "&lt;script&gt;" in html
    assert "<mark>canary</mark>" in html
    message_id = chat.messages.get().pk
    assert f"?view=full&amp;message={message_id}#msg-{message_id}" in html


def test_a_result_opens_its_chat_with_the_message_on_the_page(client) -> None:
    me = make_user()
    session = _chat(me, "long", *[(Role.USER, f"filler message {i}") for i in range(180)])
    target = session.messages.order_by("position")[3]
    client.force_login(me)
    plain = client.get(reverse("chat:session", args=[session.pk])).content.decode()
    assert f'id="msg-{target.pk}"' not in plain  # deeper than one page
    page = client.get(reverse("chat:session", args=[session.pk]), {"message": target.pk})
    html = page.content.decode()
    assert f'id="msg-{target.pk}"' in html and f'data-found-message="{target.pk}"' in html
