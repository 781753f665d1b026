"""The index follows every write: inserts (one by one and in bulk), edits, deletes — and,
on SQLite, a table rebuild by a later migration."""

from __future__ import annotations

import pytest
from django.db import connection

from agents.models import Message
from agents.services import message_append, messages_bulk_append, session_delete
from recall import index, search
from tests.factories import make_session
from tests.support.history import apply_compaction

pytestmark = pytest.mark.django_db

sqlite_only = pytest.mark.skipif(
    connection.vendor != "sqlite", reason="the SQLite FTS5 table and its triggers"
)


def _compacted(session, *contents):
    rows = messages_bulk_append(
        session=session, rows=[{"role": "user", "content": c} for c in (*contents, "tail")]
    )
    apply_compaction(session, rows[:-1])
    return rows[:-1]


def _ids(session, query):
    return [h.id for h in search.search(session=session, query=query)]


def test_edits_and_deletes_reach_the_index() -> None:
    session = make_session()
    first, second = _compacted(session, "the pelican sings", "a heron waits")
    assert _ids(session, "pelican") == [first.pk]
    Message.objects.filter(pk=first.pk).update(content="the cormorant dives")
    assert _ids(session, "pelican") == [] and _ids(session, "cormorant") == [first.pk]
    Message.objects.filter(pk=second.pk).delete()
    assert _ids(session, "heron") == []
    session_delete(session=session)
    assert not Message.objects.filter(pk=first.pk).exists()


def test_summaries_and_event_records_are_never_indexed() -> None:
    session = make_session()
    rows = messages_bulk_append(
        session=session,
        rows=[{"role": "user", "content": "flamingo"}, {"role": "user", "content": "x"}],
    )
    applied = apply_compaction(session, rows[:1], summary="## 目标\nflamingo summary " + "z" * 300)
    assert _ids(session, "flamingo") == [rows[0].pk]
    assert _ids(session, "summary") == []
    # even compacted itself (a later compaction merged it), a summary is not an original
    Message.objects.filter(pk=applied.summary_message.pk).update(compacted_at=rows[0].compacted_at)
    assert _ids(session, "summary") == []
    event = message_append(
        session=session, role="system", content="flamingo event", metadata={"systemType": "x"}
    )
    Message.objects.filter(pk=event.pk).update(compacted_at=rows[0].compacted_at)
    assert _ids(session, "event") == [] and _ids(session, "ev") == []  # index and scan


@sqlite_only
@pytest.mark.django_db(transaction=True)  # the schema editor needs no transaction around it
def test_a_table_rebuild_by_a_later_migration_keeps_the_index() -> None:
    session = make_session()
    (kept,) = _compacted(session, "the ibis before the rebuild")
    with connection.schema_editor() as editor:  # what Django does to alter a SQLite table
        editor._remake_table(Message)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM sqlite_master WHERE name LIKE 'recall_fts_%%' "
            "AND type = 'trigger'"
        )
        assert cursor.fetchone()[0] == 0  # the rebuild dropped the triggers
    (written,) = _compacted(session, "the ibis written in between")
    assert index.ensure_sqlite_triggers(connection) is True  # what post_migrate runs
    assert index.ensure_sqlite_triggers(connection) is False
    assert sorted(_ids(session, "ibis")) == sorted([kept.pk, written.pk])
    (after,) = _compacted(session, "the ibis after it")
    assert _ids(session, "ibis")[0] == after.pk


@sqlite_only
def test_a_search_goes_through_the_fts_index() -> None:
    session = make_session()
    _compacted(session, "the kingfisher")
    with connection.cursor() as cursor:
        sql = (
            "EXPLAIN QUERY PLAN SELECT m.id, bm25(recall_fts) FROM recall_fts "
            "JOIN agents_message AS m ON m.id = recall_fts.rowid WHERE recall_fts MATCH %s "
            "AND m.session_id = %s ORDER BY recall_fts.rowid DESC LIMIT 10"
        )
        cursor.execute(sql, ['"kingfisher"', session.pk.hex])
        plan = " | ".join(row[-1] for row in cursor.fetchall())
    assert "VIRTUAL TABLE INDEX" in plan and "SCAN m" not in plan, plan
