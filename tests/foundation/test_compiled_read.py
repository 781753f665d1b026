"""The history read compiled once (agents.compiled) returns what the ORM queryset returns."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.compiled import CompiledRead
from agents.models import ChatSession, Message
from agents.selectors import _llm_history, history_queryset, llm_history_load
from agents.services import message_append
from tests.factories import make_session
from tests.foundation.test_history import _apply, _conversation

pytestmark = pytest.mark.django_db


def _fields(rows: list[Message]) -> list[dict[str, Any]]:
    return [{f.attname: getattr(m, f.attname) for f in Message._meta.concrete_fields} for m in rows]


def _orm(session: ChatSession) -> list[Message]:
    return list(history_queryset(session=session, view="compacted", include_events=False))


def test_compiled_history_equals_the_querysets_through_a_sessions_life() -> None:
    session = make_session()
    msgs = _conversation(session, 8)
    message_append(
        session=session,
        role="assistant",
        content="",
        tool_calls=[{"id": "c1", "name": "read_file", "arguments": '{"p": "ü"}'}],
        metadata={"k": [1, "二"]},
    )
    tool = message_append(session=session, role="tool", content="t" * 300, tool_call_id="c1")
    assert _fields(llm_history_load(session=session)) == _fields(_orm(session))

    _apply(session, msgs[1:5], pruned=[tool])  # a summary in, a span out, an event record
    loaded = llm_history_load(session=session)
    assert _fields(loaded) == _fields(_orm(session))
    assert any(m.is_compaction_summary for m in loaded)
    assert all(not m.metadata.get("systemType") for m in loaded)  # events stay out
    assert all(m._state.db == connection.alias and not m._state.adding for m in loaded)


def test_each_call_reads_its_own_session_with_the_sql_compiled_once() -> None:
    first, second = make_session(), make_session()
    _conversation(first, 3)
    _conversation(second, 5)
    read = CompiledRead(
        Message,
        ChatSession,
        lambda key: history_queryset(session=key, view="compacted", include_events=False),
    )
    with CaptureQueriesContext(connection) as queries:
        a, b, a_again = read(first.pk), read(second.pk), read(first.pk)
    assert [m.session_id for m in a] == [first.pk] * 3
    assert [m.session_id for m in b] == [second.pk] * 5
    assert _fields(a_again) == _fields(a)
    assert len(queries.captured_queries) == 3  # one statement a read
    assert len({q["sql"] for q in queries.captured_queries}) == 2  # one per session
    assert len(read._compiled) == 1  # the SQL, compiled once


def test_a_read_that_does_not_use_its_key_is_refused() -> None:
    read = CompiledRead(Message, ChatSession, lambda key: Message.objects.all())
    with pytest.raises(ValueError, match="does not use its key"):
        read(make_session().pk)


def test_the_product_read_is_a_compiled_read() -> None:
    assert isinstance(_llm_history, CompiledRead)
