"""Reads compiled once (agents.compiled) return what their ORM querysets return."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser
from django.db import connection
from django.db.models import Model
from django.test.utils import CaptureQueriesContext

from agents.access import SessionNotFound, _owned_session, session_for_user, sessions_for_user
from agents.compiled import CompiledRead
from agents.models import ChatSession, Message
from agents.selectors import _llm_history, history_queryset, llm_history_load
from agents.services import message_append
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.foundation.test_history import _apply, _conversation

pytestmark = pytest.mark.django_db


def _fields(rows: list[Model]) -> list[dict[str, Any]]:
    return [{f.attname: getattr(m, f.attname) for f in m._meta.concrete_fields} for m in rows]


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
        lambda key: history_queryset(session=key, view="compacted", include_events=False),
        ChatSession._meta.pk,
    )
    with CaptureQueriesContext(connection) as queries:
        a, b, a_again = read(first.pk), read(second.pk), read(first.pk)
    assert [m.session_id for m in a] == [first.pk] * 3
    assert [m.session_id for m in b] == [second.pk] * 5
    assert _fields(a_again) == _fields(a)
    assert len(queries.captured_queries) == 3  # one statement a read
    assert len({q["sql"] for q in queries.captured_queries}) == 2  # one per session
    assert read.compilations == 1  # the SQL, compiled once


def test_a_read_that_does_not_use_its_key_is_refused() -> None:
    read = CompiledRead(Message, lambda key: Message.objects.all(), ChatSession._meta.pk)
    with pytest.raises(ValueError, match="does not use its key"):
        read(make_session().pk)


def test_reads_that_are_not_whole_model_rows_are_refused() -> None:
    pk = ChatSession._meta.pk
    for build in (
        lambda key: Message.objects.filter(session=key).values("id"),
        lambda key: Message.objects.filter(session=key).only("id"),
        lambda key: Message.objects.filter(session=key).prefetch_related("session"),
    ):
        with pytest.raises(TypeError, match="whole model rows"):
            CompiledRead(Message, build, pk)(make_session().pk)
    with pytest.raises(TypeError, match="builds ChatSession rows"):
        CompiledRead(Message, lambda key: ChatSession.objects.filter(pk=key), pk)(make_session().pk)


def test_the_product_reads_are_compiled_reads() -> None:
    assert isinstance(_llm_history, CompiledRead)
    assert isinstance(_owned_session, CompiledRead)


def _gate_by_queryset(user: Any, session_id: Any) -> ChatSession | None:
    return (
        sessions_for_user(user=user)
        .select_related("agent__model_channel")
        .filter(pk=session_id)
        .first()
    )


def test_the_gate_answers_as_its_queryset_with_the_agent_and_channel_loaded() -> None:
    owner, other = make_user(), make_user()
    with_channel = make_session(owner=owner, agent=make_agent(model_channel=make_channel()))
    without_channel = make_session(owner=owner)  # the left join: no channel, still found
    foreign = make_session(owner=other)
    for session in (with_channel, without_channel):
        by_queryset = _gate_by_queryset(owner, session.pk)
        with CaptureQueriesContext(connection) as queries:
            found = session_for_user(user=owner, session_id=str(session.pk))
            agent, channel = found.agent, found.agent.model_channel
        assert len(queries.captured_queries) == 1  # agent and channel came with the session
        assert _fields([found]) == _fields([by_queryset])
        assert _fields([agent]) == _fields([by_queryset.agent])
        if channel is None:
            assert by_queryset.agent.model_channel is None
        else:
            assert _fields([channel]) == _fields([by_queryset.agent.model_channel])
        assert not found._state.adding and found._state.db == connection.alias
    # foreign, unknown, malformed and anonymous look the same: not found
    for user, session_id in (
        (owner, foreign.pk),
        (other, with_channel.pk),
        (owner, "00000000-0000-4000-8000-000000000000"),
        (owner, "not-a-uuid"),
        (AnonymousUser(), with_channel.pk),
    ):
        if session_id != "not-a-uuid":
            assert _gate_by_queryset(user, session_id) is None
        with pytest.raises(SessionNotFound):
            session_for_user(user=user, session_id=session_id)
    assert session_for_user(user=other, session_id=foreign.pk).pk == foreign.pk


def _connection_outlives_thread(work: Callable[[], None]) -> bool:
    """Run ``work`` in a thread of its own; whether that thread's connection is still alive
    once the thread has ended and garbage has been collected."""
    import gc
    import threading
    import weakref

    from django.db import connections

    refs: list[weakref.ref[Any]] = []

    def run() -> None:
        work()
        refs.append(weakref.ref(connections["default"]))
        connections["default"].close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    del thread
    gc.collect()
    assert refs, "the work failed in its thread"
    return refs[0]() is not None


def test_a_finished_threads_connection_is_not_kept_alive() -> None:
    """Request threads come and go (asgiref runs each request's sync code in its own); what
    a read compiled on a thread's connection must not keep that connection alive."""
    import uuid

    read = CompiledRead(
        Message, lambda key: Message.objects.filter(session=key), ChatSession._meta.pk
    )

    def work() -> None:
        assert read(uuid.uuid4()) == []

    assert not _connection_outlives_thread(work)


def test_the_connection_cache_is_the_wrappers_own_through_the_proxy_too() -> None:
    from django.db import connections

    from agents.compiled import connection_cache

    cache = connection_cache(connection)  # django.db.connection: a proxy to this thread's
    assert connection_cache(connections["default"]) is cache
    assert connection_cache(connection) is cache


@pytest.mark.django_db(transaction=True)
def test_storing_an_answer_in_a_thread_does_not_keep_its_connection_alive() -> None:
    """The counters an answer's statement returns are converted with converters built once
    per connection; kept anywhere else, they would hold the thread's connection."""
    session = make_session()

    def work() -> None:
        message_append(
            session=ChatSession.objects.get(pk=session.pk),
            role="assistant",
            content="ok",
            input_tokens=12,
            output_tokens=3,
            record_usage=True,
        )

    assert not _connection_outlives_thread(work)
    assert ChatSession.objects.get(pk=session.pk).total_input_tokens == 12
