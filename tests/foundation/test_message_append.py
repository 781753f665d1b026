"""message_append: what it returns is what it stored, on every database; a plain insert
(two statements with the provider's usage), and concurrent writers never collide."""

from __future__ import annotations

import threading

import pytest
from django.db import IntegrityError, close_old_connections, connection
from django.forms.models import model_to_dict
from django.test.utils import CaptureQueriesContext

from agents.models import ChatSession, Message
from agents.services import message_append
from tests.factories import make_session


def _stored_fields(message: Message) -> dict[str, object]:
    return {**model_to_dict(message), "id": message.pk, "created_at": message.created_at}


@pytest.mark.django_db
def test_the_returned_message_and_session_counters_match_the_database() -> None:
    session = make_session()
    message_append(session=session, role="user", content="你好，读一下 a.txt")
    answer = message_append(
        session=session,
        role="assistant",
        content="",
        tool_calls=[{"id": "c1", "name": "read_file", "arguments": '{"path": "a.txt"}'}],
        metadata={"note": "日志"},
        input_tokens=321,
        output_tokens=12,
        record_usage=True,
    )
    assert _stored_fields(answer) == _stored_fields(Message.objects.get(pk=answer.pk))
    assert not answer._state.adding
    usage_fields = (
        "last_input_tokens",
        "last_input_position",
        "total_input_tokens",
        "total_output_tokens",
        "api_calls",
    )
    in_memory = {name: getattr(session, name) for name in usage_fields}
    session.refresh_from_db()
    assert in_memory == {name: getattr(session, name) for name in usage_fields}
    assert (session.last_input_tokens, session.last_input_position) == (321, answer.position - 1)
    assert (session.total_input_tokens, session.api_calls) == (321, 1)


@pytest.mark.django_db(transaction=True)
def test_a_session_deleted_meanwhile_stores_nothing() -> None:
    session = make_session()
    ChatSession.objects.filter(pk=session.pk).delete()
    with pytest.raises((ChatSession.DoesNotExist, IntegrityError)):
        message_append(session=session, role="user", content="lost?")
    assert not Message.objects.filter(session_id=session.pk).exists()


@pytest.mark.postgres
@pytest.mark.django_db
def test_on_postgresql_an_append_is_one_insert_and_an_answer_adds_its_usage() -> None:
    session = make_session()
    with CaptureQueriesContext(connection) as queries:
        message_append(session=session, role="user", content="one round trip")
        message_append(
            session=session,
            role="assistant",
            content="ok",
            input_tokens=10,
            output_tokens=1,
            record_usage=True,
        )
    statements = [q["sql"].split()[0] for q in queries if q["sql"].split()[0] != "SAVEPOINT"]
    assert [s for s in statements if s != "RELEASE"] == ["INSERT", "INSERT", "UPDATE"]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_appends_get_distinct_positions_in_each_writers_order() -> None:
    session = make_session()
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def writer(n: int) -> None:
        try:
            start.wait()
            for i in range(5):
                message_append(
                    session=ChatSession.objects.get(pk=session.pk),
                    role="user",
                    content=f"{n}-{i}",
                )
        except BaseException as exc:
            errors.append(exc)
        finally:
            close_old_connections()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert errors == []
    rows = list(Message.objects.filter(session=session).values_list("position", "content"))
    assert len({position for position, _ in rows}) == 40
    for n in range(8):
        mine = [content for _, content in sorted(rows) if content.startswith(f"{n}-")]
        assert mine == [f"{n}-{i}" for i in range(5)]
