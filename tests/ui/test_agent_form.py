"""The agent page's 「上下文压缩」 section (seed §8.5): ranges, inherit, auxiliary list."""

from __future__ import annotations

from typing import Any

import pytest

from agents.models import Agent
from system.dictionary import DEFAULT_AUXILIARY_CHANNEL, NETACLAW_TYPE_KEY, dict_set
from tests.factories import make_channel
from tests.ui.html import parse

pytestmark = pytest.mark.django_db


def _post(client, agent: Agent, **overrides: Any):
    data = {
        "name": agent.name,
        "system_prompt": agent.system_prompt,
        "model_channel": agent.model_channel_id or "",
        "auxiliary_model_channel": "",
        "compaction_strategy": "lossy",
        "compaction_threshold_percent": "70",
        "compaction_protect_first_n": "3",
    }
    data.update({k: "" if v is None else str(v) for k, v in overrides.items()})
    return client.post(f"/agents/{agent.pk}/", data)


@pytest.fixture
def staff_client(client, staff):
    client.force_login(staff)
    return client


@pytest.mark.parametrize("value", [29, 96, 0, 100, 37])
def test_threshold_outside_30_95_or_off_step_is_rejected(staff_client, agent, value) -> None:
    response = _post(staff_client, agent, compaction_threshold_percent=value)
    assert response.status_code == 200
    errors = parse(response.content).has_class("field-error")
    assert [e.text() for e in errors] == ["触发阈值必须在 30% 到 95% 之间，步进 5%。"]
    agent.refresh_from_db()
    assert agent.compaction_threshold_percent == 70


@pytest.mark.parametrize("value", [0, 11, -1])
def test_protected_head_outside_1_10_is_rejected(staff_client, agent, value) -> None:
    response = _post(staff_client, agent, compaction_protect_first_n=value)
    errors = parse(response.content).has_class("field-error")
    assert [e.text() for e in errors] == ["保护头部必须在 1 到 10 条消息之间。"]


def test_range_error_in_english(staff_client, agent) -> None:
    staff_client.cookies["django_language"] = "en"
    response = _post(staff_client, agent, compaction_threshold_percent=96)
    assert "The trigger threshold must be between 30% and 95%, in steps of 5%." in (
        response.content.decode()
    )


@pytest.mark.parametrize(("threshold", "head"), [(30, 1), (95, 10), (55, 5)])
def test_valid_values_are_saved(staff_client, agent, threshold, head) -> None:
    response = _post(
        staff_client, agent, compaction_threshold_percent=threshold, compaction_protect_first_n=head
    )
    assert response.status_code == 302 and response["Location"] == f"/agents/{agent.pk}/"
    agent.refresh_from_db()
    assert (agent.compaction_threshold_percent, agent.compaction_protect_first_n) == (
        threshold,
        head,
    )


def test_blank_inherits_the_system_defaults(staff_client, agent) -> None:
    aux = make_channel(name="Aux", is_auxiliary=True)
    agent.auxiliary_model_channel = aux
    agent.compaction_threshold_percent = 90
    agent.compaction_protect_first_n = 7
    agent.save()
    response = _post(
        staff_client,
        agent,
        auxiliary_model_channel=None,
        compaction_threshold_percent=None,
        compaction_protect_first_n=None,
        compaction_strategy=None,
    )
    assert response.status_code == 302
    agent.refresh_from_db()
    assert agent.auxiliary_model_channel is None  # = the system default
    assert agent.compaction_threshold_percent == 70
    assert agent.compaction_protect_first_n == 3
    assert agent.compaction_strategy == "lossy"


def test_auxiliary_select_lists_only_auxiliary_channels(staff_client, agent, channel) -> None:
    aux = make_channel(name="Summarizer", is_auxiliary=True)
    make_channel(name="Disabled aux", is_auxiliary=True, enabled=False)
    doc = parse(staff_client.get(f"/agents/{agent.pk}/").content)
    select = doc.by_id("id_auxiliary_model_channel")
    options = [(o.get("value"), o.text()) for o in select.select("option")]
    assert options == [("", "继承全局默认"), (str(aux.pk), str(aux))]
    assert str(channel.pk) in [
        o.get("value") for o in doc.by_id("id_model_channel").select("option")
    ]
    # a channel not marked auxiliary cannot be chosen by posting its id
    response = _post(staff_client, agent, auxiliary_model_channel=channel.pk)
    assert response.status_code == 200
    agent.refresh_from_db()
    assert agent.auxiliary_model_channel is None
    assert _post(staff_client, agent, auxiliary_model_channel=aux.pk).status_code == 302
    agent.refresh_from_db()
    assert agent.auxiliary_model_channel == aux


def test_page_shows_slider_strategy_hint_and_system_default(staff_client, agent) -> None:
    default = make_channel(name="Default summarizer", is_auxiliary=True)
    dict_set(type_key=NETACLAW_TYPE_KEY, name=DEFAULT_AUXILIARY_CHANNEL, value=str(default.pk))
    doc = parse(staff_client.get(f"/agents/{agent.pk}/").content)
    slider = doc.by_id("id_compaction_threshold_percent")
    assert (slider.get("type"), slider.get("min"), slider.get("max"), slider.get("step")) == (
        "range",
        "30",
        "95",
        "5",
    )
    assert slider.get("value") == "70"
    output = doc.select("output")[0]
    assert output.text() == "70%" and output.get("for") == "id_compaction_threshold_percent"
    head = doc.by_id("id_compaction_protect_first_n")
    assert (head.get("type"), head.get("min"), head.get("max"), head.get("value")) == (
        "number",
        "1",
        "10",
        "3",
    )
    strategy = doc.by_id("id_compaction_strategy")
    assert [o.get("value") for o in strategy.select("option")] == ["lossy"]
    section = doc.by_id("compaction-settings")
    assert "更多策略开发中" in section.text() and "help-muted" in str(
        section.has_class("help-muted")[0].classes
    )
    assert "「Default summarizer」" in section.text()


def test_owner_edits_own_agent(client, user, channel) -> None:
    from tests.factories import make_agent

    mine = make_agent(name="Mine", owner=user)
    client.force_login(user)
    response = _post(client, mine, name="Renamed", model_channel=channel.pk)
    assert response.status_code == 302
    mine.refresh_from_db()
    assert mine.name == "Renamed" and mine.model_channel == channel and mine.owner == user


def test_agent_list_shows_settings(staff_client, agent) -> None:
    text = parse(staff_client.get("/agents/").content).text()
    assert agent.name in text and "70%" in text and "全局默认" in text
