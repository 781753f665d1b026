"""Issue 16 item 4: agents are created, edited and deleted in the app (not the admin), with
today's permissions: everyone owns the agents they create, staff may share one and change
any; a chat keeps its agent, and deleting one that has chats says so, never a server error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from agents.models import Agent, ChatSession
from agents.tools import session_workspace_root
from tests.factories import make_agent, make_session
from tests.ui.conftest import add_messages
from tests.ui.html import parse

pytestmark = pytest.mark.django_db


def _agent_form(**overrides: Any) -> dict[str, str]:
    data = {
        "name": "Writer",
        "system_prompt": "You write.",
        "model_channel": "",
        "auxiliary_model_channel": "",
        "compaction_strategy": "lossy",
        "compaction_threshold_percent": "70",
        "compaction_protect_first_n": "3",
        "search_history_enabled": "on",
    }
    data.update({k: str(v) for k, v in overrides.items()})
    return {k: v for k, v in data.items() if v != ""}


@pytest.fixture
def staff_client(client, staff):
    client.force_login(staff)
    return client


# --- create ---------------------------------------------------------------------------


def test_a_user_creates_an_agent_of_their_own_in_the_app(zh_client, user, channel) -> None:
    listing = parse(zh_client.get("/agents/").content)
    new = [a for a in listing.select("a") if a.get("href") == "/agents/new/"]
    assert [a.text() for a in new] == ["新建 Agent", "新建一个"]  # the button, the empty list
    assert not [a for a in listing.select("a") if "/admin/" in (a.get("href") or "")]
    page = parse(zh_client.get("/agents/new/").content)
    assert page.select("h1")[0].text() == "新建 Agent"
    assert page.by_id("id_shared") is None  # only staff share agents
    response = zh_client.post("/agents/new/", _agent_form(model_channel=channel.pk, shared="on"))
    agent = Agent.objects.get(name="Writer")
    assert response.status_code == 302 and response["Location"] == f"/agents/{agent.pk}/"
    assert agent.owner == user and agent.model_channel == channel
    assert agent.search_history_enabled and agent.compaction_threshold_percent == 70
    assert "Agent 已创建。" in zh_client.get(response["Location"]).content.decode()


def test_staff_creates_a_shared_agent(staff_client, staff) -> None:
    page = parse(staff_client.get("/agents/new/").content)
    assert "checked" not in page.by_id("id_shared").attrs
    staff_client.post("/agents/new/", _agent_form(name="Team", shared="on"))
    staff_client.post("/agents/new/", _agent_form(name="Mine"))
    assert Agent.objects.get(name="Team").owner is None
    assert Agent.objects.get(name="Mine").owner == staff


def test_create_shows_field_errors_and_saves_nothing(zh_client) -> None:
    response = zh_client.post("/agents/new/", _agent_form(name="", compaction_threshold_percent=99))
    assert response.status_code == 200
    errors = [e.text() for e in parse(response.content).has_class("field-error")]
    assert "触发阈值必须在 30% 到 95% 之间，步进 5%。" in errors and len(errors) == 2
    assert not Agent.objects.exists()


def test_the_edit_page_returns_to_the_app(zh_client, user) -> None:
    mine = make_agent(name="Mine", owner=user)
    response = zh_client.post(f"/agents/{mine.pk}/", _agent_form(name="Renamed"))
    assert response["Location"] == f"/agents/{mine.pk}/"
    page = parse(zh_client.get(f"/agents/{mine.pk}/").content)
    assert [a.get("href") for a in page.select("a") if a.text() == "删除 Agent"] == [
        f"/agents/{mine.pk}/delete/"
    ]


def test_staff_can_unshare_and_share_on_the_edit_page(staff_client, staff, agent) -> None:
    page = parse(staff_client.get(f"/agents/{agent.pk}/").content)
    assert "checked" in page.by_id("id_shared").attrs
    staff_client.post(f"/agents/{agent.pk}/", _agent_form(name=agent.name))
    agent.refresh_from_db()
    assert agent.owner == staff
    staff_client.post(f"/agents/{agent.pk}/", _agent_form(name=agent.name, shared="on"))
    agent.refresh_from_db()
    assert agent.owner is None


# --- delete ---------------------------------------------------------------------------


def test_delete_an_agent_without_chats(zh_client, user) -> None:
    mine = make_agent(name="Mine", owner=user)
    page = parse(zh_client.get(f"/agents/{mine.pk}/delete/").content)
    assert page.select("h1")[0].text() == "删除 Agent「Mine」？"
    assert "没有对话使用该 Agent。删除后无法恢复。" in page.text()
    response = zh_client.post(f"/agents/{mine.pk}/delete/", follow=True)
    assert response.redirect_chain == [("/agents/", 302)]
    assert "已删除 Agent「Mine」。" in response.content.decode()
    assert not Agent.objects.filter(pk=mine.pk).exists()


def test_delete_with_own_chats_needs_the_box_ticked(
    zh_client, user, django_capture_on_commit_callbacks
) -> None:
    mine = make_agent(name="Mine", owner=user)
    chats = [make_session(owner=user, agent=mine, title=f"chat {i}") for i in range(2)]
    add_messages(chats[0], [("user", "hello"), ("assistant", "hi")])
    workspace = Path(session_workspace_root(chats[0].pk))
    workspace.mkdir(parents=True)
    (workspace / "notes.txt").write_text("kept until the chat goes")
    page = parse(zh_client.get(f"/agents/{mine.pk}/delete/").content)
    assert "你有 2 个使用该 Agent 的对话" in page.text()
    box = page.by_id("id_with_chats")
    assert box.get("type") == "checkbox" and "required" in box.attrs

    response = zh_client.post(f"/agents/{mine.pk}/delete/")  # the box not ticked
    assert response.status_code == 409
    assert "Agent 未删除：仍有对话在使用它。" in response.content.decode()
    assert Agent.objects.filter(pk=mine.pk).exists() and ChatSession.objects.count() == 2

    with django_capture_on_commit_callbacks(execute=True):  # the workspace goes after the commit
        response = zh_client.post(f"/agents/{mine.pk}/delete/", {"with_chats": "on"}, follow=True)
    assert "已删除 Agent「Mine」及其 2 个对话。" in response.content.decode()
    assert not Agent.objects.filter(pk=mine.pk).exists()
    assert not ChatSession.objects.exists()
    assert not workspace.exists()


def test_another_users_chat_keeps_a_shared_agent(staff_client, user, agent) -> None:
    make_session(owner=user, agent=agent)
    page = parse(staff_client.get(f"/agents/{agent.pk}/delete/").content)
    notice = page.find_all(lambda n: n.get("data-agent-use") == "others")[0]
    assert "无法删除该 Agent：有 1 个对话在使用它" in notice.text()
    assert "其中 1 个属于其他用户，需要先由其所有者删除。" in notice.text()
    assert page.by_id("id_with_chats") is None
    response = staff_client.post(f"/agents/{agent.pk}/delete/", {"with_chats": "on"})
    assert response.status_code == 409
    assert Agent.objects.filter(pk=agent.pk).exists() and ChatSession.objects.count() == 1


def test_delete_in_english(client, user) -> None:
    mine = make_agent(name="Mine", owner=user)
    make_session(owner=user, agent=mine)
    client.force_login(user)
    client.cookies["django_language"] = "en"
    text = " ".join(parse(client.get(f"/agents/{mine.pk}/delete/").content).text().split())
    assert "You have 1 chat with this agent." in text
    assert "Also delete my 1 chat with it, its messages and its workspace files" in text
    response = client.post(f"/agents/{mine.pk}/delete/", {"with_chats": "on"}, follow=True)
    assert "Agent “Mine” deleted, with its 1 chat." in response.content.decode()


# --- permissions ----------------------------------------------------------------------


def test_who_may_delete(client, user, other_user, agent) -> None:
    theirs = make_agent(name="Theirs", owner=other_user)
    client.force_login(user)
    assert client.get(f"/agents/{theirs.pk}/delete/").status_code == 404  # not visible
    assert client.post(f"/agents/{theirs.pk}/delete/").status_code == 404
    assert client.get(f"/agents/{agent.pk}/delete/").status_code == 403  # shared: staff's
    assert client.post(f"/agents/{agent.pk}/delete/").status_code == 403
    assert Agent.objects.filter(pk__in=[theirs.pk, agent.pk]).count() == 2
    client.logout()
    response = client.post(f"/agents/{theirs.pk}/delete/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_new_and_delete_keep_csrf(user) -> None:
    mine = make_agent(name="Mine", owner=user)
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(user)
    assert strict.post("/agents/new/", _agent_form()).status_code == 403
    assert strict.post(f"/agents/{mine.pk}/delete/").status_code == 403
    assert Agent.objects.count() == 1


def test_list_offers_edit_and_delete_only_where_allowed(zh_client, user, agent) -> None:
    mine = make_agent(name="Mine", owner=user)
    links = [a.get("href") for a in parse(zh_client.get("/agents/").content).select("a")]
    assert f"/agents/{mine.pk}/delete/" in links and f"/agents/{mine.pk}/" in links
    assert f"/agents/{agent.pk}/delete/" not in links and f"/agents/{agent.pk}/" not in links
