"""Issue 16 item 1: the path to a first working /compact. The first channel marked auxiliary
becomes the system default (page, API and admin alike), the channel pages offer "make default
auxiliary model", the agent page says which model compaction will use, and the "no auxiliary
model" bubble links to where to fix it."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from agents.auxiliary import auxiliary_choice, default_auxiliary_channel
from agents.models import ModelChannel
from compaction.auxiliary import AuxiliaryError, resolve_channel
from system.dictionary import DEFAULT_AUXILIARY_CHANNEL, NETACLAW_TYPE_KEY, dict_set, dict_value
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.ui.html import parse

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_client(client, staff):
    client.force_login(staff)
    return client


def _channel_form(**overrides: Any) -> dict[str, str]:
    data = {
        "name": "Local",
        "provider": "openai_compatible",
        "base_url": "http://127.0.0.1:11434/v1",
        "model": "qwen2.5:7b",
        "enabled": "on",
    }
    data.update({k: str(v) for k, v in overrides.items()})
    return {k: v for k, v in data.items() if v != ""}


def _default_id() -> str | None:
    return dict_value(type_key=NETACLAW_TYPE_KEY, name=DEFAULT_AUXILIARY_CHANNEL)


# --- the first auxiliary channel becomes the default --------------------------------------


def test_first_auxiliary_channel_on_the_page_becomes_the_default(staff_client) -> None:
    staff_client.post("/channels/new/", _channel_form(name="Plain"))
    assert _default_id() is None  # not marked auxiliary: no default yet
    response = staff_client.post("/channels/new/", _channel_form(name="Aux", is_auxiliary="on"))
    aux = ModelChannel.objects.get(name="Aux")
    assert _default_id() == str(aux.pk)
    page = staff_client.get(response["Location"]).content.decode()
    assert "「Aux」现在是默认辅助模型" in page
    # a second auxiliary channel leaves the default alone
    staff_client.post("/channels/new/", _channel_form(name="Aux 2", is_auxiliary="on"))
    assert _default_id() == str(aux.pk)


def test_ticking_auxiliary_on_an_existing_channel_makes_it_the_default(staff_client) -> None:
    staff_client.post("/channels/new/", _channel_form(name="Local"))
    channel = ModelChannel.objects.get()
    staff_client.post(f"/channels/{channel.pk}/", _channel_form(is_auxiliary="on"))
    assert _default_id() == str(channel.pk)


def test_the_admin_makes_the_first_auxiliary_channel_the_default() -> None:
    dict_set(type_key=NETACLAW_TYPE_KEY, name=DEFAULT_AUXILIARY_CHANNEL, value="999999")  # gone
    admin = Client()
    admin.force_login(make_user("superuser", is_staff=True, is_superuser=True))
    response = admin.post(
        "/admin/agents/modelchannel/add/",
        {
            "name": "Admin aux",
            "provider": "openai_compatible",
            "base_url": "http://127.0.0.1:8000/v1",
            "model": "llama3.1",
            "is_auxiliary": "on",
            "enabled": "on",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert _default_id() == str(ModelChannel.objects.get(name="Admin aux").pk)


def test_a_default_that_stops_being_usable_hands_over(staff_client) -> None:
    staff_client.post("/channels/new/", _channel_form(name="First", is_auxiliary="on"))
    staff_client.post("/channels/new/", _channel_form(name="Second", is_auxiliary="on"))
    first, second = ModelChannel.objects.get(name="First"), ModelChannel.objects.get(name="Second")
    assert _default_id() == str(first.pk)
    staff_client.post(f"/channels/{first.pk}/", _channel_form(name="First"))  # unticked
    assert _default_id() == str(second.pk)
    staff_client.post(f"/channels/{second.pk}/", _channel_form(name="Second", enabled=""))
    assert _default_id() is None  # no usable channel is left: no default that would fail


# --- make default auxiliary model ------------------------------------------------------------


def test_make_default_from_the_list(staff_client) -> None:
    plain = make_channel(name="Plain", is_auxiliary=False)
    listing = parse(staff_client.get("/channels/").content)
    assert "还没有默认辅助模型" in listing.text()
    button = listing.select("tr", data_channel=str(plain.pk))[0].select("button")[0]
    assert button.text() == "设为默认辅助模型"
    response = staff_client.post(f"/channels/{plain.pk}/default-auxiliary/", {"next": "/channels/"})
    assert response.status_code == 302 and response["Location"] == "/channels/"
    plain.refresh_from_db()
    assert plain.is_auxiliary and default_auxiliary_channel() == plain
    listing = parse(staff_client.get("/channels/").content)
    row = listing.select("tr", data_channel=str(plain.pk))[0]
    assert "全局默认辅助模型" in row.text() and row.select("button") == []
    assert "还没有默认辅助模型" not in listing.text()


def test_make_default_from_the_channel_page_and_its_refusals(staff_client) -> None:
    first = make_channel(name="First", is_auxiliary=True)
    dict_set(type_key=NETACLAW_TYPE_KEY, name=DEFAULT_AUXILIARY_CHANNEL, value=str(first.pk))
    other = make_channel(name="Other", is_auxiliary=True)
    page = parse(staff_client.get(f"/channels/{other.pk}/").content)
    buttons = page.find_all(lambda n: "data-make-default" in n.attrs)
    assert [b.text() for b in buttons] == ["设为默认辅助模型"]
    first_page = parse(staff_client.get(f"/channels/{first.pk}/").content)
    assert first_page.find_all(lambda n: "data-default-auxiliary" in n.attrs)
    assert not first_page.find_all(lambda n: "data-make-default" in n.attrs)
    # an outside "next" is ignored
    response = staff_client.post(
        f"/channels/{other.pk}/default-auxiliary/", {"next": "https://evil.example/"}
    )
    assert response["Location"] == f"/channels/{other.pk}/"
    assert default_auxiliary_channel() == other
    disabled = make_channel(name="Off", enabled=False)
    response = staff_client.post(f"/channels/{disabled.pk}/default-auxiliary/", follow=True)
    assert "已停用的渠道不能作为默认辅助模型" in response.content.decode()
    assert default_auxiliary_channel() == other
    assert staff_client.get(f"/channels/{other.pk}/default-auxiliary/").status_code == 405


def test_make_default_is_staff_only_and_needs_csrf(client, user, staff) -> None:
    channel = make_channel(name="Aux", is_auxiliary=True)
    client.force_login(user)
    assert client.post(f"/channels/{channel.pk}/default-auxiliary/").status_code == 403
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(staff)
    assert strict.post(f"/channels/{channel.pk}/default-auxiliary/").status_code == 403
    assert default_auxiliary_channel() is None


# --- the agent page says which model compaction will use -------------------------------


def _compaction_model(client, agent) -> Any:
    doc = parse(client.get(f"/agents/{agent.pk}/").content)
    return doc.by_id("compaction-model")


def test_agent_page_names_the_model_compaction_will_use(staff_client) -> None:
    agent = make_agent(name="Helper")
    box = _compaction_model(staff_client, agent)
    assert box.get("data-compaction-model") == "none"
    assert "没有可用的辅助模型" in box.text()
    assert box.select("a", data_fix="auxiliary")[0].get("href") == "/channels/"

    default = make_channel(name="Summarizer", model="qwen2.5:7b", is_auxiliary=True)
    dict_set(type_key=NETACLAW_TYPE_KEY, name=DEFAULT_AUXILIARY_CHANNEL, value=str(default.pk))
    box = _compaction_model(staff_client, agent)
    assert box.get("data-compaction-model") == "default"
    assert "压缩使用「Summarizer」（qwen2.5:7b）生成摘要：这是全局默认辅助模型。" in box.text()

    own = make_channel(name="Own", model="gpt-4o", is_auxiliary=True)
    agent.auxiliary_model_channel = own
    agent.save()
    box = _compaction_model(staff_client, agent)
    assert box.get("data-compaction-model") == "agent" and "「Own」" in box.text()

    own.enabled = False
    own.save()
    box = _compaction_model(staff_client, agent)
    assert box.get("data-compaction-model") == "default"
    assert "为该 Agent 选择的辅助模型「Own」已停用，因此使用全局默认辅助模型。" in box.text()


def test_agent_page_in_english_for_an_owner(client, user) -> None:
    agent = make_agent(name="Mine", owner=user)
    client.force_login(user)
    client.cookies["django_language"] = "en"
    box = _compaction_model(client, agent)
    assert (
        box.text().split()
        == (
            "No auxiliary model: /compact and automatic compaction fail until there is one. "
            "Choose an auxiliary model above, or ask an administrator to make a model channel the "
            "default auxiliary model."
        ).split()
    )


@pytest.mark.parametrize("setup", ["none", "default", "own", "own_disabled", "default_disabled"])
def test_the_page_and_the_compaction_resolve_alike(setup) -> None:
    agent = make_agent()
    if setup != "none":
        default = make_channel(is_auxiliary=True, enabled=setup != "default_disabled")
        dict_set(type_key=NETACLAW_TYPE_KEY, name=DEFAULT_AUXILIARY_CHANNEL, value=str(default.pk))
    if setup.startswith("own"):
        agent.auxiliary_model_channel = make_channel(is_auxiliary=True, enabled=setup == "own")
        agent.save()
    choice = auxiliary_choice(agent=agent)
    if choice.channel is None:
        with pytest.raises(AuxiliaryError):
            resolve_channel(agent)
    else:
        assert resolve_channel(agent) == choice.channel
    expected = {
        "none": "none",
        "default": "default",
        "own": "agent",
        "own_disabled": "default",
        "default_disabled": "none",
    }
    assert choice.source == expected[setup]


# --- the failure bubble links to the fix ---------------------------------------------


def test_no_auxiliary_bubble_links_to_the_agents_compaction_settings(zh_client, user) -> None:
    from tests.support.event_records import system_event_append

    agent = make_agent(name="Mine", owner=user)
    session = make_session(owner=user, agent=agent)
    system_event_append(
        session=session,
        system_type="compaction_event",
        content="压缩失败",
        payload={"status": "failed", "reason": "no_auxiliary_model", "error": "x"},
    )
    doc = parse(zh_client.get(f"/chat/{session.pk}/").content)
    link = doc.select("a", data_fix="auxiliary")[0]
    assert link.get("href") == f"/agents/of-chat/{session.pk}/"
    response = zh_client.get(link.get("href"))
    assert response.status_code == 302
    assert response["Location"] == f"/agents/{agent.pk}/#compaction-settings"


def test_the_fix_link_of_a_shared_agent_explains_who_can_fix_it(zh_client, user, agent) -> None:
    session = make_session(owner=user, agent=agent)  # a shared agent: staff's to change
    response = zh_client.get(f"/agents/of-chat/{session.pk}/", follow=True)
    assert response.redirect_chain == [("/agents/", 302)]
    assert "只有管理员可以为共享 Agent「Helper」选择辅助模型" in response.content.decode()


def test_the_fix_link_of_someone_elses_chat_is_404(client, other_user, session) -> None:
    client.force_login(other_user)
    assert client.get(f"/agents/of-chat/{session.pk}/").status_code == 404
