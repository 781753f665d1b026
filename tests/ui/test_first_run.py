"""Issue 16 item 9: the demo agent's name reads the same in every language of the page, and
an install made with the old Chinese name is renamed rather than given a second agent."""

from __future__ import annotations

import pytest

from agents.models import Agent
from netaclaw.bootstrap import DEMO_AGENT_NAME, LEGACY_DEMO_AGENT_NAME, bootstrap
from tests.ui.html import parse

pytestmark = pytest.mark.django_db

CJK = set(range(0x3400, 0xA000))


def test_the_demo_agent_has_no_chinese_name(en_client, monkeypatch) -> None:
    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "DEEPSEEK_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    report = bootstrap()
    assert report.demo_agent.name == DEMO_AGENT_NAME
    assert not {ord(c) for c in DEMO_AGENT_NAME} & CJK
    select = parse(en_client.get("/chat/").content).by_id("new-chat-agent")
    assert DEMO_AGENT_NAME in select.text()


def test_an_old_demo_agent_is_renamed_not_doubled(monkeypatch) -> None:
    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "DEEPSEEK_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    old = Agent.objects.create(name=LEGACY_DEMO_AGENT_NAME, system_prompt="x")
    assert bootstrap().demo_agent.pk == old.pk
    bootstrap()
    assert list(Agent.objects.values_list("name", flat=True)) == [DEMO_AGENT_NAME]
