"""The search tools answer in plain words (issue 27 item 14): a NUL or a lone surrogate in a
``search_history`` query ended with "search_history failed: OperationalError: unterminated
string" (SQLite), "DataError: PostgreSQL text fields cannot contain NUL" or
"UnicodeEncodeError: …", and any tool's unexpected failure named its Python exception."""

from __future__ import annotations

import json
import re

import pytest
from channels.db import database_sync_to_async

from agents.models import ChatSession
from agents.services import messages_bulk_append
from agents.tools import Tool, ToolRegistry
from condense import ToolCall
from llm import ToolSpec
from recall.tools import recall_tools
from tests.factories import make_session
from tests.support.history import apply_compaction

pytestmark = pytest.mark.django_db(transaction=True)

EXCEPTION_NAME = re.compile(r"\b[A-Z][A-Za-z]*(Error|Exception)\b")


@database_sync_to_async
def _compacted_session() -> tuple[ChatSession, int]:
    session = make_session()
    rows = messages_bulk_append(
        session=session,
        rows=[
            {"role": "user", "content": "a\x00b marks the spot"},
            {"role": "user", "content": "x"},
        ],
    )
    apply_compaction(session, rows[:1])
    return ChatSession.objects.select_related("agent__model_channel").get(pk=session.pk), rows[0].pk


@pytest.mark.parametrize("query", ["a\x00b", "\udcff", "spot \udcff\x00"])
async def test_a_query_with_characters_no_database_stores_is_searched(query) -> None:
    session, stored = await _compacted_session()
    registry = ToolRegistry(recall_tools(session))
    result = await registry.execute(ToolCall("c1", "search_history", json.dumps({"query": query})))
    assert not result.is_error, result.content
    assert not EXCEPTION_NAME.search(result.content)
    if "\x00" in query:  # stored as U+FFFD, found as U+FFFD
        assert [h["id"] for h in json.loads(result.content)["hits"]] == [stored]


async def test_an_unexpected_tool_failure_names_no_exception() -> None:
    def broken() -> str:
        raise KeyError("internal detail")

    registry = ToolRegistry([Tool(ToolSpec("broken", "", {"type": "object"}), broken)])
    result = await registry.execute(ToolCall("c1", "broken", "{}"))
    assert result.is_error
    assert result.content == "broken failed on the server; try other arguments or another way"
