"""The recall tools as the model sees them: schemas in both provider formats, bound to the
turn's session, the agent's switch, and ``context_status`` against the token bar."""

from __future__ import annotations

import json

import pytest

from agents.meter import meter_read
from agents.models import ChatSession
from agents.services import message_append
from agents.tools import TodoStore, ToolRegistry, Workspace, default_registry
from condense.types import ToolCall
from llm.anthropic_adapter import to_anthropic_tools
from llm.openai_adapter import to_openai_tools
from recall.tools import CONTEXT_STATUS, READ_HISTORY_MESSAGE, SEARCH_HISTORY, recall_tools
from tests.factories import make_agent, make_channel, make_session
from tests.support.history import apply_compaction

SPECS = (SEARCH_HISTORY, READ_HISTORY_MESSAGE, CONTEXT_STATUS)


def test_the_schemas_in_both_provider_formats() -> None:
    openai = {t["function"]["name"]: t for t in to_openai_tools(SPECS)}
    anthropic = {t["name"]: t for t in to_anthropic_tools(SPECS)}
    assert (
        set(openai)
        == set(anthropic)
        == {
            "search_history",
            "read_history_message",
            "context_status",
        }
    )
    search = openai["search_history"]["function"]["parameters"]
    assert search["required"] == ["query"]
    assert search["properties"]["query"]["type"] == "string"
    assert search["properties"]["limit"]["type"] == "integer"
    assert anthropic["search_history"]["input_schema"] == search
    read = anthropic["read_history_message"]["input_schema"]
    assert read["required"] == ["id"] and read["properties"]["page"]["type"] == "integer"
    assert anthropic["context_status"]["input_schema"] == {"type": "object", "properties": {}}
    assert openai["context_status"]["type"] == "function"
    for spec in SPECS:
        assert spec.description and len(spec.description) < 600
        json.dumps(spec.parameters)


def _registry(session: ChatSession, tmp_path) -> ToolRegistry:
    return default_registry(
        Workspace(tmp_path / "ws"), TodoStore(items=[]), extra=recall_tools(session)
    )


async def _call(registry: ToolRegistry, name: str, **arguments) -> tuple[str, bool]:
    outcome = await registry.execute(ToolCall("c1", name, json.dumps(arguments)))
    return outcome.content, outcome.is_error


def _make_session(enabled: bool = True) -> ChatSession:
    channel = make_channel(context_window=10_000)
    agent = make_agent(model_channel=channel, search_history_enabled=enabled)
    return ChatSession.objects.select_related("agent__model_channel").get(
        pk=make_session(agent=agent).pk
    )


@pytest.mark.django_db
def test_the_switch_leaves_context_status_only() -> None:
    on, off = _make_session(), _make_session(enabled=False)
    assert [t.spec.name for t in recall_tools(on)] == [
        "search_history",
        "read_history_message",
        "context_status",
    ]
    assert [t.spec.name for t in recall_tools(off)] == ["context_status"]
    assert make_agent().search_history_enabled is True  # on by default


@pytest.mark.django_db(transaction=True)
async def test_the_tools_are_bound_to_the_turns_session(tmp_path) -> None:
    from channels.db import database_sync_to_async

    @database_sync_to_async
    def setup():
        mine, theirs = _make_session(), _make_session()
        made = {}
        for name, session in (("mine", mine), ("theirs", theirs)):
            rows = [
                message_append(session=session, role="user", content=f"{name}: the otter code"),
                message_append(session=session, role="assistant", content="noted " * 30),
                message_append(session=session, role="user", content="go on"),
            ]
            apply_compaction(session, rows[:2])
            made[name] = rows
        return ChatSession.objects.select_related("agent").get(pk=mine.pk), made

    mine, made = await setup()
    registry = _registry(mine, tmp_path)
    content, error = await _call(registry, "search_history", query="otter code", limit=5)
    assert not error
    hits = json.loads(content)["hits"]
    assert [h["id"] for h in hits] == [made["mine"][0].pk]
    assert hits[0]["snippet"] == "mine: the otter code"
    content, error = await _call(registry, "read_history_message", id=made["mine"][0].pk)
    assert not error and json.loads(content)["text"] == "mine: the otter code"
    content, error = await _call(registry, "read_history_message", id=made["theirs"][0].pk)
    assert error and "no message" in content and "otter" not in content
    content, error = await _call(registry, "search_history", query="   ")
    assert error and "empty" in content
    content, error = await _call(registry, "search_history", query="x", limit="3")
    assert error and "integer" in content


@pytest.mark.django_db
def test_context_status_is_the_token_bars_reading() -> None:
    from recall.status import context_status

    session = _make_session()
    for i in range(30):
        message_append(session=session, role="user", content=f"turn {i} " + "words " * 200)
    reading = meter_read(session=session)
    status = context_status(session)
    assert status == {
        "usedTokens": reading.used_tokens,
        "thresholdTokens": reading.max_tokens * reading.threshold_percent // 100,
        "maxTokens": 10_000,
        "percent": reading.percent,
        "compactionDue": True,
    }
    assert status["usedTokens"] >= status["thresholdTokens"]
    ChatSession.objects.filter(pk=session.pk).update(auto_compaction_paused_reason="paused")
    session.refresh_from_db()
    assert context_status(session)["compactionDue"] is False  # paused: the trigger's rule
