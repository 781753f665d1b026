"""PostgreSQL runs a chat turn's repeated statements from prepared plans (settings)."""

from __future__ import annotations

import pytest
from django.db import connections

from agents.models import Role
from agents.services import message_append
from tests.factories import make_session

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_a_chat_turns_statements_are_prepared_on_the_connection() -> None:
    """Server-side binding with a prepare threshold of 2: from the third append on,
    PostgreSQL runs the insert from its prepared plan."""
    session = make_session()
    for n in range(3):
        message_append(session=session, role=Role.USER, content=f"message {n}")
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [row[0] for row in cursor.fetchall()]
    assert any(sql.startswith('INSERT INTO "agents_message"') for sql in prepared)
