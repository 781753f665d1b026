"""The PostgreSQL backend checks a connection's health at most once a second."""

from __future__ import annotations

import pytest
from django.db import connections

from netaclaw.db_backends.postgresql import base as backend

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


class _This:
    """This thread's default connection (the wrapper itself, not Django's proxy)."""

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(connections["default"], name)


connection = _This()


@pytest.fixture
def health_checks(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Health checks on (production's setting); every check the backend runs, recorded."""
    wrapper = connections["default"]
    assert isinstance(wrapper, backend.DatabaseWrapper)
    wrapper.ensure_connection()
    monkeypatch.setitem(wrapper.settings_dict, "CONN_HEALTH_CHECKS", True)
    monkeypatch.setattr(wrapper, "health_check_enabled", True)
    checks: list[bool] = []
    real = wrapper.is_usable

    def is_usable() -> bool:
        checks.append(real())
        return checks[-1]

    monkeypatch.setattr(wrapper, "is_usable", is_usable)
    return checks


def _call() -> int:
    """One ORM call as Channels makes it: the check re-armed, then a query."""
    connections["default"].health_check_done = False
    with connection.cursor() as cursor:
        cursor.execute("SELECT 7")
        return cursor.fetchone()[0]


def test_calls_within_the_interval_skip_the_round_trip(health_checks: list[bool]) -> None:
    _call()  # checked now, unless it was connected or checked within the second
    health_checks.clear()
    assert [_call() for _ in range(5)] == [7] * 5
    assert health_checks == []


def test_a_connection_is_checked_again_after_the_interval(
    health_checks: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(backend, "HEALTH_CHECK_INTERVAL", 0.0)
    assert [_call() for _ in range(3)] == [7] * 3
    assert health_checks == [True, True, True]


def test_a_dead_connection_is_replaced_once_checked(
    health_checks: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    dead = connection.connection
    dead.close()  # the server went away underneath
    monkeypatch.setattr(backend, "HEALTH_CHECK_INTERVAL", 0.0)
    assert _call() == 7
    assert health_checks == [False]
    assert connection.connection is not dead


def test_a_chat_turns_statements_are_prepared_on_the_connection() -> None:
    """Server-side binding with a prepare threshold of 2 (settings): from the third append
    on, PostgreSQL runs the insert from its prepared plan."""
    from agents.models import Role
    from agents.services import message_append
    from tests.factories import make_session

    session = make_session()
    for n in range(3):
        message_append(session=session, role=Role.USER, content=f"message {n}")
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [row[0] for row in cursor.fetchall()]
    assert any("INSERT INTO" in sql and "WITH reserved AS" in sql for sql in prepared)
